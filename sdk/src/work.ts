/**
 * What an agent's work loop wants from the todo API, built only on the public methods
 * of `client.todos`: `withClaim` (claim, keep the lease alive while the work runs, then complete
 * or block on its outcome), `claims` (an endless stream of claims from waiting `next`) and `work`
 * (the two together: a worker loop).
 */
import { CoordError, Forbidden, LeaseExpired, NotFound } from './errors.js';
import type { ClaimResult, DoneResult, DoneTodoInput, NextInput, TodoItem } from './types.js';

/**
 * The calls of `client.todos` (todos.ts `TodosApi`) that the claim loops make. Declared here so the
 * loops depend on these methods, not on the whole todos client, which builds on this file.
 */
export interface TodosApi {
  claim(id: string): Promise<TodoItem>;
  next(opts?: NextInput, init?: { signal?: AbortSignal }): Promise<ClaimResult>;
  heartbeat(id: string): Promise<TodoItem>;
  block(id: string, note?: string): Promise<TodoItem>;
  reopen(id: string): Promise<TodoItem>;
  done(id: string, opts?: Omit<DoneTodoInput, 'next'>): Promise<TodoItem>;
  done(id: string, opts: DoneTodoInput & { next: NextInput }, init?: { signal?: AbortSignal }): Promise<DoneResult>;
}

/** Options of `withClaim`. */
export interface WithClaimOptions<T> {
  /**
   * How often to heartbeat the claim while `fn` runs, in ms. Default: a third of the lease the
   * server reported (`leaseExpiresAt` − claim time), at least 1000; no heartbeat when the
   * server has no lease (`claim_lease = 0`).
   */
  heartbeatMs?: number;
  /** The result stored with the item on `done` (default: `fn`'s return value; `undefined` stores none). */
  result?: (value: T) => unknown;
  /** The note of the block when `fn` throws (default: the error's message, at most 2000 bytes). */
  blockNote?: (err: unknown) => string;
}

/** What `withClaim` did. `claimed:false` only when `next` found nothing eligible. */
export type WithClaimResult<T> = { claimed: false } | { claimed: true; item: TodoItem; value: T };

/**
 * The work of one claim, for `fn`: `signal` aborts when the claim is lost (its lease expired or
 * another session took it over, seen by a heartbeat); `fn` should then stop, since `done` will be refused.
 */
export interface ClaimContext {
  signal: AbortSignal;
}

const clip = (s: string, bytes: number) => {
  const b = new TextEncoder().encode(s);
  return b.length <= bytes ? s : new TextDecoder().decode(b.subarray(0, bytes)).replace(/\uFFFD$/, '');
};

/**
 * Claims an item (an id: `claim`; a `NextInput`: `next`, waiting when it has `waitMs`), runs
 * `fn(item, {signal})` while heartbeating the claim, then `done` with `fn`'s result when it
 * resolves, or `block` with the error's message as the note when it throws (and rethrows); a
 * `done` the server refuses (e.g. `result_too_large`) or a result that is not JSON blocks the
 * item with the reason too, and throws.
 * Resolves `{claimed:false}` when `next` found nothing. Errors: those of `claim`/`next` (e.g.
 * `AlreadyClaimed` for an id), of `done`/`block` (e.g. `LeaseExpired` when the claim was lost
 * while `fn` ran: `signal` had aborted), and `fn`'s own.
 */
export async function withClaim<T>(
  todos: TodosApi,
  target: string | NextInput,
  fn: (item: TodoItem, ctx: ClaimContext) => Promise<T>,
  opts: WithClaimOptions<T> = {},
): Promise<WithClaimResult<T>> {
  let item: TodoItem;
  if (typeof target === 'string') item = await todos.claim(target);
  else {
    const r = await todos.next(target);
    if (!r.claimed || !r.item) return { claimed: false };
    item = r.item;
  }
  const { next: _, ...done } = await runClaimed(todos, item, fn, opts);
  return done;
}

/**
 * The second half of `withClaim`, for an item the caller has just claimed. `thenNext`, asked when
 * the work has succeeded, gives the `next` to claim in the same request as the `done` (one round
 * trip per cycle), or undefined for a plain `done`; what it claimed comes back as `next`.
 */
