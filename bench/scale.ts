/**
 * Big scopes (goal 3): a scope of 1,000,000 items against one of 1,000, timed over
 * HTTP in the same run: `next` p99, the first list page, readiness and the export rate, each
 * within 2× of the small scope (the ratios big/small are printed with met / not met).
 *
 * Loading. One million `POST /v1/todos/bulk` items would take far longer than the section's
 * budget (bench/bulk.ts: ~6,600 items/s), so both scopes are loaded alike with a few set-based
 * SQL statements on the bench database (`INSERT … SELECT … FROM generate_series`): the columns the
 * bulk-add route writes (id, scope, title, tags, created_by, position, unfinished_deps, priority;
 * done items also status, owner and revision), the dependency edges, and the scope's `scopes` row
 * with its last position. No `added` events are written (the bulk route writes one per item);
 * the load is not timed into any figure and is printed as such. Then `VACUUM ANALYZE` and
 * `CHECKPOINT`. Before any timing, what was loaded is read back through the API: the scope's
 * counts (`GET /v1/scopes`), the first page in position order with the expected ids, and (at
 * every export) the number of exported items.
 *
 * Shape (both scopes): ids are `td-` + 16 hex digits of md5(scope, i) (random order, like real
 * ids); item i sits at position i; the first 30 % are done (owned by the agent); of the rest,
 * every tenth item waits for the two items before it (so `next` skips nothing: the ready index
 * holds only ready items, and `readiness` has dependencies to report); every fourth item carries
 * the tag `backend`.
 *
 * Timed (one agent session of the scope's root, sequential, interleaved small/big in rounds so
 * drift hits both alike, after an unrecorded warm-up):
 * - `POST /v1/todos/next {}`: claims the next ready item (p99 is the goal's figure);
 * - `GET /v1/todos?limit=100`: the first page of the scope (p50 is the goal's figure);
 * - `GET /v1/todos?status=todo&limit=100`: the first page of
 *   ready items, behind the 30 % done ones;
 * - `GET /v1/todos/{id}/readiness`: items spread over the whole scope, alternately a waiting one
 *   (two unfinished dependencies) and a ready one (p50 is the goal's figure);
 * - `GET /v1/scopes/{scope}/export`, in both formats (markdown, the default, and json): the whole
 *   scope streamed and counted, items per second (the small scope over several runs, the big one
 *   over `bigExports` runs, one at full size); the figure compared is the time per exported item.
 * - `GET /v1/todos?status=todo&limit=100` and `GET /v1/scopes` (the scope's counts, read from its
 *   count rows, not by counting its items): p50 of each is a goal figure too.
 */
import type { Pool } from 'undici';
import { createHash } from 'node:crypto';
import type { Sql } from '../src/db/client.js';
import { call } from './lib/http.js';
import { round, summarize, type Summary } from './lib/stats.js';

export interface ScaleSide {
  items: number;
  /** Ready items when the timing started. */
  ready: number;
  /** Dependency edges loaded. */
  edges: number;
  next: Summary;
  firstPage: Summary;
  /** The first page of `status=todo` (ready items; the first 30 % of the scope are done). */
  firstTodoPage: Summary;
  readiness: Summary;
  /** `GET /v1/scopes`: the scope's counts. */
  scopeCounts: Summary;
  /** Whole-scope export per format: wall time per run, bytes, items per second at the median. */
  export: Record<ExportFormat, { runs: Summary; bytes: number; itemsPerSecond: number }>;
  /** Wall time of the SQL load (not a goal figure). */
  loadMs: number;
}

export interface ScaleRatio {
  what: string;
  /** The statistic compared (p99, p50, ms per item). */
  stat: string;
  small: number;
  big: number;
  /** big / small (for the export: big's ms per item / small's). */
  ratio: number;
  met: boolean;
}

export interface ScaleResult {
  small: ScaleSide;
  big: ScaleSide;
  ratios: ScaleRatio[];
  /** How the scopes were loaded (printed with the figures). */
  loadedWith: string;
}

export type ExportFormat = 'markdown' | 'json';
export const EXPORT_FORMATS: ExportFormat[] = ['markdown', 'json'];

export interface ScaleOptions {
  smallItems: number;
  bigItems: number;
  /** Rounds of the interleaved measurement; each round does `perRound` calls of a kind per scope. */
  rounds: number;
  nextPerRound: number;
  pagePerRound: number;
  readinessPerRound: number;
  /** Exports of the small scope (the big one is exported once, or as often as its size allows). */
  smallExports: number;
  bigExports: number;
}

export const LOADED_WITH =
  'SQL on the bench database (INSERT … SELECT generate_series: the rows and columns POST /v1/todos/bulk writes, the scope row and positions; ' +
  'no `added` events), then VACUUM ANALYZE; checked through the API before timing';

