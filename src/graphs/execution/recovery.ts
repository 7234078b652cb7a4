/**
 * Recovery, resume, stop and cleanup (seed 002 "Durable recovery, explicit resume, stop, and
 * cleanup"; docs/seeds/task-graph-v1.md §10). Every operation is explicit and idempotent: a repeat changes
 * nothing and emits nothing, and none of them retries, relaunches or replays anything
 * (`automaticRetry: false` in every result).
 *
 * - `recover` reconciles the durable facts: stranded dispatches (session stopped, lease expired)
 *   are recorded FAILED `interrupted` — withLockedGraph does that for every write — and a RUNNING
 *   subtask the runner reports dead (`observations[].processAlive: false`, e.g. after the runner
 *   was killed) is recorded the same way. Completion is never inferred: a subtask becomes
 *   SUCCEEDED only through `complete` with verified evidence.
 * - `resume` clears the recovery gate of a FAILED or STOPPED subtask: it reads READY (or WAITING)
 *   again and its dependents are re-derived; dispatch stays an explicit later run or claim. A
 *   RUNNING subtask with a healthy session is left as it is (`reused-healthy-session`).
 * - `stop` makes active subtasks (RUNNING, READY, WAITING, dependency-BLOCKED) STOPPED and stops
 *   their dispatch sessions, so their runners learn it from the event stream (the session's
 *   streams end, its token stops working). Whole-graph stop leaves the graph STOPPED.
 * - `cleanup` records the runner's per-subtask outcomes (CLEANED / FAILED / SKIPPED) of removing
 *   the worktrees it owns; a RUNNING subtask is always recorded SKIPPED.
 */
import { appendEvents, emitsFor, topicOf, type EventInput } from '../../events/events.repo.js';
import { markStopped } from '../../sessions/sessions.service.js';
import { isDeepStrictEqual } from 'node:util';
import type { Ctx } from '../../todos/todos.context.js';
import { fail } from '../../http/errors.js';
import { backToTodoEvent, eventPayload } from '../../todos/todos.view.js';
import { INTEGRATION_NAME, runtimeWorktree } from '../contract/execution.js';
import { boundReason } from '../contract/text.js';
import { recoveryEntries, recoveryEntry, type GraphRow, type SubtaskRow } from '../graphs.view.js';
import type { SubtaskState } from '../contract/index.js';
import { actsOnSubtask, requireActor, requireOwner } from './authority.js';
import { blockEngineRow } from './completion.js';
import { recordInterrupted, withLockedGraph, type LockedGraph } from './locked.js';
import { actorOf } from '../../auth/actor.js';
import { reopenItems } from '../../todos/todos.repo.js';

/** One subtask's outcome in the shared result of recover/resume/stop/cleanup (docs/seeds/task-graph-v1.md §10). */
interface Outcome {
  subtaskId: string;
  state: SubtaskState;
  status: SubtaskState;
  classification: string;
  action: string;
  changed: boolean;
  idempotent: boolean;
  recoverable: boolean;
  session: { id: string; state: string | null } | null;
  worktree: { path: string; branch: string; ref: string };
  error: { code: string; message: string } | null;
  cleanup: unknown;
}

function outcomeOf(graph: GraphRow, row: SubtaskRow, state: string, action: string, changed: boolean, error: Outcome['error'] = null): Outcome {
  const entry = recoveryEntry(graph, row, state as SubtaskState);
  return {
    subtaskId: row.subtask_id,
    state: state as SubtaskState,
    status: state as SubtaskState,
    classification: entry.classification,
    action,
    changed,
    idempotent: !changed,
    recoverable: entry.recoverable,
    session: row.session_id ? { id: row.session_id, state: row.session_status ?? null } : null,
    worktree: runtimeWorktree(graph.id, row.subtask_id),
    error,
    cleanup: row.cleanup ?? null,
  };
}

/** Builds the outcomes from the fresh record after the operation (states as the record shows them). */
function outcomes(
  after: { subtasks: { subtaskId: string; state: string }[] },
  graph: GraphRow,
  rows: Map<string, SubtaskRow>,
  targets: readonly string[],
  actions: Map<string, { action: string; changed: boolean; error?: Outcome['error'] }>,
): Outcome[] {
  const states = new Map(after.subtasks.map((s) => [s.subtaskId, s.state]));
  return targets.map((id) => {
    const a = actions.get(id) ?? { action: 'none', changed: false };
    return outcomeOf(graph, rows.get(id)!, states.get(id) ?? 'PENDING', a.action, a.changed, a.error ?? null);
  });
}

function targetsOf(g: LockedGraph, subtaskId: string | undefined): string[] {
  if (subtaskId !== undefined) return [g.row(subtaskId).subtask_id];
  return g.derived.map((s) => s.id);
}

