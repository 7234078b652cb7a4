/**
 * The dashboard's Attention view (an operator's first page) in a real browser (Debian's Chromium
 * via playwright-core) against a real server on real Postgres: an expired claim and a silent
 * session holding work appear within 2 s of becoming true, sessions show by name, the reassign
 * action works, and the table sorts. And a metagit graph's view: drawn, its nodes' statuses and
 * owner by name, live.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LAST_SEEN_FLUSH_MS } from '../../src/sessions/sessions.liveness.js';
import { addItem, Client, startTestApp, type TestApp } from '../helpers/app.js';
import { launchBrowser, signIn, type TestBrowser } from '../helpers/browser.js';

const LIVE_MS = 2000;
const LEASE_MS = 1500;

let t: TestApp;
let b: TestBrowser;
beforeAll(async () => {
  t = await startTestApp({ todo: { claimLeaseMs: LEASE_MS } });
  b = await launchBrowser();
});
afterAll(async () => {
  await b?.close();
  await t?.close();
});

const adminToken = (c: Client) => (c as unknown as { token: string }).token;

describe('dashboard: attention', () => {
  it('shows an expired claim and a silent holder within 2 s, by name, reopens and reassigns from the rows', async () => {
    const lead = await t.session({ name: 'lead' });
    const helper = await t.session({ name: 'helper', parentId: lead.id, by: lead.client });
    const page = await b.newPage();
    await signIn(page, t.base, adminToken(t.admin));
    // The landing page of an operator is Attention.
    await page.getByRole('heading', { name: 'Attention' }).waitFor();
    await page.getByText('Nothing needs attention.').waitFor();

    const item = await addItem(lead.client, 'Left behind');
    expect((await lead.client.post(`/v1/todos/${item.id}/claim`)).status).toBe(200);
    const deadline = Date.now() + LEASE_MS;
    const row = page.locator(`tr[data-kind="expired-claim"][data-subject="${item.id}"]`);
    await row.waitFor({ timeout: LEASE_MS + LIVE_MS + 500 });
    expect(Date.now() - deadline).toBeLessThan(LIVE_MS + 500);
    expect(await row.locator('td').nth(3).textContent()).toBe('lead');
    expect(await row.locator('td').nth(3).locator('span').getAttribute('title')).toBe(lead.id);

    // A session with a heartbeat interval goes silent (its last call an hour ago) while holding work.
    const made = await t.admin.post('/v1/sessions', { name: 'quiet-one', heartbeatIntervalMs: 5000 });
    const quiet = new Client(t.base, made.body.token);
    const held = await addItem(quiet, 'Held quietly');
    expect((await quiet.post(`/v1/todos/${held.id}/claim`)).status).toBe(200);
    // After the replica's last-seen flush of its calls (every LAST_SEEN_FLUSH_MS), which would undo the silence.
    await new Promise((r) => setTimeout(r, LAST_SEEN_FLUSH_MS + 200));
    await t.sql`update sessions set last_seen_at = now() - interval '1 hour' where id = ${made.body.session.id}`;
    // Its claim stays fresh meanwhile (time is compressed here: the lease is short, the silence long).
    await t.sql`update todos set progress_at = now() where id = ${held.id}`;
    const silent = page.locator(`tr[data-kind="silent-holder"][data-subject="${made.body.session.id}"]`);
    const t0 = Date.now();
    await silent.waitFor({ timeout: LIVE_MS });
    expect(Date.now() - t0).toBeLessThan(LIVE_MS);
    expect(await silent.getByRole('button', { name: 'Stop quiet-one' }).count()).toBe(1);

    // Sorting by session puts "lead" before "quiet-one"; the other way round after a second click.
    const sessionHeader = page.getByRole('button', { name: /^Session/ });
    await sessionHeader.click();
    await expect.poll(() => page.locator('tbody tr').first().getAttribute('data-kind')).toBe('expired-claim');
    await sessionHeader.click();
    await expect.poll(() => page.locator('tbody tr').first().getAttribute('data-kind')).toBe('silent-holder');

    // Reopen the expired claim from its row: the row goes, the item is free.
    await row.getByRole('button', { name: 'Reopen' }).click();
    await row.waitFor({ state: 'detached', timeout: LIVE_MS });
    expect((await t.admin.get(`/v1/todos/${item.id}`)).body.item).toMatchObject({ status: 'todo' });

    // An item reserved for a session that has stopped: reassign it to the helper from its row.
    const gone = await t.session({ name: 'gone', parentId: lead.id, by: lead.client });
    const reserved = await addItem(lead.client, 'For the one who left', { assignee: gone.id });
    expect((await t.admin.post(`/v1/sessions/${gone.id}/stop`)).status).toBe(200);
    const rrow = page.locator(`tr[data-kind="reserved-for-gone"][data-subject="${reserved.id}"]`);
    await rrow.waitFor({ timeout: LIVE_MS });
    await rrow.getByRole('button', { name: 'Reassign…' }).click();
    await rrow.getByLabel('Reassign For the one who left').selectOption({ label: 'helper' });
    await rrow.waitFor({ state: 'detached', timeout: LIVE_MS });
    expect((await t.admin.get(`/v1/todos/${reserved.id}`)).body.item.assignee).toBe(helper.id);
    await page.close();
  });
});

describe('dashboard: a metagit graph', () => {
  it('draws the graph and lists its nodes, and shows a start by its owner’s name within 2 s', async () => {
    const agent = await t.session({ name: 'planner' });
    expect((await agent.client.post('/v1/task-graphs', { graphId: 'ui-meta', title: 'Ship the release', goal: 'Ship it.' })).status).toBe(201);
    const expanded = await agent.client.post('/v1/task-graphs/ui-meta/expand', {
      outline: [{ title: 'Root' }, { title: 'Left', dependsOn: ['root'] }, { title: 'Merge', dependsOn: ['root', 'left'] }],
    });
    expect(expanded.status, JSON.stringify(expanded.body)).toBe(200);
    const page = await b.newPage();
    await signIn(page, t.base, adminToken(t.admin));
    await page.evaluate(() => {
      location.hash = '#/metagit/ui-meta';
    });
    await page.locator('svg.graph-dag').waitFor();
    expect(await page.locator('svg.graph-dag a').count()).toBe(3);
    const root = page.locator('tr[data-node="root"]');
    expect(await root.locator('.badge').textContent()).toBe('ready');
    expect(await page.locator('tr[data-node="merge"] td').nth(2).textContent()).toContain('waiting on left (pending), root (ready)');
    expect((await agent.client.post('/v1/task-graphs/ui-meta/nodes/root/start', {})).status).toBe(200);
    await expect.poll(() => root.locator('.badge').textContent(), { timeout: LIVE_MS }).toBe('running');
    expect(await root.locator('td').nth(3).textContent()).toBe('planner');
    // The live events name the actor too.
    await expect.poll(() => page.locator('ol.events li').first().textContent(), { timeout: LIVE_MS }).toContain('by planner');
    await page.close();
  });
});

describe('dashboard: sorting a scope page', () => {
  it('sorts each group by priority, owner name or list order', async () => {
    const lead = await t.session({ name: 'sorter' });
    const low = await addItem(lead.client, 'Low', { priority: 0 });
    const high = await addItem(lead.client, 'High', { priority: 5 });
    const mid = await addItem(lead.client, 'Mid', { priority: 2 });
    const page = await b.newPage();
    await signIn(page, t.base, adminToken(t.admin));
    await page.evaluate(
      (h) => {
        location.hash = h;
      },
      `#/scope/${encodeURIComponent(low.scope)}`,
    );
    const ready = page.locator('table.items-ready tbody tr');
    await expect.poll(() => ready.count()).toBe(3);
    const order = () => ready.evaluateAll((rows) => rows.map((r) => r.getAttribute('data-id')));
    expect(await order()).toEqual([low.id, high.id, mid.id]);
    await page.getByLabel('Sort by').selectOption('priority');
    await expect.poll(order).toEqual([high.id, mid.id, low.id]);
    await page.getByLabel('Sort by').selectOption('position');
    await expect.poll(order).toEqual([low.id, high.id, mid.id]);
    await page.close();
  });
});
