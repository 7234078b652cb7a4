/**
 * Bulk add: N items in one `POST /v1/todos/bulk` against the same N items as single
 * `POST /v1/todos` calls (8 in flight, one keep-alive socket each), in the same run, on a server
 * of its own whose `list_limit` and body limit admit N items in one request. The goal: the bulk
 * request at least 20× faster than the single adds.
 *
 * Every run adds to a fresh session's own (empty) scope, so no run sees another's rows. Items are
 * alike in both: a title, a note and two tags, `emit_events = all` (one `added` event each). A
 * third shape sends the bulk request with a dependency chain by ref (item i waits for item i-1),
 * the worst case of the ref resolution and the topological sort. Each answer is checked: N items,
 * positions 1..N in request order.
 */
import type { Pool } from 'undici';
import { call, openPool } from './lib/http.js';
import type { CoordServer } from './lib/server.js';
import { round, summarize, type Summary } from './lib/stats.js';

export interface BulkResult {
  items: number;
  /** Concurrent single adds. */
  inFlight: number;
  /** N single adds, wall time (ms) and throughput. */
  single: { ms: number; perSecond: number };
  /** One bulk request of N items (ms), over `runs` runs. */
  bulk: Summary;
  /** The same with a dependency chain by ref. */
  bulkChain: Summary;
  /** Single-add wall time / bulk p50. */
  speedup: number;
}

const item = (i: number) => ({ title: `bulk bench item ${i}`, note: 'measured by bench/bulk.ts', tags: ['bench', `batch-${i % 10}`] });

async function freshSession(admin: Pool, adminToken: string, name: string): Promise<string> {
  return (await call(admin, 'POST', '/v1/sessions', adminToken, { name })).body.token;
}

function verify(items: { position: number; title: string }[], n: number): void {
  if (items.length !== n) throw new Error(`bulk add answered ${items.length} items, not ${n}`);
  for (const [i, x] of items.entries()) {
    if (x.position !== i + 1 || x.title !== item(i).title) throw new Error(`bulk add item ${i}: position ${x.position}, title "${x.title}"`);
  }
}

/** Runs the section on `server` (started with list_limit ≥ n and a body limit that admits n items). */
export async function bulkBench(server: CoordServer, opts: { items: number; inFlight: number; runs: number }): Promise<BulkResult> {
  const { items: n, inFlight, runs } = opts;
  const admin = openPool(server.base, 2);
  const pool = openPool(server.base, inFlight);
  try {
    // Warm-up (not recorded): both paths once, small.
    const warm = await freshSession(admin, server.adminToken, 'bulk-warm');
    for (let i = 0; i < 200; i++) await call(pool, 'POST', '/v1/todos', warm, item(i));
    await call(pool, 'POST', '/v1/todos/bulk', warm, { items: Array.from({ length: 200 }, (_, i) => item(i)) });

    const singleToken = await freshSession(admin, server.adminToken, 'bulk-single');
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        for (let i = next++; i < n; i = next++) await call(pool, 'POST', '/v1/todos', singleToken, item(i));
      }),
    );
    const singleMs = performance.now() - t0;

    const time = async (body: (i: number) => unknown) => {
      const samples: number[] = [];
      for (let r = 0; r < runs; r++) {
        const token = await freshSession(admin, server.adminToken, `bulk-${r}`);
        const payload = { items: Array.from({ length: n }, (_, i) => body(i)) };
        const t = performance.now();
        const res = await call(pool, 'POST', '/v1/todos/bulk', token, payload);
        samples.push(performance.now() - t);
        verify(res.body.items, n);
      }
      return summarize(samples);
    };
    const bulk = await time(item);
    const bulkChain = await time((i) => ({ ...item(i), ref: `r${i}`, ...(i > 0 ? { dependsOn: [`r${i - 1}`] } : {}) }));
    return {
      items: n,
      inFlight,
      single: { ms: round(singleMs, 0), perSecond: round((n / singleMs) * 1000, 0) },
      bulk,
      bulkChain,
      speedup: round(singleMs / bulk.p50, 1),
    };
  } finally {
    await pool.close();
    await admin.close();
  }
}
