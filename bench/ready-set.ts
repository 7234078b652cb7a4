/**
 * The ready set at scale: a scope with 10,000 items and 20,000 dependency edges, timed
 * over HTTP: `next`, the first page of `status=todo`, and a `done` that readies 1,000 dependents.
 * The same shape at 2,000 items / 4,000 edges is the baseline: the aim is that none of these
 * grows with the size of the scope beyond its own work, so the large/small ratio should be ≈ 1.
 *
 * Shape (deterministic, seeded): item 1 is the hub, claimed by the agent; items 2–1,001 depend on
 * the hub only; of the remaining items the first 40 % are done, and the rest carry the remaining
 * edges, each to an earlier item (80 % of them to done items), so the graph is acyclic and a
 * good part of it is ready. Rows are written with SQL as Coord writes them, and the readiness
 * count (`unfinished_deps`) is derived from the edges; setup is not measured.
 *
 * Every second item carries the tag `gpu` and every fifth has priority 1.
 *
 * Measured: 30 first pages (`GET /v1/todos?status=todo&limit=100`), 100 sequential `next` calls,
 * then 50 sequential filtered `next` calls (`tags: ["gpu"]`: half the ready set admitted), and 5 rounds of reopen → claim → `done` of the hub (each `done` readies the 1,000 dependents;
 * each reopen re-blocks them).
 */
import type { Pool } from 'undici';
import type { Sql } from '../src/db/client.js';
import { call } from './lib/http.js';
import { round, summarize, type Summary } from './lib/stats.js';

export interface ReadySetRun {
  items: number;
  edges: number;
  /** Ready items at the start of the measurement. */
  ready: number;
  next: Summary;
  /** `next` with `tags: ["gpu"]` (every second item carries it). */
  nextFiltered: Summary;
  firstPage: Summary;
  /** `done` of the hub: 1,000 dependents become ready (cascade + 1,001 event rows). */
  doneReadies1000: Summary;
  /** `reopen` of the hub: 1,000 dependents become blocked again. */
  reopenBlocks1000: Summary;
}

export interface ReadySetResult {
  runs: ReadySetRun[];
  /** Large scope / small scope, per operation (p50). ≈ 1 means the cost does not grow with the scope. */
  growth: { next: number; nextFiltered: number; firstPage: number; doneReadies1000: number; reopenBlocks1000: number };
}

/** mulberry32: a tiny seeded PRNG, so every run builds the same graph. */
function prng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const HUB_DEPENDENTS = 1000;
const idOf = (scopeTag: string, i: number) => `td-${scopeTag}${i.toString(16).padStart(8, '0')}`;

async function build(sql: Sql, scope: string, tag: string, agentId: string, creator: string, items: number): Promise<{ edges: number; hub: string }> {
  const edgesWanted = 2 * items;
  const firstTail = HUB_DEPENDENTS + 2;
  const doneCount = Math.floor(0.4 * (items - HUB_DEPENDENTS - 1));
  const firstOpen = firstTail + doneCount;
  const rand = prng(items);
  const from: string[] = [];
  const to: string[] = [];
  for (let i = 2; i <= HUB_DEPENDENTS + 1; i++) {
    from.push(idOf(tag, i));
    to.push(idOf(tag, 1));
  }
  const seen = new Set<string>();
  while (from.length < edgesWanted) {
    const i = firstOpen + Math.floor(rand() * (items - firstOpen + 1));
    if (i <= firstOpen) continue;
    const j = rand() < 0.8 ? firstTail + Math.floor(rand() * doneCount) : firstOpen + Math.floor(rand() * (i - firstOpen));
    const key = `${i}:${j}`;
    if (j >= i || seen.has(key)) continue;
    seen.add(key);
    from.push(idOf(tag, i));
    to.push(idOf(tag, j));
  }
  await sql`
    insert into todos (id, scope, title, created_by, position, status, owner, revision, progress_at, tags, priority)
    select 'td-' || ${tag} || lpad(to_hex(g), 8, '0'), ${scope}, 'item ' || g, ${creator}, g,
           case when g = 1 then 'in-progress' when g >= ${firstTail}::int and g < ${firstOpen}::int then 'done' else 'todo' end,
           case when g = 1 or (g >= ${firstTail}::int and g < ${firstOpen}::int) then ${agentId} end,
           case when g = 1 then 2 when g >= ${firstTail}::int and g < ${firstOpen}::int then 3 else 1 end,
           case when g = 1 then now() end,
           case when g % 2 = 0 then '{gpu}'::text[] else '{}'::text[] end,
           case when g % 5 = 0 then 1 else 0 end
      from generate_series(1, ${items}::int) g`;
  await sql`insert into todo_dependencies (todo_id, dependency_id) select * from unnest(${from}::text[], ${to}::text[])`;
  await sql`
    update todos t set unfinished_deps = c.n
      from (select e.todo_id, count(*)::int as n from todo_dependencies e join todos d on d.id = e.dependency_id
             where d.status <> 'done' and d.scope = ${scope} group by e.todo_id) c
     where t.id = c.todo_id`;
  // Delete, then insert: the same statements on this release's schema (scopes keyed by team and
  // scope) and on a previous release's (`--server-root`), in the default team either way.
  await sql`delete from scopes where scope = ${scope}`;
  await sql`insert into scopes (scope, last_position) values (${scope}, ${items})`;
  await sql.unsafe('vacuum analyze todos, todo_dependencies');
  return { edges: from.length, hub: idOf(tag, 1) };
}

