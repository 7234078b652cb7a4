/**
 * Every Task Graph v1 execution write goes through {@link withLockedGraph}: one transaction that
 * holds the graph lock, reads one snapshot, records stranded dispatches, runs the operation, and
 * writes the contract's lifecycle events for exactly what changed (seed 002; docs/seeds/task-graph-v1.md §3,
 * docs/seeds/task-graph-v1.md §4, §7; docs/architecture.md §D3, §D4, §D8).
 *
 * Why one door. The contract's invariants are cross-row: `maxConcurrency` counts RUNNING siblings,
 * write intent is checked against every RUNNING subtask, a SUCCEEDED or FAILED prerequisite
 * re-derives its dependents, the parent state follows all of them. At READ COMMITTED they hold
 * only if every writer of a graph serialises on one lock (`graphLock`, the lock
 * create takes) and decides from a snapshot read after taking it. Events come from diffing the
 * durable derivation before and after the operation, so:
 * - the requested subtasks' transitions come first, then derived ones in id order (docs/seeds/task-graph-v1.md §4);
 * - a repeated identical operation changes nothing and emits nothing (idempotent, docs/seeds/task-graph-v1.md §3);
 * - `TASK_GRAPH_STATUS_CHANGED` is written exactly when the derived parent state changes.
 *
 * Stranded dispatches (docs/architecture.md §D8). A RUNNING subtask whose session stopped or whose claim
 * lease expired reads FAILED at once (graphs.view.ts); the first locked write after that (any
 * operation on the graph, or the sweep) records it: outcome FAILED with `lastError.code`
 * `SESSION_INTERRUPTED`, the engine row blocked (owner kept), the dispatch's session stopped, and
 * its RUNNING → FAILED event. It never becomes READY by itself: resume is explicit.
 */
import type postgres from 'postgres';
import { type Principal, systemPrincipal } from '../../auth/principal.js';
import type { Db } from '../../db/client.js';
import { lockXact } from '../../db/locks.js';
import { withTx } from '../../db/tx.js';
import { appendEvents, emitsFor, topicOf, type EventInput } from '../../events/events.repo.js';
import { DomainError } from '../../http/errors.js';
import { markStopped, type StopHook } from '../../sessions/sessions.service.js';
import type { Ctx } from '../../todos/todos.context.js';
import { eventPayload } from '../../todos/todos.view.js';
import { deriveFrontier, deriveParentState, type DerivedSubtaskState, type TaskGraphState } from '../contract/index.js';
import { INTERRUPTED_CODE, runtimeWorktree, subtaskTransitions, type SubtaskTransition } from '../contract/execution.js';
import { isTaskId } from '../contract/ids.js';
import { displayValue } from '../contract/text.js';
import { graphNotFound, loadSubtaskRows, loadVisibleGraph } from '../graphs.repo.js';
import { graphIdOfScopeSql, graphLock, isGraphScopeSql } from '../graphs.repo.js';
import { interruptedReason, storedSubtasks, toRecord, type GraphRecordView, type GraphRow, type SubtaskRow } from '../graphs.view.js';
import { actorOf } from '../../auth/actor.js';
import { blockItems } from '../../todos/todos.repo.js';

/** The graph as the operation sees it, under the lock, after stranded dispatches were recorded. */
export interface LockedGraph {
  tx: postgres.TransactionSql;
  ctx: Ctx;
  graph: GraphRow;
  rows: SubtaskRow[];
  /** The durable derivation (states, reasons), sorted by id. */
  derived: DerivedSubtaskState[];
  /** The row of `subtaskId`, or 404 `TASK_NOT_FOUND`. */
  row(subtaskId: string): SubtaskRow;
  /** The derived state of `subtaskId`. */
  state(subtaskId: string): DerivedSubtaskState;
}

/** What an operation returns to {@link withLockedGraph}. */
export interface Operation<T> {
  result: T;
  /** The subtasks the operation acted on (their transitions come first, `derived: false`). */
  direct?: string[];
  /** Graph-level records changed (base, integration, review): bump the revision. */
  graphChanged?: boolean;
  /** Extra lifecycle events (integration, review, cleanup), written before the state events. */
  events?: EventInput[];
  /** The subtask that triggered the change, for the parent's status event. */
  trigger?: string | null;
}

