/**
 * The per-scope counts (`scope_counts`, kept by the `coord_scope_counts` trigger, read by
 * `scopeCountsSql`, folded by the sweep; src/scopes/scopes.counts.ts) always equal a count of the
 * items themselves: after every kind of change, under racing clients with folds running
 * meanwhile, and after a fold. And reading them costs the same at 20,000 items as at 10, which is
 * the reason they exist (GET /v1/scopes counted every item of every scope it listed).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { foldScopeCounts, scopeCountsSql } from '../../src/scopes/scopes.counts.js';
import { runSweep } from '../../src/sweeps/sweeps.js';
import { addItem, startTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ todo: { retentionMs: 1000 } });
});
afterAll(async () => t?.close());

/** Every scope whose kept counts differ from a count of its items: `[]` when they agree. */
async function drift() {
  return t.sql`
    with actual as (
      select team_id, scope, count(*)::int as total, (count(*) filter (where status = 'todo'))::int as todo,
             (count(*) filter (where status = 'in-progress'))::int as in_progress,
             (count(*) filter (where status = 'blocked'))::int as blocked, (count(*) filter (where status = 'done'))::int as done,
             (count(*) filter (where status = 'todo' and unfinished_deps > 0))::int as waiting
        from todos group by team_id, scope),
    kept as (
      select team_id, scope, sum(total)::int as total, sum(todo)::int as todo, sum(in_progress)::int as in_progress,
             sum(blocked)::int as blocked, sum(done)::int as done, sum(waiting)::int as waiting
        from scope_counts group by team_id, scope)
    select coalesce(a.scope, k.scope) as scope, to_jsonb(a) as actual, to_jsonb(k) as kept
      from actual a full join kept k on k.team_id = a.team_id and k.scope = a.scope
     where (coalesce(a.total, 0), coalesce(a.todo, 0), coalesce(a.in_progress, 0), coalesce(a.blocked, 0), coalesce(a.done, 0), coalesce(a.waiting, 0))
        <> (coalesce(k.total, 0), coalesce(k.todo, 0), coalesce(k.in_progress, 0), coalesce(k.blocked, 0), coalesce(k.done, 0), coalesce(k.waiting, 0))`;
}

