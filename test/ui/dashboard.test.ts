/**
 * The dashboard in a real browser (Debian's Chromium via playwright-core) against real servers on
 * real Postgres. Live updates must show within 2 s without a reload.
 */
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commit, evidence } from '../graphs/execution.helpers.js';
import { addItem, Client, startTestApp, type TestApp } from '../helpers/app.js';
import { go, launchBrowser, signIn, type Page, type TestBrowser } from '../helpers/browser.js';
import { killServers, spawnServer, waitReady } from '../helpers/server.js';

const LIVE_MS = 2000;

let t: TestApp;
let b: TestBrowser;
beforeAll(async () => {
  t = await startTestApp();
  b = await launchBrowser();
});
afterAll(async () => {
  await b?.close();
  await killServers();
  await t?.close();
});

const adminToken = (c: Client) => (c as unknown as { token: string }).token;
const scopeHash = (scope: string) => `#/scope/${encodeURIComponent(scope)}`;

describe('dashboard: sign-in', () => {
  it('signs in with a token kept in session storage only, and refuses a bad token with a clear message', async () => {
    const page = await b.newPage();
    await page.goto(`${t.base}/ui/`);
    await page.getByLabel('Token').fill('not-a-real-token-at-all');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/Sign-in failed/);
    expect(await page.evaluate(() => sessionStorage.getItem('coord.token'))).toBeNull();

    await signIn(page, t.base, adminToken(t.admin));
    expect(await page.locator('header .who').textContent()).toContain('operator');
    expect(await page.evaluate(() => sessionStorage.getItem('coord.token'))).toBe(adminToken(t.admin));
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
    expect(page.url()).not.toContain(adminToken(t.admin));
    // A reload keeps the tab signed in; signing out forgets the token.
    await page.reload();
    await page.locator('header nav').waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Token').waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('coord.token'))).toBeNull();
    await page.close();
  });
});

describe('dashboard: a scope, live', () => {
  it('shows an item added through the API and another session’s claim within 2 s, without a reload', async () => {
    const root = await t.session({ name: 'lead' });
    const worker = await t.session({ name: 'worker', parentId: root.id, by: root.client });
    const first = await addItem(root.client, 'Existing item');
    const scope = first.scope as string;
    const page = await b.newPage();
    await signIn(page, t.base, root.token);
    await go(page, scopeHash(scope));
    await page.locator(`tr[data-id="${first.id}"]`).waitFor();
    await expect.poll(() => page.locator('[role=status]').getAttribute('data-state')).toBe('live');
    let reloads = 0;
    page.on('load', () => reloads++);

    const added = await addItem(root.client, 'Added through the API', { tags: ['backend'] });
    await page.locator(`tr[data-id="${added.id}"]`).waitFor({ timeout: LIVE_MS });
    expect(await page.locator(`tr[data-id="${added.id}"] td.col-title`).textContent()).toContain('Added through the API');

    expect((await worker.client.post(`/v1/todos/${added.id}/claim`)).status).toBe(200);
    // The owner by name, the id on hover.
    await expect.poll(() => page.locator(`tr[data-id="${added.id}"] td.col-owner`).textContent(), { timeout: LIVE_MS }).toBe('worker');
    expect(await page.locator(`tr[data-id="${added.id}"] td.col-owner span`).getAttribute('title')).toBe(worker.id);
    await expect.poll(() => page.locator(`tr[data-id="${added.id}"] td.col-status`).textContent(), { timeout: LIVE_MS }).toBe('in-progress');
    expect(reloads).toBe(0);
    // The root holds override authority: it may reopen and block the worker's claim, and assign.
    const row = page.locator(`tr[data-id="${added.id}"]`);
    expect(await row.getByRole('button', { name: /Reopen/ }).count()).toBe(1);
    expect(await row.getByRole('button', { name: /Block/ }).count()).toBe(1);
    await row.getByRole('button', { name: /Block/ }).click();
    await row.getByLabel(/Block note/).fill('waiting on review');
    await row.getByRole('button', { name: 'Block', exact: true }).click();
    await expect.poll(() => row.locator('td.col-status').textContent(), { timeout: LIVE_MS }).toBe('blocked');
    expect((await root.client.get(`/v1/todos/${added.id}`)).body.item).toMatchObject({ status: 'blocked', note: 'waiting on review' });
    await page.close();
  });

  it('shows a worker none of the override actions on another’s item', async () => {
    const root = await t.session({ name: 'lead2' });
    const worker = await t.session({ name: 'worker2', parentId: root.id, by: root.client });
    const item = await addItem(root.client, 'Root’s item');
    expect((await root.client.post(`/v1/todos/${item.id}/claim`)).status).toBe(200);
    const page = await b.newPage();
    await signIn(page, t.base, worker.token);
    await go(page, scopeHash(item.scope));
    const row = page.locator(`tr[data-id="${item.id}"]`);
    await row.waitFor();
    expect(await row.locator('td.col-actions button').count()).toBe(0);
    // An item waiting on a dependency names it by title under WHY BLOCKED, and offers no reopen.
    const waiting = await addItem(root.client, 'Waits for the root', { dependsOn: [item.id] });
    const wrow = page.locator(`tr[data-id="${waiting.id}"]`);
    await wrow.waitFor({ timeout: LIVE_MS });
    expect(await wrow.locator('td.col-why').textContent()).toBe('waiting on Root’s item');
    expect(await wrow.getByRole('button', { name: /Reopen/ }).count()).toBe(0);
    // The scopes card tells the waiting item from an owner's block, as the scope page's groups do.
    await go(page, '#/');
    const card = page.locator(`li.card[data-scope="${item.scope}"] .counts`);
    await expect.poll(() => card.textContent()).toMatch(/^0 ready · 1 waiting on dependencies · 1 in progress · 0 blocked by their owner · 0 done/);
    await page.close();
  });
});