/** The outcome of a locked write: the operation's result, what changed, and the fresh record. */
export interface Locked<T> {
  result: T;
  transitions: SubtaskTransition[];
  /** The subtasks recorded FAILED because their dispatch was stranded. */
  interrupted: string[];
  parent: { from: TaskGraphState; to: TaskGraphState };
  graph: GraphRecordView;
  /** The subtask rows the record was built from (read under the lock, after the operation). */
  rows: SubtaskRow[];
  changed: boolean;
}

/** The principal the sweep acts as when it records stranded dispatches of a graph of `teamId`. */
export const sweepPrincipal = (teamId: string): Principal => systemPrincipal('sweep:graph-interruptions', teamId);

/** A contract refusal at `stage` as a problem with the contract's members (docs/seeds/task-graph-v1.md §12). */
export function refuse(
  code: 'TASK_STATE_CONFLICT' | 'DISPATCH_INTERRUPTED' | 'TASK_ALREADY_RUNNING' | 'TASK_NOT_FOUND' | 'AGENT_RUNTIME_ERROR' | 'INVALID_AGENT_CONFIG',
  stage: string,
  message: string,
  facts: { parentTaskId: string; subtaskId?: string | null; recoverable?: boolean; details?: Record<string, unknown> },
): never {
  throw new DomainError(code, message, {
    stage,
    message,
    recoverable: facts.recoverable ?? code !== 'TASK_NOT_FOUND',
    taskId: facts.parentTaskId,
    details: { parentTaskId: facts.parentTaskId, subtaskId: facts.subtaskId ?? null, ...(facts.details ?? {}) },
  });
}

function durableDerivation(graph: GraphRow, rows: readonly SubtaskRow[]): DerivedSubtaskState[] {
  return deriveFrontier({ maxConcurrency: graph.max_concurrency, subtasks: storedSubtasks(rows, true) }).subtasks;
}

function parentStateOf(graph: GraphRow, derived: readonly DerivedSubtaskState[]): TaskGraphState {
  return deriveParentState(
    graph.parent.state ?? 'CREATED',
    derived.map((subtask) => subtask.state),
  );
}

/**
 * Records every stranded dispatch of the graph (see the file header): outcome FAILED with the
 * interruption facts, the engine row blocked with its owner kept, the dispatch session stopped,
 * the engine's `blocked` event. Returns the subtask ids it recorded.
 */
async function recordInterruptions(tx: Db, ctx: Ctx, graph: GraphRow, rows: readonly SubtaskRow[]): Promise<string[]> {
  const stranded = rows.filter((row) => row.outcome === null && row.status === 'in-progress' && row.interrupted);
  if (stranded.length === 0) return [];
  for (const row of stranded) await recordInterrupted(tx, graph.team_id, graph.id, row, interruptedReason(row.interrupted!), row.interrupted!);
  const todoIds = stranded.map((row) => row.todo_id);
  const blocked = await blockItems(tx, todoIds, { onlyInProgress: true });
  await markStopped(
    tx,
    stranded.map((row) => row.session_id).filter((id): id is string => !!id),
    actorOf(ctx.principal),
  );
  if (emitsFor(graph.scope, ctx.config.todo.emitEvents)) {
    await appendEvents(
      tx,
      graph.team_id,
      blocked.map((r) => ({ topic: topicOf(r.scope), event: 'blocked', subjectId: r.id, payload: { ...eventPayload('blocked', r), reason: 'interrupted' } })),
      actorOf(ctx.principal),
    );
  }
  return stranded.map((row) => row.subtask_id);
}

/**
 * Records one dispatch FAILED `interrupted` on its subtask row (outcome, reason, `lastError` with
 * the contract's error facts: graph, subtask, Agent, session, worktree, attempt). The engine row
 * and the session are the caller's to change.
 */