const stopSessions = (g: LockedGraph, ids: string[]) => markStopped(g.tx, ids, actorOf(g.ctx.principal));

/** A RUNNING subtask recorded FAILED `interrupted` because the runner reported its process dead. */
async function recordDead(g: LockedGraph, row: SubtaskRow, detail: string): Promise<void> {
  await recordInterrupted(g.tx, g.graph.team_id, g.graph.id, row, `Interrupted: ${detail}; resume it to dispatch again.`, 'runner-reported');
  await blockEngineRow(g, row, row.owner ?? g.ctx.principal.id, 'interrupted');
  if (row.session_id) await stopSessions(g, [row.session_id]);
}

/** A runner's observation of one RUNNING subtask on its machine. */
export interface Observation {
  subtaskId: string;
  processAlive?: boolean;
  worktreeExists?: boolean;
}

/**
 * `POST /v1/graphs/{id}/recover` (optional `subtaskId`, optional runner `observations`): see the
 * file header. Owners, or for one subtask whoever may act on it. Returns the shared result with
 * `before`, `recovery[]` and per-subtask outcomes.
 */
export async function recoverGraph(ctx: Ctx, id: string, input: { subtaskId?: string; observations?: Observation[] }) {
  let before: ReturnType<typeof recoveryEntries> = [];
  const out = await withLockedGraph(ctx, id, async (g) => {
    if (input.subtaskId === undefined) requireOwner(ctx.principal, g.graph, 'recover it');
    else requireActor(ctx.principal, g.graph, g.row(input.subtaskId), 'recover');
    const states = new Map(g.derived.map((s) => [s.id, s.state as string]));
    before = recoveryEntries(g.graph, g.rows, states);
    const targets = targetsOf(g, input.subtaskId);
    const direct: string[] = [];
    for (const obs of input.observations ?? []) {
      if (!targets.includes(obs.subtaskId)) continue;
      const row = g.row(obs.subtaskId);
      if (g.state(obs.subtaskId).state !== 'RUNNING') continue;
      if (obs.processAlive === false || obs.worktreeExists === false) {
        const detail =
          obs.processAlive === false ? 'the runner found no live implementer process for the dispatch' : 'the runner found no worktree for the dispatch';
        await recordDead(g, row, detail);
        direct.push(obs.subtaskId);
      }
    }
    return { result: { targets }, direct };
  });
  const rows = new Map(out.rows.map((r) => [r.subtask_id, r]));
  const changedIds = new Set([...out.interrupted, ...out.transitions.filter((t) => !t.derived).map((t) => t.subtaskId)]);
  const actions = new Map(out.result.targets.map((sid) => [sid, { action: changedIds.has(sid) ? 'recorded-failed' : 'none', changed: changedIds.has(sid) }]));
  return shared('task.graph-recover', id, out, rows, out.result.targets, actions, { before });
}

/**
 * `POST /v1/graphs/{id}/resume` (`subtaskId`): see the file header. Who: authority.ts "act on a
 * subtask". Actions: `ready-for-explicit-dispatch` (FAILED/STOPPED → READY or WAITING, changed,
 * `dispatchRequired: true`), `reused-healthy-session` (RUNNING and healthy; nothing changes), or
 * `none` with an error object (nothing to resume; a repeat lands here).
 */
export async function resumeSubtask(ctx: Ctx, id: string, input: { subtaskId: string }) {
  const out = await withLockedGraph<{ action: string; changed: boolean; error: Outcome['error'] }>(ctx, id, async (g) => {
    const row = g.row(input.subtaskId);
    requireActor(ctx.principal, g.graph, row, 'resume');
    const state = g.state(input.subtaskId).state;
    if (state === 'RUNNING') return { result: { action: 'reused-healthy-session', changed: false, error: null } };
    if (state !== 'FAILED' && state !== 'STOPPED') {
      return {
        result: {
          action: 'none',
          changed: false,
          error: {
            code: 'TASK_STATE_CONFLICT',
            message: `Task Graph subtask ${id}/${input.subtaskId} is ${state}; only a FAILED or STOPPED subtask can be resumed.`,
          },
        },
      };
    }
    await g.tx`
      update graph_subtasks set outcome = null, reason = null, updated_at = now()
       where team_id = ${g.graph.team_id} and graph_id = ${id} and subtask_id = ${input.subtaskId}`;
    const reopened = await reopenItems(g.tx, [row.todo_id]);
    if (emitsFor(g.graph.scope, ctx.config.todo.emitEvents)) {
      await appendEvents(
        g.tx,
        g.graph.team_id,
        reopened.map((r) => {
          const name = backToTodoEvent(r);
          return { topic: topicOf(r.scope), event: name, subjectId: r.id, payload: { ...eventPayload(name, r), reason: 'resumed' } };
        }),
        actorOf(ctx.principal),
      );
    }
    if (row.session_id) await stopSessions(g, [row.session_id]);
    return { result: { action: 'ready-for-explicit-dispatch', changed: true, error: null }, direct: [input.subtaskId] };
  });
  const rows = new Map(out.rows.map((r) => [r.subtask_id, r]));
  const r = out.result;
  const actions = new Map([[input.subtaskId, { action: r.action, changed: r.changed, error: r.error }]]);
  return shared('task.graph-resume', id, out, rows, [input.subtaskId], actions, { dispatchRequired: r.action === 'ready-for-explicit-dispatch' });
}