/**
 * Headless Chromium reports every page `visible` and `page.bringToFront()` changes nothing (checked
 * on Chromium 156), so a background tab is simulated: `document.visibilityState` is overridden in
 * the page and a `visibilitychange` dispatched, which is what the dashboard listens to.
 */
async function setHidden(page: Page, hidden: boolean): Promise<void> {
  await page.evaluate((h) => {
    Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => (h ? 'hidden' : 'visible') });
    document.dispatchEvent(new Event('visibilitychange'));
  }, hidden);
}

describe('dashboard: many tabs', () => {
  it('a hidden tab closes its stream, so a 7th tab of one browser loads and stays live; a tab shown again catches up', async () => {
    const root = await t.session({ name: 'tabs' });
    const first = await addItem(root.client, 'Seen by seven tabs');
    const pages: Page[] = [];
    // A browser of its own: the six-connection limit is per browser profile, so connections the
    // file's other tests left in the shared one must not count here, and its seven pages must not
    // count against theirs if it fails.
    const own = await launchBrowser();
    try {
      await sevenTabs(own, root, first, pages);
    } finally {
      for (const p of pages) await p.close().catch(() => {});
      await own.close();
    }
  });
});

/** The many-tabs test's body, in its own browser `b`; every page it opens goes into `pages`. */
async function sevenTabs(b: TestBrowser, root: { token: string; client: Client }, first: { id: string; scope: string }, pages: Page[]): Promise<void> {
  // Six tabs, each live on the scope, then sent to the background (as when another tab is picked).
  for (let i = 0; i < 6; i++) {
    const p = await b.newPage();
    pages.push(p);
    await signIn(p, t.base, root.token);
    await go(p, scopeHash(first.scope));
    await p.locator(`tr[data-id="${first.id}"]`).waitFor();
    await expect.poll(() => p.locator('[role=status]').getAttribute('data-state')).toBe('live');
    await setHidden(p, true);
    await expect.poll(() => p.locator('[role=status]').getAttribute('data-state')).toBe('paused');
  }
  // Before the fix the six streams held every connection the browser allows one server: this
  // page could not even load.
  const front = await b.newPage();
  pages.push(front);
  await signIn(front, t.base, root.token);
  await go(front, scopeHash(first.scope));
  await front.bringToFront();
  await front.locator(`tr[data-id="${first.id}"]`).waitFor();
  await expect.poll(() => front.locator('[role=status]').getAttribute('data-state')).toBe('live');
  const added = await addItem(root.client, 'Added while six tabs are open');
  await front.locator(`tr[data-id="${added.id}"]`).waitFor({ timeout: LIVE_MS });
  // A background tab shown again reopens its stream after the last event it had: the item and
  // the event it missed while hidden both appear.
  const back = pages[0];
  await setHidden(back, false);
  await back.locator(`tr[data-id="${added.id}"]`).waitFor({ timeout: LIVE_MS });
  await back.locator('ol.events li', { hasText: added.id }).waitFor({ timeout: LIVE_MS });
  await expect.poll(() => back.locator('[role=status]').getAttribute('data-state')).toBe('live');
}