/**
 * Builds one scope of `items` items (2 × items edges) for a fresh root session and agent, then
 * times the three operations over HTTP as the agent.
 */
async function runOne(sql: Sql, pool: Pool, adminToken: string, items: number): Promise<ReadySetRun> {
  const root = await call(pool, 'POST', '/v1/sessions', adminToken, { name: `ready-root-${items}` });
  const agent = await call(pool, 'POST', '/v1/sessions', adminToken, { name: `ready-agent-${items}`, parentId: root.body.session.id });
  const scope = `session:${root.body.session.id}`;
  const token: string = agent.body.token;
  const tag = items.toString(16).padStart(6, '0');
  const { edges, hub } = await build(sql, scope, tag, agent.body.session.id, root.body.session.id, items);
  const [{ ready }] = await sql<{ ready: number }[]>`
    select count(*)::int as ready from todos where scope = ${scope} and status = 'todo' and owner is null and unfinished_deps = 0`;

  const page: number[] = [];
  for (let i = 0; i < 30; i++) {
    const t0 = performance.now();
    const r = await call<{ items: unknown[] }>(pool, 'GET', '/v1/todos?status=todo&limit=100', token);
    page.push(performance.now() - t0);
    if (r.body.items.length !== Math.min(100, ready)) throw new Error(`first page held ${r.body.items.length} items, expected ${Math.min(100, ready)}`);
  }
  const next: number[] = [];
  for (let i = 0; i < 100; i++) {
    const t0 = performance.now();
    const r = await call<{ claimed: boolean }>(pool, 'POST', '/v1/todos/next', token, {});
    next.push(performance.now() - t0);
    if (!r.body.claimed) throw new Error(`next found nothing after ${i} claims (ready set ${ready})`);
  }
  const nextFiltered: number[] = [];
  for (let i = 0; i < 50; i++) {
    const t0 = performance.now();
    const r = await call<{ claimed: boolean; item?: { tags: string[] } }>(pool, 'POST', '/v1/todos/next', token, { tags: ['gpu'] });
    nextFiltered.push(performance.now() - t0);
    if (!r.body.claimed || !r.body.item?.tags.includes('gpu')) throw new Error(`filtered next found nothing (or a wrong item) after ${i} claims`);
  }
  const done: number[] = [];
  const reopen: number[] = [];
  for (let round = 0; round < 5; round++) {
    if (round > 0) {
      const t0 = performance.now();
      await call(pool, 'POST', `/v1/todos/${hub}/reopen`, token, {});
      reopen.push(performance.now() - t0);
      await call(pool, 'POST', `/v1/todos/${hub}/claim`, token, {});
    }
    const t0 = performance.now();
    const r = await call<{ item: { status: string } }>(pool, 'POST', `/v1/todos/${hub}/done`, token, {});
    done.push(performance.now() - t0);
    if (r.body.item.status !== 'done') throw new Error(`hub done answered ${r.body.item.status}`);
    const [{ n }] = await sql<{ n: number }[]>`
      select count(*)::int as n from todos t join todo_dependencies e on e.todo_id = t.id
       where e.dependency_id = ${hub} and t.status = 'todo' and t.unfinished_deps = 0`;
    if (n !== HUB_DEPENDENTS) throw new Error(`after the hub's done ${n} dependents are ready, expected ${HUB_DEPENDENTS}`);
  }
  return {
    items,
    edges,
    ready,
    next: summarize(next),
    nextFiltered: summarize(nextFiltered),
    firstPage: summarize(page),
    doneReadies1000: summarize(done),
    reopenBlocks1000: summarize(reopen),
  };
}

/** Runs the small (2,000 items) and the large (10,000 items) scope and the growth ratios. */
export async function readySetBench(sql: Sql, pool: Pool, adminToken: string): Promise<ReadySetResult> {
  const small = await runOne(sql, pool, adminToken, 2000);
  const large = await runOne(sql, pool, adminToken, 10_000);
  const g = (f: (r: ReadySetRun) => Summary) => round(f(large).p50 / f(small).p50, 2);
  return {
    runs: [small, large],
    growth: {
      next: g((r) => r.next),
      nextFiltered: g((r) => r.nextFiltered),
      firstPage: g((r) => r.firstPage),
      doneReadies1000: g((r) => r.doneReadies1000),
      reopenBlocks1000: g((r) => r.reopenBlocks1000),
    },
  };
}
