import { withTx } from '../db/tx.js';
import { appendEvents } from '../events/events.repo.js';
import { DomainError, fail } from '../http/errors.js';
import { batchedDone } from './todos.batch.js';
import { backToTodoEvent, effectiveStatus, selectItems, toItem, type TodoItem, type TodoRow } from './todos.view.js';
import { actorOf } from '../auth/actor.js';
import { completeMany, heartbeatItem, transitionItem, type TransitionTarget, TRANSITION_FROM } from './todos.repo.js';
import { me, lease, emitted, visibleRow, type Ctx } from './todos.context.js';
import { checkResult, checkNote, assertNotGraphManaged } from './todos.checks.js';
import { cascadeRows } from './todos.dependencies.js';

type Target = TransitionTarget;

/**
 * Moves an item along the seed's state machine: done (from in-progress or blocked; owner kept;
 * with an optional `result`), block (from in-progress; a non-empty note replaces the
 * note in the same statement), reopen (from anything but todo; owner cleared; a done item's result
 * is cleared with it, by the trigger of migrations/0014, since the item is no longer done). Who:
 * the owner, the scope's override authority, or a user. Completing cascades to dependents in the
 * same transaction; reopening a done item re-blocks its unclaimed, ready dependents. `reason`,
 * when given, is recorded in the item's event (e.g. `waiter-gone`). Errors: 404 todo_not_found, 403 forbidden, 409 lease_expired, 409 invalid_transition,
 * 422 note_too_long, 422 result_too_large.
 */
export async function transitionTodo(ctx: Ctx, id: string, to: Target, note?: string, doneResult?: unknown, reason?: string): Promise<TodoItem> {
  const newNote = to === 'blocked' && note ? checkNote(ctx, note) : null;
  const self = me(ctx);
  const leaseMs = lease(ctx);
  if (to === 'done') return completeTodo(ctx, id, self, leaseMs, checkResult(ctx, doneResult));
  const result = await withTx(ctx.sql, async (tx) => {
    // Fast path for the owner (the hot path: no scope lookup); otherwise check authority first.
    let override = false;
    let attempt = self ? await transitionItem(tx, { id, to, note: newNote, actor: self, override: false, leaseMs }) : undefined;
    if (!attempt) {
      const v = await visibleRow(ctx, tx, id);
      override = v.override;
      if (override) attempt = await transitionItem(tx, { id, to, note: newNote, actor: self, override: true, leaseMs });
      if (!attempt) return { error: v.row, override };
    }
    const { scope, old_status: oldStatus } = attempt;
    const events: { event: string; row: TodoRow }[] = [];
    let flipped: TodoRow[] = [];
    if (to === 'todo' && oldStatus === 'done') flipped = await cascadeRows(tx, id, 1);
    const [fresh] = await selectItems(tx, leaseMs, [id]);
    const name = to === 'todo' ? backToTodoEvent(fresh) : to;
    events.push({ event: name, row: fresh });
    for (const f of flipped) events.push({ event: 'dependency-blocked', row: f });
    const written = emitted(ctx, scope, events);
    if (reason && written[0]) written[0].payload = { ...written[0].payload, reason };
    await appendEvents(tx, fresh.team_id, written, actorOf(ctx.principal));
    return { item: fresh };
  });
  if ('item' in result) return toItem(result.item!);
  refuseTransition(id, to, self, result.error!, result.override);
}

/**
 * `done`, the claim cycle's second half, in one round trip: the database function `coord_done_many`
 * (migrations/0004; a lone `done` is a batch of one) applies the guarded transition, the cascade and
 * the events in one call.
 * The owner's call needs no scope lookup and shares a round trip with concurrent owners' calls
 * (group commit, src/todos/todos.batch.ts); anyone else is checked for override authority first.
 */
async function completeTodo(ctx: Ctx, id: string, self: string | null, leaseMs: number, result: unknown): Promise<TodoItem> {
  const mine = self
    ? await batchedDone(ctx.sql, ctx.config.groupCommitMax, {
        id,
        actor: self,
        by: actorOf(ctx.principal),
        leaseMs,
        emitEvents: ctx.config.todo.emitEvents,
        result,
      })
    : undefined;
  if (mine) return toItem(mine);
  const v = await visibleRow(ctx, ctx.sql, id);
  if (v.override) {
    const [theirs] = await completeMany(
      ctx.sql,
      [{ id, actor: self, by: actorOf(ctx.principal), leaseMs, emitEvents: ctx.config.todo.emitEvents, result }],
      true,
    );
    if (theirs) return toItem(theirs);
  }
  refuseTransition(id, 'done', self, v.override ? (await visibleRow(ctx, ctx.sql, id)).row : v.row, v.override);
}

/** Says why a guarded transition did not apply: lease expired, not permitted, or wrong state. */
function refuseTransition(id: string, to: Target, self: string | null, r: TodoRow, override: boolean): never {
  assertNotGraphManaged(r.scope); // their state is the graph contract's: run, complete, fail, stop, resume
  const isOwner = self !== null && r.owner === self;
  if (isOwner && r.status === 'in-progress' && r.lease_expired) {
    fail('lease_expired', `the claim lease on todo "${id}" expired at ${r.lease_expires_at?.toISOString()}; claim it again`);
  }
  if (!isOwner && !override) {
    fail('forbidden', "only the owner, the scope's override authority, or the human may transition this item");
  }
  const hint = to === 'done' && r.status === 'todo' ? ` (claim it first: coord todo claim ${id})` : '';
  throw new DomainError(
    'invalid_transition',
    `todo "${id}" cannot move to "${to}" from its current state (only from ${TRANSITION_FROM[to].join(', ')})${hint}`,
    {
      itemStatus: effectiveStatus(r.status, r.unfinished_deps),
    },
  );
}

/**
 * Extends the caller's claim lease (`POST /v1/todos/{id}/heartbeat`, Coord's addition to the seed
 * for long work). Owner only; no revision bump and no event. Errors: 404, 403 forbidden,
 * 409 lease_expired, 409 invalid_transition (not in progress).
 */
export async function heartbeatTodo(ctx: Ctx, id: string): Promise<TodoItem> {
  const self = me(ctx);
  const leaseMs = lease(ctx);
  const mine = self ? await heartbeatItem(ctx.sql, id, self, leaseMs) : undefined;
  if (mine) return toItem(mine);
  const { row } = await visibleRow(ctx, ctx.sql, id);
  if (row.owner !== self) fail('forbidden', 'only the owner may heartbeat its claim');
  if (row.status === 'in-progress' && row.lease_expired) fail('lease_expired', `the claim lease on todo "${id}" has expired; claim it again`);
  throw new DomainError('invalid_transition', `todo "${id}" is not in progress`, { itemStatus: effectiveStatus(row.status, row.unfinished_deps) });
}