describe('dashboard: a re-read pending', () => {
  it('does not say Live while a snapshot re-read has been pending for seconds', async () => {
    const root = await t.session({ name: 'slow-read' });
    const first = await addItem(root.client, 'Before the slow read');
    const page = await b.newPage();
    await signIn(page, t.base, root.token);
    await go(page, scopeHash(first.scope));
    await page.locator(`tr[data-id="${first.id}"]`).waitFor();
    await expect.poll(() => page.locator('[role=status]').getAttribute('data-state')).toBe('live');
    // Hold the item list reads back (as a browser with no free connection would).
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    await page.route(/\/v1\/todos\?/, async (route) => {
      await held;
      await route.continue();
    });
    const added = await addItem(root.client, 'Behind a held read');
    await expect.poll(() => page.locator('[role=status]').getAttribute('data-state'), { timeout: 10_000 }).toBe('pending');
    expect(await page.locator('[role=status]').textContent()).toBe('Refresh pending — what is shown may be out of date');
    release();
    await page.locator(`tr[data-id="${added.id}"]`).waitFor({ timeout: 10_000 });
    await expect.poll(() => page.locator('[role=status]').getAttribute('data-state')).toBe('live');
    await page.unroute(/\/v1\/todos\?/);
    await page.close();
  });
});

describe('dashboard: an item’s history', () => {
  it('reads only the events about the item, past more of its scope than one log page holds, and then only new ones', async () => {
    const root = await t.session({ name: 'history' });
    const item = await addItem(root.client, 'The first item');
    // 1,100 other events after the item's first (the UI's log page is 1,000).
    const bulk = await root.client.post('/v1/todos/bulk', { items: Array.from({ length: 1100 }, (_, i) => ({ title: `filler ${i}` })) });
    expect(bulk.status, JSON.stringify(bulk.body).slice(0, 300)).toBe(201);
    expect((await root.client.post(`/v1/todos/${item.id}/claim`)).status).toBe(200);
    const page = await b.newPage();
    const logs: URL[] = [];
    page.on('request', (r) => {
      if (r.url().includes('/v1/events/log')) logs.push(new URL(r.url()));
    });
    await signIn(page, t.base, root.token);
    await go(page, `#/item/${item.id}`);
    const claimed = page.locator('ol.events li', { hasText: 'claimed' });
    await claimed.waitFor();
    expect(await page.locator('ol.events li').evaluateAll((els) => els.map((e) => e.querySelector('.ev')?.textContent))).toEqual(['claimed', 'added']);
    expect(logs.map((u) => u.searchParams.get('subjectId'))).toEqual([item.id]);
    // After the next event the page reads on from the last event it has, not from the start.
    const seq = await claimed.getAttribute('data-seq');
    expect((await root.client.post(`/v1/todos/${item.id}/done`, {})).status).toBe(200);
    await page.locator('ol.events li', { hasText: 'done' }).waitFor({ timeout: LIVE_MS });
    await expect.poll(() => logs.length).toBeGreaterThan(1);
    expect(logs[1].searchParams.get('after')).toBe(seq);
    expect(logs[1].searchParams.get('subjectId')).toBe(item.id);
    await page.close();
  });
});

describe('dashboard: long text', () => {
  it('wraps or cuts a 444-character title and a 60-character tag: nothing is wider than a 1366×768 screen', async () => {
    const long = 'x'.repeat(444);
    const root = await t.session({ name: 'long-text' });
    const item = await addItem(root.client, long, { tags: ['t'.repeat(60)] });
    await addItem(root.client, 'Waits on the long one', { dependsOn: [item.id] });
    for (const id of ['agent-long']) await t.admin.post('/v1/agents', { id });
    const graph = {
      schemaVersion: 1,
      parentTask: { id: 'task-ui-long', title: `Graph ${'g'.repeat(300)}`, planner: 'agent-long', reviewer: 'agent-long' },
      maxConcurrency: 1,
      subtasks: [{ id: 'only', title: 's'.repeat(400), implementer: 'agent-long', spec: 'x', dependsOn: [] }],
    };
    const created = await t.admin.post('/v1/graphs', { graph });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const page = await b.newPage();
    await page.setViewportSize({ width: 1366, height: 768 });
    const fits = () => page.evaluate(() => document.documentElement.scrollWidth <= innerWidth);
    await signIn(page, t.base, root.token);
    await go(page, scopeHash(item.scope));
    const row = page.locator(`tr[data-id="${item.id}"]`);
    await row.waitFor();
    expect(await fits()).toBe(true);
    // Cut text keeps the whole in a title attribute.
    expect(await row.locator('td.col-title a').getAttribute('title')).toBe(long);
    expect(await row.locator('.tag').getAttribute('title')).toBe('t'.repeat(60));
    await go(page, `#/item/${item.id}`);
    await page.locator('dl.facts').waitFor();
    expect(await fits()).toBe(true);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(page, t.base, adminToken(t.admin));
    await go(page, '#/graph/task-ui-long');
    await page.locator('tr[data-subtask="only"]').waitFor();
    expect(await fits()).toBe(true);
    await go(page, '#/graphs');
    await page.locator('a[href="#/graph/task-ui-long"]').waitFor();
    expect(await fits()).toBe(true);
    await page.close();
  });
});