const DONE_SHARE = 0.3;

/** The id of item `i` of `scope`: 16 hex digits of md5, as random as a real id's. */
export const itemId = (scope: string, i: number) => `td-${createHash('md5').update(`${scope}:${i}`).digest('hex').slice(0, 16)}`;

/** Loads `items` items into `scope` (see the header); returns the number of edges. */
export async function loadScope(sql: Sql, scope: string, agentId: string, creator: string, items: number): Promise<number> {
  const doneUpTo = Math.floor((items * DONE_SHARE) / 10) * 10;
  await sql`
    insert into todos (id, scope, title, tags, created_by, position, status, owner, revision, unfinished_deps, priority)
    select 'td-' || substr(md5(${scope} || ':' || g), 1, 16), ${scope}, 'scale item ' || g,
           case when g % 4 = 0 then '{backend}'::text[] else '{}'::text[] end,
           ${creator}, g,
           case when g <= ${doneUpTo}::int then 'done' else 'todo' end,
           case when g <= ${doneUpTo}::int then ${agentId} end,
           case when g <= ${doneUpTo}::int then 3 else 1 end,
           case when g > ${doneUpTo}::int and g % 10 = 0 then 2 else 0 end,
           0
      from generate_series(1, ${items}::int) g`;
  const [{ n }] = await sql<{ n: number }[]>`
    with e as (
      insert into todo_dependencies (todo_id, dependency_id)
      select 'td-' || substr(md5(${scope} || ':' || g), 1, 16), 'td-' || substr(md5(${scope} || ':' || (g - d)), 1, 16)
        from generate_series(${doneUpTo + 10}::int, ${items}::int, 10) g, (values (1), (2)) v(d)
      returning 1)
    select count(*)::int as n from e`;
  // Delete, then insert: the same statements on this release's schema (scopes keyed by team and
  // scope) and on a previous release's (`--server-root`), in the default team either way.
  await sql`delete from scopes where scope = ${scope}`;
  await sql`insert into scopes (scope, last_position) values (${scope}, ${items})`;
  return n;
}

interface Side {
  items: number;
  scope: string;
  token: string;
  edges: number;
  loadMs: number;
  /** Ids for readiness calls, alternately waiting and ready, spread over the scope. */
  probes: string[];
  next: number[];
  page: number[];
  todoPage: number[];
  readiness: number[];
  counts: number[];
  exports: Record<ExportFormat, number[]>;
  exportBytes: Record<ExportFormat, number>;
}

/** Registers a root session and its agent, loads the scope and returns the side's state. */
async function prepare(sql: Sql, pool: Pool, adminToken: string, items: number, label: string): Promise<Side> {
  const root = await call(pool, 'POST', '/v1/sessions', adminToken, { name: `scale-root-${label}` });
  const agent = await call(pool, 'POST', '/v1/sessions', adminToken, { name: `scale-agent-${label}`, parentId: root.body.session.id });
  const scope = `session:${root.body.session.id}`;
  const t0 = performance.now();
  const edges = await loadScope(sql, scope, agent.body.session.id, root.body.session.id, items);
  const loadMs = performance.now() - t0;
  // Readiness probes: positions spread over the open part of the scope (a multiplicative hash),
  // alternately a waiting item (position ≡ 0 mod 10, two unfinished dependencies) and a ready one.
  const doneUpTo = Math.floor((items * DONE_SHARE) / 10) * 10;
  const waiting = (items - doneUpTo) / 10;
  const probes: string[] = [];
  for (let k = 0; k < 64; k++) {
    const pos = doneUpTo + 10 * (1 + ((k * 2654435761) % waiting));
    probes.push(itemId(scope, k % 2 === 0 ? pos : pos - 3));
  }
  return {
    items,
    scope,
    token: agent.body.token,
    edges,
    loadMs,
    probes,
    next: [],
    page: [],
    todoPage: [],
    readiness: [],
    counts: [],
    exports: { markdown: [], json: [] },
    exportBytes: { markdown: 0, json: 0 },
  };
}