const STOPPABLE = new Set(['RUNNING', 'READY', 'WAITING', 'PENDING']);

/**
 * `POST /v1/graphs/{id}/stop` (`reason`, optional `subtaskId`): see the file header. Whole graph:
 * owners only; one subtask: whoever may act on it. A subtask that is not active is left alone
 * (`action: none`); dependency-BLOCKED subtasks are stopped only by a whole-graph stop.
 */
export async function stopGraph(ctx: Ctx, id: string, input: { reason: string; subtaskId?: string }) {
  const reason = boundReason(input.reason) ?? 'stopped';
  const out = await withLockedGraph(ctx, id, async (g) => {
    if (input.subtaskId === undefined) requireOwner(ctx.principal, g.graph, 'stop it');
    else requireActor(ctx.principal, g.graph, g.row(input.subtaskId), 'stop');
    const targets = targetsOf(g, input.subtaskId);
    const direct: string[] = [];
    const sessions: string[] = [];
    for (const sid of targets) {
      const derived = g.state(sid);
      const active = STOPPABLE.has(derived.state) || (input.subtaskId === undefined && derived.state === 'BLOCKED' && derived.derived);
      if (!active) continue;
      const row = g.row(sid);
      await g.tx`
        update graph_subtasks set outcome = 'STOPPED', reason = ${JSON.stringify(`Stopped: ${reason}`)}::text::jsonb, updated_at = now()
         where team_id = ${g.graph.team_id} and graph_id = ${id} and subtask_id = ${sid}`;
      await blockEngineRow(g, row, row.owner ?? ctx.principal.id, 'stopped');
      if (derived.state === 'RUNNING' && row.session_id) sessions.push(row.session_id);
      direct.push(sid);
    }
    await stopSessions(g, sessions);
    return { result: { targets }, direct };
  });
  const rows = new Map(out.rows.map((r) => [r.subtask_id, r]));
  const changed = new Set(out.transitions.filter((t) => !t.derived).map((t) => t.subtaskId));
  const actions = new Map(out.result.targets.map((sid) => [sid, { action: changed.has(sid) ? 'stopped' : 'none', changed: changed.has(sid) }]));
  return shared('task.graph-stop', id, out, rows, out.result.targets, actions, { reason });
}

/** One cleanup outcome the runner reports. */
export interface CleanupReport {
  subtaskId: string;
  status: 'CLEANED' | 'FAILED' | 'SKIPPED';
  error?: { code: string; message: string };
}

/**
 * `POST /v1/graphs/{id}/cleanup` (runner-reported `outcomes[]`, optional `integration` outcome):
 * records each subtask's cleanup fact `{status, error, at}`; a RUNNING subtask is recorded
 * SKIPPED whatever was reported. An identical repeat is `idempotent: true` and writes nothing;
 * a change writes one `TASK_GRAPH_CLEANUP_RECORDED` event. Owners, or for reports naming one
 * subtask only, whoever may act on it. The subtask states never change.
 */
