/**
 * Waiting `next`: `POST /v1/todos/next` with `waitMs` holds the request until an
 * eligible item appears in the scope, or the time runs out, instead of the agent polling.
 *
 * No polling loop in the server: the waiter joins the event hub's feed of the scope's topic
 * (`todo:<scope>`, the same feed the SSE streams of this replica share, woken by the same
 * doorbell and its backstop; src/events/events.hub.ts), and tries the one claim path
 * (`claimNext`) once at the start and again after each batch of events that could have made an
 * item eligible (anything but `claimed`). It subscribes *before* its first try, at the head, so an
 * item committed after that point reaches it as an event and one committed before is seen by the
 * try. The claim's guarded UPDATE hands each item to exactly one waiter.
 *
 * Without a herd: the waiters of a scope on one replica form one queue (one feed subscription),
 * oldest first. A batch of k events that could each have made an item eligible wakes the k
 * oldest sleepers, one event each. A woken waiter that claims nothing passes its wake on to the
 * next sleeper that has not tried since that event (an item only some waiters may take, by its
 * assignee or their filters, still reaches one of them), and a waiter whose try overlapped new
 * events tries again. So 32 items added one by one to 32 waiters cost about 32 claims, not 32²/2,
 * and the longest waiter is served first. A waiter holds no database connection while it waits.
 *
 * A waiter whose client has gone (the connection closed) stops waiting and claims nothing; one
 * whose client went while its claim was committing hands the item straight back (`todo`, reason
 * `waiter-gone`), so a disconnect never swallows an item. Closing the replica ends every wait at
 * once with `{claimed:false}` (the client asks again, elsewhere).
 *
 * An expired claim becomes free at its deadline without an event; a waiter learns of it when the
 * lease sweep records it (`todo`, reason `lease-expired`), within `sweep_interval`.
 */
import type { EventHub, Subscriber } from '../events/events.hub.js';
import type { Sql } from '../db/client.js';
import { headCursor, streamKey, topicOf, type EventRow } from '../events/events.repo.js';
import type { TeamScope } from '../scopes/scopes.js';
import { claimNextIn, nextTarget, refuseStoppedSession, type NextInput, type NextTarget } from './todos.claim.js';
import { transitionTodo } from './todos.transitions.js';
import type { Ctx } from './todos.context.js';
import { isContractScope, type TodoItem } from './todos.view.js';

/** Events that cannot make an item eligible (a batch's own claims wake nobody). */
const NOT_A_WAKE = new Set(['claimed']);

/** One waiting request. */
class Waiter {
  /** The queue generation when its last try started. */
  triedGen = -1;
  /** The queue generation when it last went to sleep. */
  sleptGen = -1;
  /** Woken by an event's wake (to pass on if it claims nothing). */
  token = false;
  over = false;
  private resume: (() => void) | undefined;

  /** Resolves when woken (with a token) or ended. */
  sleep(): Promise<void> {
    return new Promise((resolve) => (this.resume = resolve));
  }

  wake(token: boolean): void {
    if (token) this.token = true;
    const r = this.resume;
    this.resume = undefined;
    r?.();
  }

  end(): void {
    this.over = true;
    this.wake(false);
  }
}

/** The waiters of one topic on this replica, oldest sleeper first, on one feed subscription. */
class TopicQueue {
  /** Bumped by every delivered batch holding a wake event. */
  gen = 0;
  private sleepers: Waiter[] = [];
  members = 0;
  leave: (() => void) | undefined;
  readonly ready: Promise<void>;

  constructor(hub: EventHub, sql: Sql, { teamId, scope }: TeamScope) {
    this.ready = (async () => {
      const sub: Subscriber = {
        cursor: await headCursor(sql),
        deliver: (events) => {
          const last = events[events.length - 1];
          sub.cursor = { tx: last.tx, id: last.id };
          this.onEvents(events);
          return this.members > 0;
        },
      };
      this.leave = await hub.catchUp(teamId, topicOf(scope), sub, () => this.members > 0);
    })();
  }

  private onEvents(events: EventRow[]): void {
    const k = events.filter((e) => !NOT_A_WAKE.has(e.event)).length;
    if (k === 0) return;
    this.gen++;
    for (let i = 0; i < k && this.sleepers.length > 0; i++) this.sleepers.shift()!.wake(true);
  }

  /** Passes a wake on to the oldest sleeper that has not tried since the latest wake event. */
  pass(): void {
    const next = this.sleepers[0];
    if (next && next.sleptGen < this.gen) {
      this.sleepers.shift();
      next.wake(true);
    }
  }

  sleep(w: Waiter): Promise<void> {
    w.sleptGen = this.gen;
    this.sleepers.push(w);
    return w.sleep();
  }