describe('dashboard: keyboard', () => {
  it('focuses the token field on load, an opened form’s field, and gives focus back to its button on Escape', async () => {
    const root = await t.session({ name: 'keyboard' });
    const item = await addItem(root.client, 'Claimed for the keyboard');
    expect((await root.client.post(`/v1/todos/${item.id}/claim`)).status).toBe(200);
    const page = await b.newPage();
    await page.goto(`${t.base}/ui/`);
    await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe('token');
    await page.keyboard.type(root.token);
    await page.keyboard.press('Enter');
    await page.locator('header nav').waitFor();
    await go(page, scopeHash(item.scope));
    const row = page.locator(`tr[data-id="${item.id}"]`);
    const open = row.getByRole('button', { name: /^Block/ });
    await open.focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('Block note for Claimed for the keyboard');
    await page.keyboard.press('Escape');
    await expect.poll(() => row.locator('form').count()).toBe(0);
    await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('Block Claimed for the keyboard');
    // Stop…'s confirmation takes focus on Cancel, not on the stop itself: Enter twice stops nothing.
    const child = await t.session({ name: 'keyboard-child', parentId: root.id, by: root.client });
    await go(page, '#/sessions');
    const stop = page.locator(`tr[data-id="${child.id}"]`).getByRole('button', { name: 'Stop session keyboard-child' });
    await stop.focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => page.evaluate(() => document.activeElement?.textContent?.trim())).toBe('Cancel');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('Stop session keyboard-child');
    expect((await root.client.get(`/v1/sessions/${child.id}`)).body.session.status).toBe('active');
    await page.close();
  });
});

describe('dashboard: navigating at once', () => {
  it('lands on a view asked for between the first render and the router’s subscription to hashchange', async () => {
    const page = await b.newPage();
    // Forces the race the router had: when it subscribes to hashchange after its first render,
    // the hash changes and that change's event is dispatched before the listener is added (as
    // when a link is followed right after sign-in, before the effect has run). It fails without the
    // router reading the hash once subscribed (ui/src/router.ts).
    await page.addInitScript(() => {
      const add = window.addEventListener.bind(window);
      let raced = false;
      window.addEventListener = ((type: string, fn: EventListener, opts?: boolean | AddEventListenerOptions) => {
        if (type !== 'hashchange' || raced || !sessionStorage.getItem('coord.token')) return add(type, fn, opts);
        raced = true;
        add('hashchange', () => add(type, fn, opts), { once: true });
        location.hash = '#/sessions';
      }) as typeof window.addEventListener;
    });
    await signIn(page, t.base, adminToken(t.admin));
    await page.getByRole('heading', { name: 'Sessions' }).waitFor({ timeout: 10_000 });
    await page.close();
  });
});