export async function cleanupGraph(
  ctx: Ctx,
  id: string,
  input: { subtaskId?: string; outcomes: CleanupReport[]; integration?: Omit<CleanupReport, 'subtaskId'> },
) {
  const seen = new Set<string>();
  for (const o of input.outcomes) {
    if (seen.has(o.subtaskId)) fail('validation_failed', `cleanup reports subtask "${o.subtaskId.slice(0, 128)}" twice; report each once`);
    if (input.subtaskId !== undefined && o.subtaskId !== input.subtaskId) {
      fail(
        'validation_failed',
        `cleanup of subtask "${input.subtaskId.slice(0, 128)}" reports another subtask ("${o.subtaskId.slice(0, 128)}"); drop subtaskId to report several`,
      );
    }
    seen.add(o.subtaskId);
  }
  const out = await withLockedGraph(ctx, id, async (g) => {
    const named = new Set(input.outcomes.map((o) => o.subtaskId));
    if (input.subtaskId !== undefined) named.add(input.subtaskId);
    const oneSubtask = named.size === 1 && input.integration === undefined;
    if (oneSubtask) {
      const only = g.row([...named][0]);
      if (!actsOnSubtask(ctx.principal, g.graph, only)) requireOwner(ctx.principal, g.graph, 'record cleanup');
    } else {
      requireOwner(ctx.principal, g.graph, 'record cleanup');
    }
    const recorded: { subtaskId: string; status: string; changed: boolean }[] = [];
    for (const report of input.outcomes) {
      if (input.subtaskId !== undefined && report.subtaskId !== input.subtaskId) continue;
      const row = g.row(report.subtaskId);
      const running = g.state(report.subtaskId).state === 'RUNNING';
      const status = running ? 'SKIPPED' : report.status;
      const error = running ? { code: 'TASK_STATE_CONFLICT', message: 'the subtask is RUNNING; stop it before cleaning up' } : (report.error ?? null);
      const previous = row.cleanup as { status?: string; error?: unknown } | null;
      const same = previous?.status === status && isDeepStrictEqual(previous?.error ?? null, error);
      if (!same) {
        const fact = { status, error, worktree: runtimeWorktree(id, report.subtaskId).path };
        await g.tx`
          update graph_subtasks set cleanup = ${JSON.stringify(fact)}::text::jsonb || jsonb_build_object('at', now()), updated_at = now()
           where team_id = ${g.graph.team_id} and graph_id = ${id} and subtask_id = ${report.subtaskId}`;
      }
      recorded.push({ subtaskId: report.subtaskId, status, changed: !same });
    }
    let integration: { status: string; changed: boolean } | null = null;
    if (input.integration) {
      const record = (g.graph.integration ?? null) as Record<string, unknown> | null;
      const previous = (record?.cleanup ?? null) as { status?: string; error?: unknown } | null;
      const error = input.integration.error ?? null;
      const same = previous?.status === input.integration.status && isDeepStrictEqual(previous?.error ?? null, error);
      if (!same && record) {
        const fact = { status: input.integration.status, error, worktree: runtimeWorktree(id, INTEGRATION_NAME).path };
        await g.tx`update graphs set integration = integration || jsonb_build_object('cleanup', ${JSON.stringify(fact)}::text::jsonb) where team_id = ${g.graph.team_id} and id = ${id}`;
      }
      integration = { status: input.integration.status, changed: !same && record !== null };
    }
    const changed = recorded.some((r) => r.changed) || integration?.changed === true;
    const events: EventInput[] = changed
      ? [
          {
            topic: topicOf(g.graph.scope),
            event: 'TASK_GRAPH_CLEANUP_RECORDED',
            subjectId: id,
            payload: {
              event: 'TASK_GRAPH_CLEANUP_RECORDED',
              id,
              scope: g.graph.scope,
              status: 'recorded',
              revision: g.graph.revision + 1,
              parentTaskId: id,
              outcomes: recorded.filter((r) => r.changed).map((r) => ({ subtaskId: r.subtaskId, status: r.status })),
              integration: integration?.changed ? integration.status : null,
            },
          },
        ]
      : [];
    return { result: { recorded, integration }, graphChanged: changed, events };
  });
  const rows = new Map(out.rows.map((r) => [r.subtask_id, r]));
  const targets = out.result.recorded.map((r) => r.subtaskId);
  const actions = new Map(out.result.recorded.map((r) => [r.subtaskId, { action: `cleanup-${r.status.toLowerCase()}`, changed: r.changed }]));
  return shared('task.graph-cleanup', id, out, rows, targets, actions, {
    integrationCleanup: out.result.integration ? { status: out.result.integration.status, idempotent: !out.result.integration.changed } : null,
  });
}

/** The shared result shape of recover/resume/stop/cleanup (docs/seeds/task-graph-v1.md §10). */
function shared(
  command: 'task.graph-recover' | 'task.graph-resume' | 'task.graph-stop' | 'task.graph-cleanup',
  id: string,
  out: Awaited<ReturnType<typeof withLockedGraph<unknown>>>,
  rows: Map<string, SubtaskRow>,
  targets: readonly string[],
  actions: Map<string, { action: string; changed: boolean; error?: Outcome['error'] }>,
  extra: Record<string, unknown>,
) {
  const graphRow = { id, base_commit: out.graph.baseCommit } as GraphRow;
  const states = new Map(out.graph.subtasks.map((s) => [s.subtaskId, s.state as string]));
  return {
    ok: true as const,
    command,
    parentTaskId: id,
    graphId: id,
    graph: out.graph,
    recovery: recoveryEntries(graphRow, [...rows.values()], states),
    outcomes: outcomes(out.graph, graphRow, rows, targets, actions),
    transitions: out.transitions,
    automaticRetry: false as const,
    ...extra,
  };
}