  remove(w: Waiter): void {
    const i = this.sleepers.indexOf(w);
    if (i >= 0) this.sleepers.splice(i, 1);
  }
}

/** Every wait of one replica, queued per topic, so closing the replica can end them. */
export class Waiters {
  private readonly queues = new Map<string, TopicQueue>();
  private readonly all = new Set<Waiter>();
  private closing = false;

  constructor(
    private readonly hub: EventHub,
    private readonly sql: Sql,
  ) {}

  /** Ends every wait now (the replica is closing); later waits answer at once. */
  closeAll(): void {
    this.closing = true;
    for (const w of this.all) w.end();
  }

  /** Waits in progress on this replica. */
  get size(): number {
    return this.all.size;
  }

  /** @internal */
  async join(scope: TeamScope, w: Waiter): Promise<TopicQueue> {
    this.all.add(w);
    if (this.closing) w.end();
    const topic = streamKey(scope.teamId, topicOf(scope.scope));
    let q = this.queues.get(topic);
    if (!q) this.queues.set(topic, (q = new TopicQueue(this.hub, this.sql, scope)));
    q.members++;
    try {
      await q.ready;
    } catch (err) {
      // The feed could not be joined (the database is unavailable): this queue is dead for all.
      this.leave(scope, q, w);
      if (this.queues.get(topic) === q) this.queues.delete(topic);
      throw err;
    }
    return q;
  }

  /** @internal */
  leave(scope: TeamScope, q: TopicQueue, w: Waiter): void {
    const topic = streamKey(scope.teamId, topicOf(scope.scope));
    this.all.delete(w);
    q.remove(w);
    if (w.token) q.pass();
    if (--q.members === 0 && this.queues.get(topic) === q) {
      this.queues.delete(topic);
      q.leave?.();
    }
  }
}

/**
 * `next`, holding the request up to `waitMs` (≤ 60 000) until it claims: resolves like
 * `claimNext` (`{claimed:true, item}`, or `{claimed:false}` at the deadline, when `gone` fires or
 * the replica closes). `gone` is the client's connection closing. The scope, access and filters
 * are checked once, before the wait (an invalid scope is refused at once, never after it); a
 * stop of the caller's session on any replica ends the wait with 401, like `claimNext`.
 * Errors: those of `claimNext`.
 */
export async function waitForNext(
  ctx: Ctx,
  deps: { hub: EventHub; waiters: Waiters },
  input: NextInput,
  waitMs: number,
  gone: AbortSignal,
): Promise<{ claimed: boolean; item?: TodoItem; reason?: string }> {
  return waitForNextIn(ctx, deps, await nextTarget(ctx, input), waitMs, gone);
}

/** {@link waitForNext} of a `next` already checked (`nextTarget`): a `done` with `next` checks it before it completes. */
export async function waitForNextIn(
  ctx: Ctx,
  deps: { hub: EventHub; waiters: Waiters },
  target: NextTarget,
  waitMs: number,
  gone: AbortSignal,
): Promise<{ claimed: boolean; item?: TodoItem; reason?: string }> {
  const w = new Waiter();
  const end = () => w.end();
  const timer = setTimeout(end, waitMs);
  gone.addEventListener('abort', end, { once: true });
  const untrackSession = deps.hub.trackSessionStream(target.actor, end);
  let q: TopicQueue | undefined;
  try {
    q = await deps.waiters.join(target.scope, w);
    for (;;) {
      if (gone.aborted) return { claimed: false };
      if (w.over) break;
      w.triedGen = q.gen;
      const r = await claimNextIn(ctx, target);
      if (r.claimed) {
        w.token = false;
        if (gone.aborted && r.item) await handBack(ctx, r.item);
        return r;
      }
      if (w.over) break;
      if (q.gen > w.triedGen) continue; // events came in during the try
      if (w.token) {
        w.token = false;
        q.pass();
      }
      await q.sleep(w);
    }
    await refuseStoppedSession(ctx.sql, target.actor);
    return { claimed: false };
  } finally {
    clearTimeout(timer);
    gone.removeEventListener('abort', end);
    untrackSession();
    if (q) deps.waiters.leave(target.scope, q, w);
  }
}

/**
 * Returns an item claimed for a client that has gone (`todo`, reason `waiter-gone`), through the
 * owner's reopen. Task Graph and metagit claims are left to their contracts (their lease and
 * interruption rules record them).
 */
async function handBack(ctx: Ctx, item: TodoItem): Promise<void> {
  if (isContractScope(item.scope)) return;
  await transitionTodo(ctx, item.id, 'todo', undefined, undefined, 'waiter-gone').catch(() => undefined);
}
