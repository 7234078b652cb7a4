/**
 * Waiting `next` (issue 19): `POST /v1/todos/next` with `waitMs` holds the request until an
 * eligible item appears in the scope, or the time runs out, instead of the agent polling.
 *
 * No polling loop in the server: the waiter joins the event hub's feed of the scope's topic
 * (`todo:<scope>`, the same feed the SSE streams of this replica share, woken by the same
 * doorbell and its backstop; src/events/events.hub.ts), and tries the one claim path
 * (`claimNext`) once at the start and again after each batch of events that could have made an
 * item eligible (anything but `claimed`). It subscribes *before* its first try, at the head, so an
 * item committed after that point reaches it as an event and one committed before is seen by the
 * try. Waiters woken together reach `next` together and share its group-commit batch; the claim's
 * guarded UPDATE hands each item to exactly one of them. A waiter holds no database connection
 * while it waits.
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
import { headCursor, topicOf } from '../events/events.repo.js';
import { resolveScope } from '../scopes/scopes.js';
import { claimNext, transitionTodo, type Ctx, type NextInput } from './todos.service.js';
import type { TodoItem } from './todos.view.js';

/** Every wait of one replica, so closing it can end them. */
export class Waiters {
  private readonly ends = new Set<() => void>();
  private closing = false;

  /** Ends every wait now (the replica is closing); later waits answer at once. */
  closeAll(): void {
    this.closing = true;
    for (const end of this.ends) end();
  }

  get size(): number {
    return this.ends.size;
  }

  /** @internal */
  track(end: () => void): () => void {
    if (this.closing) queueMicrotask(end);
    this.ends.add(end);
    return () => this.ends.delete(end);
  }
}

/** Events that cannot make an item eligible (the herd of a batch's claims wakes nobody). */
const NOT_A_WAKE = new Set(['claimed']);

/**
 * `next`, holding the request up to `waitMs` (≤ 60 000) until it claims: resolves like
 * `claimNext` (`{claimed:true, item}`, or `{claimed:false}` at the deadline, when `gone` fires or
 * the replica closes). `gone` is the client's connection closing. Errors: those of `claimNext`,
 * raised at the first try (an invalid scope is refused at once, never after the wait).
 */
export async function waitForNext(
  ctx: Ctx,
  deps: { hub: EventHub; waiters: Waiters },
  input: NextInput,
  waitMs: number,
  gone: AbortSignal,
): Promise<{ claimed: boolean; item?: TodoItem; reason?: string }> {
  const access = await resolveScope(ctx.sql, ctx.principal, input.scope);
  const request: NextInput = { ...input, scope: access.scope };
  let wake: (() => void) | undefined;
  let woken = false;
  let over = false;
  const ring = () => {
    woken = true;
    wake?.();
  };
  const stop = () => {
    over = true;
    wake?.();
  };
  const timer = setTimeout(stop, waitMs);
  gone.addEventListener('abort', stop, { once: true });
  const untrack = deps.waiters.track(stop);
  const sub: Subscriber = {
    cursor: await headCursor(ctx.sql),
    deliver(events) {
      if (over) return false;
      const last = events[events.length - 1];
      sub.cursor = { tx: last.tx, id: last.id };
      if (events.some((e) => !NOT_A_WAKE.has(e.event))) ring();
      return true;
    },
  };
  let leave: (() => void) | undefined;
  try {
    leave = await deps.hub.catchUp(topicOf(access.scope), sub, () => !over);
    for (;;) {
      if (gone.aborted) return { claimed: false };
      woken = false;
      const r = await claimNext(ctx, request);
      if (r.claimed) {
        if (gone.aborted && r.item) await handBack(ctx, r.item);
        return r;
      }
      if (over) return r;
      if (!woken) await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
      if (over && !woken) return r;
    }
  } finally {
    clearTimeout(timer);
    gone.removeEventListener('abort', stop);
    untrack();
    leave?.();
  }
}

/**
 * Returns an item claimed for a client that has gone (`todo`, reason `waiter-gone`), through the
 * owner's reopen. Task Graph and metagit claims are left to their contracts (their lease and
 * interruption rules record them).
 */
async function handBack(ctx: Ctx, item: TodoItem): Promise<void> {
  if (item.scope.startsWith('graph:') || item.scope.startsWith('metagit:')) return;
  await transitionTodo(ctx, item.id, 'todo', undefined, 'waiter-gone').catch(() => undefined);
}