export async function recordInterrupted(tx: Db, teamId: string, graphId: string, row: SubtaskRow, message: string, cause: string): Promise<void> {
  const lastError = {
    code: INTERRUPTED_CODE,
    classification: 'interrupted',
    message,
    cause,
    stage: 'graph-recovery',
    recoverable: true,
    parentTaskId: graphId,
    subtaskId: row.subtask_id,
    agent: row.implementer,
    sessionId: row.session_id ?? null,
    worktree: runtimeWorktree(graphId, row.subtask_id).path,
    attempt: row.attempt ?? 0,
  };
  await tx`
    update graph_subtasks set outcome = 'FAILED', reason = ${JSON.stringify(message)}::text::jsonb,
           last_error = ${JSON.stringify(lastError)}::text::jsonb, updated_at = now()
     where team_id = ${teamId} and graph_id = ${graphId} and subtask_id = ${row.subtask_id}`;
}

/** The contract's state event of one transition (docs/seeds/task-graph-v1.md §4), on the graph's topic. */
function transitionEvent(graph: GraphRow, row: SubtaskRow, t: SubtaskTransition, parentState: TaskGraphState, trigger: string | null): EventInput {
  const worktree = runtimeWorktree(graph.id, row.subtask_id);
  const dispatched = (row.attempt ?? 0) > 0;
  return {
    topic: topicOf(graph.scope),
    event: 'TASK_GRAPH_SUBTASK_STATE_CHANGED',
    subjectId: row.todo_id,
    payload: {
      event: 'TASK_GRAPH_SUBTASK_STATE_CHANGED',
      // The contract object is the subtask (`<parentTaskId>/<subtaskId>`) and its revision the
      // graph's, bumped by every write: per subtask, later events always carry a higher revision.
      id: `${graph.id}/${row.subtask_id}`,
      scope: graph.scope,
      status: t.to,
      ...(row.owner ? { owner: row.owner } : {}),
      revision: graph.revision,
      todoId: row.todo_id,
      todoRevision: row.todo_revision ?? 0,
      parentTaskId: graph.id,
      subtaskId: row.subtask_id,
      from: t.from,
      to: t.to,
      reason: t.reason,
      evidence: row.evidence ?? null,
      parentState,
      triggerSubtaskId: trigger ?? row.subtask_id,
      derived: t.derived,
      baseCommit: graph.base_commit ?? null,
      worktreePath: dispatched ? worktree.path : null,
      branch: dispatched ? worktree.branch : null,
      ref: dispatched ? worktree.ref : null,
      sessionId: row.session_id ?? null,
      attempt: row.attempt ?? 0,
      implementationCommit: row.implementation_commit ?? null,
      agent: t.derived ? graph.parent.planner : row.implementer,
      role: t.derived ? 'planner' : 'implementer',
    },
  };
}

/**
 * Runs `operation` on graph `id` under the graph lock (see the file header) and returns its result
 * with the transitions it caused and the fresh record. 404 `graph_not_found` when the caller may
 * not see the graph. The operation throws a `DomainError` to refuse; then nothing is written
 * (not even the recording of stranded dispatches, which the next write or the sweep repeats).
 */