/** Reads the loaded scope back through the API: counts, and the first page in position order. */
async function verify(pool: Pool, s: Side): Promise<number> {
  const doneUpTo = Math.floor((s.items * DONE_SHARE) / 10) * 10;
  const t0 = performance.now();
  const scopes = await call<{ scopes: { scope: string; total: number; done: number; todo: number; inProgress: number }[] }>(
    pool,
    'GET',
    '/v1/scopes?limit=100',
    s.token,
  );
  s.counts.push(performance.now() - t0);
  const mine = scopes.body.scopes.find((x) => x.scope === s.scope);
  if (!mine || mine.total !== s.items || mine.done !== doneUpTo || mine.todo !== s.items - doneUpTo) {
    throw new Error(`scale: GET /v1/scopes reads ${JSON.stringify(mine)} for ${s.scope}, expected total ${s.items}, done ${doneUpTo}`);
  }
  const page = await call<{ items: { id: string; position: number; status: string }[]; nextCursor: string | null }>(
    pool,
    'GET',
    '/v1/todos?limit=100',
    s.token,
  );
  const items = page.body.items;
  if (items.length !== 100 || !page.body.nextCursor) throw new Error(`scale: the first page of ${s.scope} held ${items.length} items`);
  for (const [i, x] of items.entries()) {
    if (x.position !== i + 1 || x.id !== itemId(s.scope, i + 1) || x.status !== 'done') {
      throw new Error(`scale: first page item ${i} of ${s.scope}: ${JSON.stringify(x)}, expected ${itemId(s.scope, i + 1)} at position ${i + 1}, done`);
    }
  }
  // The waiting probes must read blocked by their two predecessors.
  const r = await call<{ ready: boolean; reasons: { code: string; ids?: string[] }[] }>(pool, 'GET', `/v1/todos/${s.probes[0]}/readiness`, s.token);
  if (r.body.ready || r.body.reasons[0]?.code !== 'dependencies_unfinished' || r.body.reasons[0].ids?.length !== 2) {
    throw new Error(`scale: readiness of a waiting item of ${s.scope}: ${JSON.stringify(r.body)}`);
  }
  const ready = s.items - doneUpTo - s.edges / 2;
  return ready;
}

/**
 * Streams the scope's export in `format`, counts its items (markdown: the lines that open with a
 * checkbox; json: the lines `  {` that open an item of the indented array), checks the count,
 * and records the wall time; returns the byte count.
 */
async function exportOnce(pool: Pool, s: Side, format: ExportFormat, record = true): Promise<number> {
  const path = `/v1/scopes/${encodeURIComponent(s.scope)}/export?format=${format}`;
  const t0 = performance.now();
  const res = await pool.request({ method: 'GET', path, headers: { authorization: `Bearer ${s.token}` } });
  if (res.statusCode !== 200) throw new Error(`scale: export of ${s.scope}: HTTP ${res.statusCode} ${(await res.body.text()).slice(0, 300)}`);
  const isItem = format === 'markdown' ? (line: string) => line.startsWith('- [') : (line: string) => line === '  {';
  let bytes = 0;
  let items = 0;
  let rest = '';
  for await (const chunk of res.body as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    const lines = (rest + chunk.toString('latin1')).split('\n');
    rest = lines.pop()!;
    for (const line of lines) if (isItem(line)) items++;
  }
  if (isItem(rest)) items++;
  if (record) s.exports[format].push(performance.now() - t0);
  if (items !== s.items) throw new Error(`scale: the ${format} export of ${s.scope} held ${items} items, expected ${s.items}`);
  return bytes;
}

const timedCall = async (into: number[], pool: Pool, method: 'GET' | 'POST', path: string, token: string, body?: unknown) => {
  const t0 = performance.now();
  const r = await call(pool, method, path, token, body);
  into.push(performance.now() - t0);
  return r;
};

