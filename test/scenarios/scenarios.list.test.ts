/**
 * `GET /v1/scenarios`: the scenarios the caller may read, in name order, keyset-paginated,
 * with `GET /v1/scenarios/{name}`'s visibility rule and a summary per scenario.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type Client, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  // A small list_limit, so its cap is visible with a handful of scenarios.
  t = await startTestApp({ todo: { listLimit: 5 } });
});
afterAll(async () => t?.close());

async function start(name: string, members: Record<string, unknown>[], by: Client = t.admin) {
  const r = await by.post('/v1/scenarios', { name, members });
  if (r.status !== 201) throw new Error(`scenario create failed: ${r.status} ${JSON.stringify(r.body)}`);
  const clients: Record<string, Client> = {};
  for (const [m, token] of Object.entries<string>(r.body.tokens)) clients[m] = t.admin.as(token);
  return { scenario: r.body.scenario, clients, orch: r.body.orchestratorToken ? t.admin.as(r.body.orchestratorToken) : undefined };
}

/** Every page with `limit`, following nextCursor; returns the pages' names. */
async function pages(c: Client, limit?: number): Promise<string[][]> {
  const out: string[][] = [];
  let cursor: string | null = null;
  do {
    const q = new URLSearchParams();
    if (limit) q.set('limit', String(limit));
    if (cursor) q.set('cursor', cursor);
    const r: any = await c.get(`/v1/scenarios?${q}`);
    expect(r.status).toBe(200);
    out.push(r.body.scenarios.map((s: any) => s.name));
    cursor = r.body.nextCursor;
  } while (cursor);
  return out;
}

describe('GET /v1/scenarios', () => {
  it('should page a user through every scenario in name order, with no duplicates or gaps', async () => {
    for (let i = 0; i < 13; i++) await start(`page-${String((i * 7) % 13).padStart(2, '0')}`, [{ name: 'a', task: 'x' }]);
    const expected = (await t.sql<{ name: string }[]>`select name from scenarios order by name`).map((r) => r.name);
    expect(expected.length).toBeGreaterThanOrEqual(13);
    const by3 = await pages(t.admin, 3);
    expect(by3.slice(0, -1).every((p) => p.length === 3)).toBe(true);
    expect(by3.flat()).toEqual(expected);
    expect(new Set(by3.flat()).size).toBe(expected.length);
    // No limit, or one over list_limit: pages of list_limit (5).
    const capped = await pages(t.admin, 100);
    expect(capped[0]).toHaveLength(5);
    expect(capped.flat()).toEqual(expected);
    expect((await pages(t.admin)).flat()).toEqual(expected);
  });

  it('should page past a scenario created between two pages without losing or repeating one', async () => {
    const first: any = await t.admin.get('/v1/scenarios?limit=2');
    await start('aaa-late', [{ name: 'a', task: 'x' }]); // sorts before the cursor: not on later pages
    await start('zzz-late', [{ name: 'a', task: 'x' }]); // after it: on a later page
    const rest: string[] = [];
    let cursor = first.body.nextCursor;
    while (cursor) {
      const r: any = await t.admin.get(`/v1/scenarios?limit=2&cursor=${cursor}`);
      rest.push(...r.body.scenarios.map((s: any) => s.name));
      cursor = r.body.nextCursor;
    }
    const all = [...first.body.scenarios.map((s: any) => s.name), ...rest];
    const expected = (await t.sql<{ name: string }[]>`select name from scenarios where name <> 'aaa-late' order by name`).map((r) => r.name);
    expect(all).toEqual(expected);
  });

  it('should show a session only the scenarios it orchestrates or is a member of (GET /v1/scenarios/{name}’s rule)', async () => {
    const one = await start('vis-one', [
      { name: 'api', task: 'Build' },
      { name: 'ui', task: 'UI' },
    ]);
    const two = await start('vis-two', [{ name: 'docs', task: 'Write' }]);
    const shared = await t.session();
    const three = await start('vis-three', [{ name: 'ext', session: shared.id }]);
    // A session that starts a scenario orchestrates it.
    const lead = await t.session();
    await start('vis-four', [{ name: 'w', task: 'Work' }], lead.client);
    const outsider = await t.session();

    const names = async (c: Client) => (await pages(c)).flat();
    expect(await names(one.clients.api)).toEqual(['vis-one']);
    expect(await names(two.clients.docs)).toEqual(['vis-two']);
    expect(await names(one.orch!)).toEqual(['vis-one']); // an orchestrator system session sees its own only
    expect(await names(shared.client)).toEqual(['vis-three']);
    expect(await names(lead.client)).toEqual(['vis-four']);
    expect(await names(outsider.client)).toEqual([]);
    // Every scenario listed is one the caller may read, and the others answer 404.
    expect((await one.clients.api.get('/v1/scenarios/vis-two')).status).toBe(404);
    expect((await shared.client.get(`/v1/scenarios/${three.scenario.id}`)).status).toBe(200);
    const all = await names(t.admin);
    expect(all).toEqual(expect.arrayContaining(['vis-one', 'vis-two', 'vis-three', 'vis-four']));
  });

  it('should summarise each scenario: members, done/total and derived completion, recorded as a read records it', async () => {
    const s = await start('sum-one', [{ name: 'api', task: 'Build' }, { name: 'ship', task: 'Ship', dependsOn: ['api'] }, { name: 'watch' }]);
    const get = async () => (await s.clients.api.get('/v1/scenarios')).body.scenarios[0];
    expect(await get()).toEqual({
      id: s.scenario.id,
      name: 'sum-one',
      scope: `scenario:${s.scenario.id}`,
      orchestratorId: s.scenario.orchestratorId,
      createdBy: s.scenario.createdBy,
      createdAt: s.scenario.createdAt,
      revision: s.scenario.revision,
      members: 3,
      done: 0,
      total: 2,
      complete: false,
    });
    for (const m of ['api', 'ship']) {
      const c = s.clients[m];
      const next = await c.post('/v1/todos/next', { scope: 'scenario:sum-one' });
      expect((await c.post(`/v1/todos/${next.body.item.id}/done`)).status).toBe(200);
    }
    const after = await get();
    expect(after).toMatchObject({ done: 2, total: 2, complete: true, revision: s.scenario.revision + 1 });
    expect(after.completedAt).toEqual(expect.any(String));
    const status = (await s.clients.api.get('/v1/scenarios/sum-one/status')).body;
    expect(status).toMatchObject({ complete: true, done: 2, total: 2, scenario: { completedAt: after.completedAt } });
    const events = (await s.clients.api.get(`/v1/events/log?topic=todo:scenario:${s.scenario.id}&after=0&limit=1000`)).body.events;
    expect(events.filter((e: any) => e.event === 'scenario-completed')).toHaveLength(1);
  });

  it('should refuse a cursor it did not issue and a bad limit', async () => {
    expect((await t.admin.get('/v1/scenarios?cursor=nonsense')).body.code).toBe('invalid_cursor');
    const forged = Buffer.from(JSON.stringify(['not a name!'])).toString('base64url');
    expect((await t.admin.get(`/v1/scenarios?cursor=${forged}`)).body.code).toBe('invalid_cursor');
    expect((await t.admin.get('/v1/scenarios?limit=0')).body.code).toBe('validation_failed');
  });
});