describe('per-scope counts', () => {
  it('equal a count of the items after adds, sub-items, claims, blocks, reopens, edits, removals and retention, folded or not', async () => {
    const a = await t.session({ name: 'counter' });
    const ok = (r: { status: number; body: unknown }, status = 200) => expect(r.status, JSON.stringify(r.body)).toBe(status);
    const x = await addItem(a.client, 'x');
    const y = await addItem(a.client, 'y', { dependsOn: [x.id] });
    await addItem(a.client, 'x.1', { parentId: x.id });
    const bulk = await a.client.post('/v1/todos/bulk', { items: Array.from({ length: 5 }, (_, i) => ({ title: `bulk ${i}` })) });
    ok(bulk, 201);
    ok(await a.client.post(`/v1/todos/${x.id}/claim`));
    ok(await a.client.post(`/v1/todos/${x.id}/block`, { note: 'waiting' }));
    ok(await a.client.post(`/v1/todos/${x.id}/reopen`));
    ok(await a.client.patch(`/v1/todos/${y.id}`, { title: 'y, renamed' }));
    const first = bulk.body.items[0].id;
    ok(await a.client.post(`/v1/todos/${first}/claim`));
    const done = await a.client.post(`/v1/todos/${first}/done`, { next: {} });
    ok(done);
    expect(done.body.next.claimed).toBe(true);
    expect(await drift()).toEqual([]);
    ok(await a.client.del(`/v1/todos/${y.id}`));
    expect(await drift()).toEqual([]);
    const counted = async () => {
      const rows = await t.sql<
        { status: string; n: number }[]
      >`select status, count(*)::int as n from todos where scope = ${`session:${a.id}`} group by status`;
      const by = Object.fromEntries(rows.map((r) => [r.status, r.n]));
      const total = rows.reduce((sum, r) => sum + r.n, 0);
      const [{ waiting }] = await t.sql<{ waiting: number }[]>`
        select count(*)::int as waiting from todos where scope = ${`session:${a.id}`} and status = 'todo' and unfinished_deps > 0`;
      return { total, todo: by.todo ?? 0, inProgress: by['in-progress'] ?? 0, blocked: by.blocked ?? 0, done: by.done ?? 0, waiting };
    };
    const scopes = await a.client.get('/v1/scopes');
    ok(scopes);
    expect(scopes.body.scopes[0]).toMatchObject({ ...(await counted()), total: 7 });

    // Retention deletes the done item (nothing depends on it) once it is old enough; the sweep also folds.
    await new Promise((r) => setTimeout(r, 1100));
    await runSweep(t.sql, t.config);
    expect(await drift()).toEqual([]);
    const [{ rows }] = await t.sql<{ rows: number }[]>`select count(*)::int as rows from scope_counts where scope = ${`session:${a.id}`}`;
    expect(rows).toBe(1);
    expect((await a.client.get('/v1/scopes')).body.scopes[0]).toMatchObject({ ...(await counted()), total: 6, done: 0, inProgress: 1 });
  });

  it('stay exact while 16 agents add and cycle done → next and folds run meanwhile', async () => {
    const root = await t.session({ name: 'racer' });
    // One shared list: every agent but the first is its child, so they all work in its scope.
    const kids = await Promise.all(Array.from({ length: 15 }, (_, i) => t.session({ name: `kid-${i}`, parentId: root.id, by: root.client })));
    const team = [root, ...kids];
    let stop = false;
    const folding = (async () => {
      let folds = 0;
      while (!stop) {
        await foldScopeCounts(t.sql);
        folds++;
      }
      return folds;
    })();
    await Promise.all(
      team.map(async (s, i) => {
        for (let k = 0; k < 10; k++) {
          const r = await s.client.post('/v1/todos', { title: `r${i}-${k}` });
          expect(r.status).toBe(201);
        }
        let cur = await s.client.post('/v1/todos/next', {});
        for (let k = 0; k < 8 && cur.body.claimed; k++) {
          cur = { ...cur, body: (await s.client.post(`/v1/todos/${cur.body.item.id}/done`, { next: {} })).body.next };
        }
      }),
    );
    stop = true;
    expect(await folding).toBeGreaterThan(0);
    expect(await drift()).toEqual([]);
    await foldScopeCounts(t.sql);
    expect(await drift()).toEqual([]);
  });

  it('cost a read the same at 20,000 items as at 10: the sum reads the scope’s count rows, not its items', async () => {
    const [teamRow] = await t.sql<{ id: string }[]>`select id from teams order by created_at limit 1`;
    const seed = async (scope: string, n: number) =>
      t.sql`insert into todos (id, team_id, scope, title, created_by, position)
            select 'td-' || md5(${scope} || g), ${teamRow.id}, ${scope}, 'item ' || g, 'bench', g from generate_series(1, ${n}::int) g`;
    await seed('session:small', 10);
    await seed('session:big', 20_000);
    await foldScopeCounts(t.sql);
    await t.sql`analyze scope_counts`;
    const read = async (scope: string) => {
      const [row] = await t.sql<{ 'QUERY PLAN': { Plan: { 'Shared Hit Blocks': number; 'Shared Read Blocks': number } }[] }[]>`
        explain (analyze, buffers, format json) select c.* from ${scopeCountsSql(t.sql, teamRow.id, scope)} c`;
      const p = row['QUERY PLAN'][0].Plan;
      return p['Shared Hit Blocks'] + p['Shared Read Blocks'];
    };
    const small = await read('session:small');
    const big = await read('session:big');
    expect(big, `buffers read for 10 items: ${small}, for 20,000: ${big}`).toBeLessThanOrEqual(small + 2);
    const [{ total }] = await t.sql`select c.total from ${scopeCountsSql(t.sql, teamRow.id, 'session:big')} c`;
    expect(total).toBe(20_000);
  });
});
