/**
 * The claim cycle under load: `next` and the owner's `done` go through group commit
 * (src/db/group-commit.ts). Requests of one kind that arrive while a batch is running become the
 * next batch: one call of `coord_next_many` / `coord_done_many` (src/db/functions/), one round trip
 * and one commit for all of them. A batch means what its requests mean run one after another in
 * arrival order (seed 000 `next` and `done`); docs/architecture.md "Group commit" says how. This
 * file only forms the batches; the statements are the todos repository's (src/todos/todos.repo.ts).
 */
import postgres from 'postgres';
import type { Sql } from '../db/client.js';
import { GroupCommit } from '../db/group-commit.js';
import { claimNextAlone, claimNextMany, completeMany, type DoneRequest, type NextFilters, type NextRequest } from './todos.repo.js';
import type { TodoRow } from './todos.view.js';

export type { DoneRequest, NextFilters, NextRequest } from './todos.repo.js';

/** The batch key part of the filters: requests with equal filters share a batch. */
function filterKey(f: NextFilters = {}): string {
  return JSON.stringify([f.tags ?? [], f.anyTags ?? [], f.minPriority ?? null, !!f.assignedToMe]);
}

interface Lanes {
  next: GroupCommit<NextRequest, TodoRow | null>;
  done: GroupCommit<DoneRequest, TodoRow | null>;
}

const lanesOf = new WeakMap<Sql, Lanes>();

/** Errors Postgres reported: the batch's transaction was rolled back, nothing committed. */
const rolledBack = (err: unknown) => err instanceof postgres.PostgresError;

/**
 * One batch of a kind (and scope) runs at a time per replica; the next one fills meanwhile.
 * Measured (N=32 agents, 2 cores): 1 in flight beats 2 by ~20 % and 3 by ~40 % in cycles/s,
 * since concurrent batches contend in Postgres for the same head of the ready index.
 */
const MAX_IN_FLIGHT = 1;

function lanes(sql: Sql, maxBatch: number): Lanes {
  let l = lanesOf.get(sql);
  if (l) return l;
  const opts = { maxBatch, maxInFlight: MAX_IN_FLIGHT, rolledBack };
  l = {
    next: new GroupCommit<NextRequest, TodoRow | null>(async (_key, reqs) => {
      // A lone request (an idle replica) takes the one-statement claim: no function call.
      if (reqs.length === 1) return [await claimNextAlone(sql, reqs[0])];
      const rows = await claimNextMany(sql, reqs);
      const claimed = await Promise.all(rows.map(async (r, i) => (r.retry ? claimNextAlone(sql, reqs[i]) : r.id === null ? null : r)));
      return claimed;
    }, opts),
    done: new GroupCommit<DoneRequest, TodoRow | null>(async (_key, reqs) => {
      // coord_done_many takes distinct ids: a repeated id (the same item completed twice at
      // once) runs after the batch, alone, and sees the first one's outcome.
      const seen = new Set<string>();
      const first: number[] = [];
      const repeated: number[] = [];
      reqs.forEach((r, i) => {
        if (seen.has(r.id)) repeated.push(i);
        else {
          seen.add(r.id);
          first.push(i);
        }
      });
      const out: (TodoRow | null)[] = new Array(reqs.length).fill(null);
      const batchRows = await completeMany(
        sql,
        first.map((i) => reqs[i]),
      );
      first.forEach((i, j) => (out[i] = batchRows[j]));
      for (const i of repeated) out[i] = (await completeMany(sql, [reqs[i]]))[0];
      return out;
    }, opts),
  };
  lanesOf.set(sql, l);
  return l;
}

/**
 * `next` through group commit: resolves with the claimed row (item columns, lease from
 * `leaseMs`), or null when nothing in `scope` was eligible for `actor`. Rejects with the database
 * error of the request (after a failed batch, each request runs again alone).
 */
export function batchedNext(sql: Sql, maxBatch: number, req: NextRequest): Promise<TodoRow | null> {
  if (maxBatch <= 1) return claimNextAlone(sql, req);
  return lanes(sql, maxBatch).next.submit(
    `${req.scope.teamId}\u0000${req.scope.scope}\u0000${req.emit}\u0000${req.leaseMs}\u0000${filterKey(req.filters)}`,
    req,
  );
}

/**
 * The owner's `done` through group commit: resolves with the completed row, or null when the
 * guard did not match (not the owner, wrong state, lease expired: the caller says which).
 */
export async function batchedDone(sql: Sql, maxBatch: number, req: DoneRequest): Promise<TodoRow | null> {
  if (maxBatch <= 1) return (await completeMany(sql, [req]))[0];
  return lanes(sql, maxBatch).done.submit(`${req.emitEvents}\u0000${req.leaseMs}`, req);
}

/** Batches run and requests carried, per kind (tests and diagnostics). */
export function groupCommitStats(sql: Sql) {
  const l = lanesOf.get(sql);
  return { next: l?.next.stats, done: l?.done.stats };
}