describe('dashboard: a malformed link', () => {
  it('says the link is not valid and offers navigation instead of a blank page', async () => {
    const page = await b.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await signIn(page, t.base, adminToken(t.admin));
    await go(page, '#/scope/%E0%A4%A');
    await page.getByRole('heading', { name: 'Not a valid link' }).waitFor();
    await page.getByRole('main').getByRole('link', { name: 'scopes' }).click();
    await page.locator('ul.cards, p.muted').first().waitFor();
    expect(page.url()).toMatch(/#\/scopes$/);
    // A view that names an object but has none, and a view that does not exist, are broken links too.
    for (const hash of ['#/scope/', '#/nonsense']) {
      await go(page, hash);
      await page.getByRole('heading', { name: 'Not a valid link' }).waitFor();
    }
    expect(errors).toEqual([]);
    await page.close();
  });
});

describe('dashboard: sessions', () => {
  it('says a session just seen was seen "just now" or some seconds ago, never "in 0s"', async () => {
    const s = await t.session({ name: 'just-seen' });
    const page = await b.newPage();
    await signIn(page, t.base, s.token);
    await go(page, '#/sessions');
    const seen = page.locator(`tr[data-id="${s.id}"] td:nth-child(4)`);
    await seen.waitFor();
    expect(await seen.textContent()).toMatch(/^(just now|\d+s ago)$/);
    await page.close();
  });
});

describe('dashboard: a dead token', () => {
  it('signs out with a message when the session it is signed in as is stopped', async () => {
    const s = await t.session({ name: 'soon-stopped' });
    const item = await addItem(s.client, 'Held when stopped');
    expect((await s.client.post(`/v1/todos/${item.id}/claim`)).status).toBe(200);
    const page = await b.newPage();
    await signIn(page, t.base, s.token);
    await go(page, scopeHash(item.scope));
    await page.locator(`tr[data-id="${item.id}"]`).waitFor();
    await expect.poll(() => page.locator('[role=status]').getAttribute('data-state')).toBe('live');
    expect((await t.admin.post(`/v1/sessions/${s.id}/stop`, {})).status).toBe(200);
    // The stop reopens the claim (an event), whose re-read is refused: 401 signs the tab out.
    await page.getByLabel('Token').waitFor({ timeout: 20_000 });
    expect(await page.getByRole('alert').textContent()).toMatch(/no longer valid/);
    expect(await page.evaluate(() => sessionStorage.getItem('coord.token'))).toBeNull();
    await page.close();
  });
});

describe('dashboard: a task graph with a write-intent conflict', () => {
  it('draws the graph and names the deferred subtask and the conflicting pattern pair', async () => {
    for (const id of ['codex', 'agent-backend', 'agent-frontend', 'agent-docs']) await t.admin.post('/v1/agents', { id });
    const parentTask = { id: 'task-ui-conflict', title: 'A slice', planner: 'codex', reviewer: 'codex' };
    const graph = {
      schemaVersion: 1,
      parentTask,
      maxConcurrency: 2,
      subtasks: [
        { id: 'backend', title: 'Backend', implementer: 'agent-backend', spec: 'API', dependsOn: [] },
        { id: 'frontend', title: 'Frontend', implementer: 'agent-frontend', spec: 'UI', dependsOn: [] },
        { id: 'docs', title: 'Docs', implementer: 'agent-docs', spec: 'Docs', dependsOn: ['backend'] },
      ],
    };
    const intentMap = {
      schemaVersion: 1,
      parentTaskId: 'task-ui-conflict',
      scopePolicy: 'warn',
      subtasks: [
        { id: 'backend', writeIntent: ['src/**'] },
        { id: 'frontend', writeIntent: ['src/web/**'] },
        { id: 'docs', writeIntent: ['docs/**'] },
      ],
    };
    const created = await t.admin.post('/v1/graphs', { graph, intentMap });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const page = await b.newPage();
    await signIn(page, t.base, adminToken(t.admin));
    await go(page, '#/graph/task-ui-conflict');
    const conflicts = page.locator('.graph-conflicts li');
    await conflicts.first().waitFor();
    expect(await page.locator('.graph-title').textContent()).toBe('A slice');
    const text = await conflicts.first().textContent();
    expect(text).toContain('src/**');
    expect(text).toContain('src/web/**');
    expect(text).toMatch(/frontend\s*deferred/);
    // The drawing: one node per subtask, the wave and the deferral marked, each named for screen readers.
    expect(await page.locator('svg.graph-dag a').count()).toBe(3);
    expect(await page.getByRole('link', { name: /backend, READY, in the planned wave/ }).count()).toBe(1);
    expect(await page.getByRole('link', { name: /frontend, READY, deferred: write-intent conflict/ }).count()).toBe(1);
    expect(await page.locator('tr[data-subtask="frontend"]').textContent()).toContain('WRITE_INTENT_CONFLICT');

    // Run the wave and complete backend: the graph list counts it as succeeded.
    const base = commit();
    const run = await t.admin.post('/v1/graphs/task-ui-conflict/run', { baseCommit: base, sessionWaitMs: 1000 });
    expect(run.status, JSON.stringify(run.body)).toBe(200);
    const d = run.body.dispatches.find((x: { subtaskId: string }) => x.subtaskId === 'backend');
    const done = await t.admin.post('/v1/graphs/task-ui-conflict/subtasks/backend/complete', { attempt: d.attempt, ...evidence(base, ['src/api.ts']) });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    await go(page, '#/graphs');
    const listed = page.locator('tr', { has: page.locator('a[href="#/graph/task-ui-conflict"]') });
    await expect.poll(() => listed.locator('.progress .num').textContent(), { timeout: 10_000 }).toBe('1/3');

    // The graph's items change only through the graph routes: an operator sees no todo action.
    await go(page, scopeHash('graph:task-ui-conflict'));
    await page.locator('tr[data-id]').first().waitFor();
    expect(await page.locator('tr[data-id]').count()).toBe(3);
    expect(await page.locator('td.col-status', { hasText: 'done' }).count()).toBe(1);
    expect(await page.locator('td.col-actions button').count()).toBe(0);
    await page.close();
  });
});

describe('dashboard: isolation', () => {
  it('shows a session of another subtree none of this scope', async () => {
    const a = await t.session({ name: 'team-a' });
    const other = await t.session({ name: 'team-b' });
    const secret = await addItem(a.client, 'Secret plan');
    const page = await b.newPage();
    await signIn(page, t.base, other.token);
    await page.locator('li.card').first().waitFor();
    const listed = await page.locator('li.card').evaluateAll((els) => els.map((e) => e.getAttribute('data-scope')));
    expect(listed).toEqual([`session:${other.id}`]);
    await go(page, scopeHash(secret.scope));
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toMatch(/not found/);
    expect(await page.locator('tr[data-id]').count()).toBe(0);
    // Refused for good, so the header does not pretend to reconnect.
    await expect.poll(() => page.locator('[role=status]').getAttribute('data-state')).toBe('failed');
    expect(await page.content()).not.toContain('Secret plan');
    await go(page, `#/item/${secret.id}`);
    await page.getByRole('alert').waitFor();
    expect(await page.content()).not.toContain('Secret plan');
    await page.close();
  });
});

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

describe('dashboard: a server restart', () => {
  it('says it is disconnected, reconnects, and shows the events it missed', async () => {
    const port = await freePort();
    const token = 'dashboard-restart-admin-token-0123';
    const env = { DATABASE_URL: t.dbUrl, COORD_ADMIN_TOKEN: token, COORD_SWEEPS: 'off' };
    let server = spawnServer(port, env);
    expect(await waitReady(server), server.output()).toBe(true);
    const base = `http://127.0.0.1:${port}`;
    const admin = new Client(base, token);
    const s = await admin.post('/v1/sessions', { name: 'restart-agent' });
    const agent = new Client(base, s.body.token);
    const before = await addItem(agent, 'Before the restart');
    const page = await b.newPage();
    await signIn(page, base, token);
    await go(page, scopeHash(before.scope));
    await page.locator(`tr[data-id="${before.id}"]`).waitFor();
    await expect.poll(() => page.locator('[role=status]').getAttribute('data-state')).toBe('live');

    server.child.kill('SIGKILL');
    await server.exited;
    await expect.poll(() => page.locator('[role=status]').getAttribute('data-state'), { timeout: 10_000 }).toBe('reconnecting');
    expect(await page.locator('[role=status]').textContent()).toMatch(/Disconnected/);
    // While the page is disconnected, another replica on the same database takes writes.
    const other = new Client(t.base, s.body.token);
    const missed = [await addItem(other, 'Missed one'), await addItem(other, 'Missed two')];

    server = spawnServer(port, env);
    expect(await waitReady(server), server.output()).toBe(true);
    await expect.poll(() => page.locator('[role=status]').getAttribute('data-state'), { timeout: 15_000 }).toBe('live');
    for (const m of missed) await page.locator(`tr[data-id="${m.id}"]`).waitFor({ timeout: LIVE_MS });
    // The missed events themselves, resumed with Last-Event-ID, are in the live event list.
    const log = (await agent.get(`/v1/events/log?topic=todo:${before.scope}&after=0`)).body.events.filter((e: any) => missed.some((m) => m.id === e.data.id));
    expect(log.length).toBe(2);
    for (const e of log) await page.locator(`ol.events li[data-seq="${e.seq}"]`).waitFor({ timeout: LIVE_MS });
    await page.close();
  });
});