async function runClaimed<T>(
  todos: TodosApi,
  item: TodoItem,
  fn: (item: TodoItem, ctx: ClaimContext) => Promise<T>,
  opts: WithClaimOptions<T>,
  thenNext: () => NextInput | undefined = () => undefined,
): Promise<{ claimed: true; item: TodoItem; value: T; next?: ClaimResult }> {
  const lost = new AbortController();
  const every = opts.heartbeatMs ?? defaultHeartbeat(item);
  const timer = every
    ? setInterval(() => {
        todos.heartbeat(item.id).catch((err) => {
          // The claim is gone: tell `fn`. Other failures (network) are retried on the next tick.
          if (err instanceof LeaseExpired || err instanceof Forbidden || err instanceof NotFound) lost.abort(err);
        });
      }, every)
    : undefined;
  (timer as { unref?: () => void } | undefined)?.unref?.();
  let value: T;
  try {
    value = await fn(item, { signal: lost.signal });
  } catch (err) {
    if (timer) clearInterval(timer);
    if (!lost.signal.aborted) {
      const note = opts.blockNote ? opts.blockNote(err) : err instanceof Error ? err.message || err.name : String(err);
      await todos.block(item.id, clip(note || 'failed', 2000)).catch((blockErr: unknown) => {
        if (!(blockErr instanceof CoordError)) throw blockErr;
      });
    }
    throw err;
  }
  if (timer) clearInterval(timer);
  const result = opts.result ? opts.result(value) : value;
  try {
    if (result !== undefined) JSON.stringify(result); // a circular or BigInt result is the work's failure, not the network's
    const body = result === undefined ? {} : { result };
    const next = thenNext();
    if (!next) return { claimed: true as const, item: await todos.done(item.id, body), value };
    const both = await todos.done(item.id, { ...body, next });
    return { claimed: true as const, item: both.item, value, next: both.next };
  } catch (err) {
    // A refused `done` (e.g. result_too_large) must not strand the claim for a whole lease:
    // block the item with the reason, unless the claim is no longer ours.
    if (!(err instanceof LeaseExpired || err instanceof Forbidden || err instanceof NotFound)) {
      const why = err instanceof Error ? err.message : String(err);
      await todos.block(item.id, clip(`could not complete: ${why}`, 2000)).catch(() => undefined);
    }
    throw err;
  }
}

function defaultHeartbeat(item: TodoItem): number | undefined {
  if (!item.leaseExpiresAt) return undefined;
  const lease = Date.parse(item.leaseExpiresAt) - Date.parse(item.updatedAt);
  return lease > 0 ? Math.max(1000, Math.floor(lease / 3)) : undefined;
}

/** Options of `claims` and `work`: the `next` filters, the wait per call and when to stop. */
export interface ClaimLoopOptions extends Omit<NextInput, 'waitMs'> {
  /** Each `next` waits up to this long for an item, in ms (default 30000, ≤ 60000). */
  waitMs?: number;
  /** Ends the loop (between calls, and a waiting call at once). */
  signal?: AbortSignal;
  /** Stop after this many claims (default: never). */
  max?: number;
}

/**
 * An endless stream of claims: waiting `next` calls, one after another, each item yielded as
 * soon as it is claimed (the caller finishes it: `done`, `block`, or `withClaim`-style). Ends when
 * `signal` aborts or after `max` claims. Errors: those of `next`.
 */
export async function* claims(todos: TodosApi, opts: ClaimLoopOptions = {}): AsyncGenerator<TodoItem> {
  const { signal, max, waitMs = 30_000, ...filters } = opts;
  let n = 0;
  while (!signal?.aborted && (max === undefined || n < max)) {
    const r = await todos.next({ ...filters, waitMs }, { signal }).catch((err: unknown) => {
      if (signal?.aborted) return { claimed: false as const };
      throw err;
    });
    if (r.claimed && r.item) {
      n++;
      yield r.item;
    }
  }
}

/** What `work` did. */
export interface WorkSummary {
  /** Items completed (`done`). */
  done: number;
  /** Items blocked because `fn` threw. */
  blocked: number;
}

/**
 * A worker loop: claims items as they appear (waiting `next`) and runs each through `withClaim`
 * (heartbeat while `fn` runs, then `done` with its result, or `block` with its error). A `done`
 * claims the next item in the same request (`done` with `next`: one round trip per cycle while
 * work is ready; a waiting `next` only when none was). An item whose `fn` throws, or whose `done`
 * is refused (e.g. a result over `max_result`), is blocked with the reason and the loop goes on; a
 * claim lost meanwhile is left to whoever holds it now. Ends when `signal` aborts or after `max`
 * claims; an item claimed by the last `done` after that is handed back (`reopen`). Errors: those of `next`.
 */
export async function work<T>(
  todos: TodosApi,
  fn: (item: TodoItem, ctx: ClaimContext) => Promise<T>,
  opts: ClaimLoopOptions & WithClaimOptions<T> = {},
): Promise<WorkSummary> {
  const { heartbeatMs, result, blockNote, signal, max, waitMs = 30_000, ...filters } = opts;
  const summary: WorkSummary = { done: 0, blocked: 0 };
  const more = (n: number) => !signal?.aborted && (max === undefined || n < max);
  let claimed = 0;
  let ahead: TodoItem | undefined; // claimed by the last `done`
  while (more(claimed)) {
    let item = ahead;
    ahead = undefined;
    if (!item) {
      const r = await todos.next({ ...filters, waitMs }, { signal }).catch((err: unknown) => {
        if (signal?.aborted) return { claimed: false as const };
        throw err;
      });
      if (!r.claimed || !r.item) continue;
      item = r.item;
    }
    claimed++;
    try {
      const out = await runClaimed(todos, item, fn, { heartbeatMs, result, blockNote }, () => (more(claimed) ? { ...filters, waitMs: 0 } : undefined));
      summary.done++;
      if (out.next?.claimed && out.next.item) ahead = out.next.item;
    } catch (err) {
      if (err instanceof LeaseExpired || err instanceof Forbidden || err instanceof NotFound) continue; // the claim was lost
      summary.blocked++; // fn threw, or done was refused: the item is blocked with the reason; go on
    }
  }
  // Stopped between the `done` that claimed an item and its work: hand it back at once.
  if (ahead) await todos.reopen(ahead.id).catch(() => undefined);
  return summary;
}