/** Runs the section: loads both scopes, verifies them, then times the four operations interleaved. */
export async function scaleBench(sql: Sql, pool: Pool, adminToken: string, o: ScaleOptions, progress: (m: string) => void = () => {}): Promise<ScaleResult> {
  if (o.smallItems % 10 || o.bigItems % 10) throw new Error('scale: item counts must be multiples of 10');
  const small = await prepare(sql, pool, adminToken, o.smallItems, 'small');
  progress(`scale: loaded ${o.smallItems.toLocaleString('en-US')} items in ${Math.round(small.loadMs)} ms`);
  const big = await prepare(sql, pool, adminToken, o.bigItems, 'big');
  progress(`scale: loaded ${o.bigItems.toLocaleString('en-US')} items in ${Math.round(big.loadMs)} ms (SQL); vacuum analyze`);
  await sql.unsafe('vacuum analyze todos, todo_dependencies, scopes');
  await sql.unsafe('checkpoint');
  const sides = [small, big];
  const ready = new Map<Side, number>();
  for (const s of sides) ready.set(s, await verify(pool, s));
  const nextTotal = o.rounds * o.nextPerRound + 5;
  for (const s of sides)
    if ((ready.get(s) ?? 0) < nextTotal) throw new Error(`scale: ${s.scope} has ${ready.get(s)} ready items, fewer than the ${nextTotal} next calls`);

  // Warm-up (not recorded): each call kind a few times on each scope.
  for (const s of sides) {
    const sink: number[] = [];
    for (let i = 0; i < 5; i++) {
      await timedCall(sink, pool, 'POST', '/v1/todos/next', s.token, {});
      await timedCall(sink, pool, 'GET', '/v1/todos?limit=100', s.token);
      await timedCall(sink, pool, 'GET', `/v1/todos/${s.probes[i]}/readiness`, s.token);
    }
  }
  progress('scale: verified both scopes through the API; timing next, first page, readiness (interleaved)');
  for (let round = 0; round < o.rounds; round++) {
    for (const s of sides) {
      for (let i = 0; i < o.nextPerRound; i++) {
        const r = await timedCall(s.next, pool, 'POST', '/v1/todos/next', s.token, {});
        if (!r.body.claimed || r.body.item.scope !== s.scope) throw new Error(`scale: next in ${s.scope} answered ${JSON.stringify(r.body).slice(0, 300)}`);
      }
    }
    for (const s of sides) for (let i = 0; i < o.pagePerRound; i++) await timedCall(s.page, pool, 'GET', '/v1/todos?limit=100', s.token);
    for (const s of sides) {
      for (let i = 0; i < Math.ceil(o.pagePerRound / 4); i++) {
        const r = await timedCall(s.todoPage, pool, 'GET', '/v1/todos?status=todo&limit=100', s.token);
        if (r.body.items.length !== 100) throw new Error(`scale: the first status=todo page of ${s.scope} held ${r.body.items.length} items`);
      }
    }
    for (const s of sides) {
      for (let i = 0; i < o.readinessPerRound; i++) {
        await timedCall(s.readiness, pool, 'GET', `/v1/todos/${s.probes[(round * o.readinessPerRound + i) % s.probes.length]}/readiness`, s.token);
      }
    }
    for (const s of sides) await timedCall(s.counts, pool, 'GET', '/v1/scopes?limit=100', s.token);
  }
  for (const format of EXPORT_FORMATS) {
    progress(
      `scale: exports (${format}): ${o.smallExports} × ${o.smallItems.toLocaleString('en-US')} items, ${o.bigExports} × ${o.bigItems.toLocaleString('en-US')} items`,
    );
    await exportOnce(pool, small, format, false); // warm-up, not recorded
    for (let i = 0; i < Math.max(o.smallExports, o.bigExports); i++) {
      if (i < o.smallExports) small.exportBytes[format] = await exportOnce(pool, small, format);
      if (i < o.bigExports) {
        big.exportBytes[format] = await exportOnce(pool, big, format);
        progress(`scale: exported ${o.bigItems.toLocaleString('en-US')} items (${format}) in ${Math.round(big.exports[format].at(-1)!)} ms`);
      }
    }
  }

  const side = (s: Side): ScaleSide => {
    const ex = (f: ExportFormat) => {
      const runs = summarize(s.exports[f]);
      return { runs, bytes: s.exportBytes[f], itemsPerSecond: round((s.items / runs.p50) * 1000, 0) };
    };
    return {
      items: s.items,
      ready: ready.get(s) ?? 0,
      edges: s.edges,
      next: summarize(s.next),
      firstPage: summarize(s.page),
      firstTodoPage: summarize(s.todoPage),
      readiness: summarize(s.readiness),
      scopeCounts: summarize(s.counts),
      export: { markdown: ex('markdown'), json: ex('json') },
      loadMs: round(s.loadMs, 0),
    };
  };
  const a = side(small);
  const b = side(big);
  const r = (what: string, stat: string, x: number, y: number): ScaleRatio => {
    const ratio = round(y / x, 2);
    return { what, stat, small: x, big: y, ratio, met: ratio <= 2 };
  };
  const usPerItem = (s: ScaleSide, f: ExportFormat) => (s.export[f].runs.p50 / s.items) * 1000;
  const exportRatio = (f: ExportFormat): ScaleRatio => {
    const ratio = round(usPerItem(b, f) / usPerItem(a, f), 2);
    return { what: `export (${f})`, stat: 'µs per item', small: round(usPerItem(a, f), 2), big: round(usPerItem(b, f), 2), ratio, met: ratio <= 2 };
  };
  return {
    small: a,
    big: b,
    ratios: [
      r('next', 'p99 ms', a.next.p99, b.next.p99),
      r('first page (100)', 'p50 ms', a.firstPage.p50, b.firstPage.p50),
      r('first todo page (100)', 'p50 ms', a.firstTodoPage.p50, b.firstTodoPage.p50),
      r('readiness', 'p50 ms', a.readiness.p50, b.readiness.p50),
      r('scope counts', 'p50 ms', a.scopeCounts.p50, b.scopeCounts.p50),
      exportRatio('markdown'),
      exportRatio('json'),
    ],
    loadedWith: LOADED_WITH,
  };
}