export async function withLockedGraph<T>(ctx: Ctx, id: string, operation: (g: LockedGraph) => Promise<Operation<T>>): Promise<Locked<T>> {
  if (!isTaskId(id)) graphNotFound(id);
  const leaseMs = ctx.config.todo.claimLeaseMs;
  return withTx(ctx.sql, async (tx) => {
    await lockXact(tx, graphLock(ctx.principal.teamId, id));
    const graph = await loadVisibleGraph(tx, ctx.principal, id);
    const teamId = graph.team_id;
    const initialRows = await loadSubtaskRows(tx, teamId, id, leaseMs, true);
    const before = durableDerivation(graph, initialRows);
    const parentFrom = parentStateOf(graph, before);
    const interrupted = await recordInterruptions(tx, ctx, graph, initialRows);
    const rows = interrupted.length ? await loadSubtaskRows(tx, teamId, id, leaseMs, true) : initialRows;
    const derived = interrupted.length ? durableDerivation(graph, rows) : before;
    const byId = new Map(rows.map((row) => [row.subtask_id, row]));
    const derivedById = new Map(derived.map((subtask) => [subtask.id, subtask]));
    const locked: LockedGraph = {
      tx,
      ctx,
      graph,
      rows,
      derived,
      row(subtaskId) {
        const row = byId.get(subtaskId);
        if (!row)
          refuse('TASK_NOT_FOUND', 'graph-scheduling', `Task Graph subtask not found: ${id}/${displayValue(subtaskId)}`, {
            parentTaskId: id,
            recoverable: false,
          });
        return row;
      },
      state(subtaskId) {
        locked.row(subtaskId);
        return derivedById.get(subtaskId)!;
      },
    };
    const parentMid = parentStateOf(graph, derived); // before the operation: it may change graph.parent
    const op = await operation(locked);
    const direct = op.direct ?? [];
    const touched = interrupted.length > 0 || direct.length > 0 || op.graphChanged === true;
    const [fresh] = touched
      ? await tx<GraphRow[]>`
          select g.team_id, g.id, g.scope, g.parent, g.max_concurrency, g.intent_map, g.created_by, g.created_at, g.updated_at, g.revision,
                 g.base_commit, g.integration, g.review
            from graphs g where g.team_id = ${teamId} and g.id = ${id}`
      : [graph];
    const afterRows = touched ? await loadSubtaskRows(tx, teamId, id, leaseMs, true) : rows;
    const after = touched ? durableDerivation(fresh, afterRows) : before;
    // Two steps, each with its own events, so the stream never shows an impossible transition
    // (a stranded RUNNING that the same call resumes reads RUNNING → FAILED, then FAILED → READY).
    const recorded = subtaskTransitions(before, derived, interrupted);
    const operated = subtaskTransitions(derived, after, direct);
    const parentTo = parentStateOf(fresh, after);
    const transitions = [...recorded, ...operated];
    const changed = transitions.length > 0 || parentTo !== parentFrom || op.graphChanged === true;
    let record = fresh;
    if (changed) {
      const [updated] = await tx<GraphRow[]>`
        update graphs set parent = parent || jsonb_build_object('state', ${parentTo}::text), updated_at = now(), revision = revision + 1
         where team_id = ${teamId} and id = ${id}
        returning team_id, id, scope, parent, max_concurrency, intent_map, created_by, created_at, updated_at, revision, base_commit, integration, review`;
      record = updated;
      const afterById = new Map(afterRows.map((row) => [row.subtask_id, row]));
      const status = (from: TaskGraphState, to: TaskGraphState, trigger: string | null): EventInput => ({
        topic: topicOf(record.scope),
        event: 'TASK_GRAPH_STATUS_CHANGED',
        subjectId: id,
        payload: {
          event: 'TASK_GRAPH_STATUS_CHANGED',
          id,
          scope: record.scope,
          status: to,
          revision: record.revision,
          parentTaskId: id,
          from,
          to,
          subtaskId: trigger,
        },
      });
      const events: EventInput[] = [];
      const interruptTrigger = interrupted[0] ?? null;
      for (const t of recorded) events.push(transitionEvent(record, afterById.get(t.subtaskId)!, t, parentMid, interruptTrigger));
      if (parentMid !== parentFrom) events.push(status(parentFrom, parentMid, interruptTrigger));
      events.push(...(op.events ?? []));
      const trigger = op.trigger ?? direct[0] ?? null;
      for (const t of operated) events.push(transitionEvent(record, afterById.get(t.subtaskId)!, t, parentTo, trigger));
      if (parentTo !== parentMid) events.push(status(parentMid, parentTo, trigger));
      await appendEvents(tx, teamId, events, actorOf(ctx.principal));
    }
    return {
      result: op.result,
      transitions,
      interrupted,
      parent: { from: parentFrom, to: parentTo },
      graph: toRecord(record, afterRows),
      rows: afterRows,
      changed,
    };
  });
}

// A stopped session's RUNNING dispatches are recorded at once, not at the next sweep.
// buildApp registers it (src/modules.ts `wireModules`).
export const graphStopHook: StopHook = async (sql, config, sessionId) => {
  const graphs = await sql<{ team_id: string; id: string }[]>`
    select distinct team_id, ${graphIdOfScopeSql(sql, sql`scope`)} as id from todos
     where owner = ${sessionId} and status = 'in-progress' and ${isGraphScopeSql(sql, sql`scope`)}`;
  for (const g of graphs) await withLockedGraph({ sql, config, principal: sweepPrincipal(g.team_id) }, g.id, async () => ({ result: null }));
};
