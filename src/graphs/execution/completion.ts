/**
 * The end of a dispatch: heartbeat, complete with IMPLEMENTATION_DONE evidence (and Scope Audit
 * v1), fail (seed 002 "Optional Intent Map v1 companion" — the audit paragraphs — and "Subtask
 * dispatch…" step 5; docs/seeds/task-graph-v1.md §7, §9).
 *
 * What the coordinator can check. It has no checkout: the runner reports the commit and the
 * changed paths (`git diff --name-status -M base..commit`, `git status --porcelain -z`), and the
 * coordinator checks what the report itself proves — both commits are full ids, the base is the
 * graph's and the dispatch's, the commit differs from it, the lists are bounded and well formed —
 * then audits the reported paths against the subtask's write intent with the contract's matcher
 * and policy (contract/scope-audit.ts). A report it cannot accept changes nothing (422
 * `AGENT_RUNTIME_ERROR` at `completion`, or 409 `TASK_STATE_CONFLICT` at `scope-audit`, failing
 * closed): the runner corrects it or calls `fail`.
 *
 * Outcomes. Verified evidence with no drift, or drift under `observe`/`warn`, is SUCCEEDED: the
 * engine's own `done` (coord_done_many: the cascade readies dependents in the same transaction).
 * Drift under `strict` is FAILED `INTENT_SCOPE_DRIFT` (recoverable), keeping the commit and the
 * evidence, and its dependents read BLOCKED. `fail` is FAILED with the runner's error; siblings
 * are never touched. Either way the dispatch's session is stopped: its attempt is over.
 */
import { noteTopics } from '../../db/doorbell.js';
import { appendEvents, emitsFor, streamKey, topicOf } from '../../events/events.repo.js';
import { markStopped } from '../../sessions/sessions.service.js';
import type { Ctx } from '../../todos/todos.context.js';
import { eventPayload } from '../../todos/todos.view.js';
import { auditScope, driftReason, type ReportedChange, type ScopeEvidence } from '../contract/index.js';
import { INTERRUPTED_CODE, isCommitId } from '../contract/execution.js';
import { boundReason } from '../contract/text.js';
import type { GraphRow, SubtaskRow } from '../graphs.view.js';
import { requireActor } from './authority.js';
import type { FailBody } from './execution.schemas.js';
import { refuse, withLockedGraph, type LockedGraph } from './locked.js';
import type { z } from 'zod';
import { actorOf } from '../../auth/actor.js';
import { completeContractRow } from '../../todos/todos.repo.js';
import { blockItems, touchProgress } from '../../todos/todos.repo.js';

/** IMPLEMENTATION_DONE evidence as the runner reports it (wire shape: execution.schemas.ts). */
export interface CompletionReport {
  attempt?: number;
  graphBaseCommit: string;
  implementationCommit: string;
  committedChanges: ReportedChange[];
  committedChangesTruncated?: boolean;
  dirtyChanges: ReportedChange[];
  dirtyChangesTruncated?: boolean;
  dirtyWorktreeAvailable: boolean;
  summary?: string;
}

/** A runtime failure as the runner reports it: the type of `FailBody` (execution.schemas.ts, OpenAPI `TaskGraphFailureReport`). */
export type FailureReport = z.output<typeof FailBody>;

/** 409 unless `row` is RUNNING in this attempt (a stale attempt or a finished one is refused). */
function requireRunning(g: LockedGraph, row: SubtaskRow, attempt: number | undefined, stage: string, act: string): void {
  const state = g.state(row.subtask_id);
  const id = g.graph.id;
  if (attempt !== undefined && attempt !== (row.attempt ?? 0)) {
    refuse(
      'TASK_STATE_CONFLICT',
      stage,
      `Task Graph subtask ${id}/${row.subtask_id} is at attempt ${row.attempt ?? 0}, not ${attempt}: this report belongs to an earlier dispatch.`,
      {
        parentTaskId: id,
        subtaskId: row.subtask_id,
        details: { attempt: row.attempt ?? 0 },
      },
    );
  }
  if (state.state === 'FAILED' && (row.interrupted || (row.last_error as { code?: string } | null)?.code === INTERRUPTED_CODE)) {
    // The dispatch was recorded interrupted (its lease ran out, or a runner reported its process
    // dead) before this report arrived: the report is late, not wrong.
    const n = row.attempt ?? 0;
    refuse(
      'DISPATCH_INTERRUPTED',
      stage,
      `Task Graph subtask ${id}/${row.subtask_id}: attempt ${n} was recorded interrupted before this report arrived, so it cannot ${act}; nothing changed. ` +
        `Resume it (\`coord graph resume ${id} ${row.subtask_id}\`, or POST /v1/graphs/${id}/resume with {"subtaskId": "${row.subtask_id}"}) and dispatch it again: attempt ${n + 1} starts at the graph base, and the runner keeps this attempt's commits under refs/coord/attempts/.`,
      { parentTaskId: id, subtaskId: row.subtask_id, recoverable: true, details: { state: state.state, attempt: n } },
    );
  }
  if (state.state !== 'RUNNING') {
    const hint = state.state === 'FAILED' && row.status === 'blocked' ? ' (its dispatch was interrupted or failed; resume it, then dispatch again)' : '';
    refuse('TASK_STATE_CONFLICT', stage, `Task Graph subtask ${id}/${row.subtask_id} is ${state.state}; expected RUNNING to ${act}${hint}.`, {
      parentTaskId: id,
      subtaskId: row.subtask_id,
      details: { state: state.state },
    });
  }
}

async function stopDispatchSession(g: LockedGraph, row: SubtaskRow): Promise<void> {
  if (row.session_id) await markStopped(g.tx, [row.session_id], actorOf(g.ctx.principal));
}

/** Marks the engine row blocked (owner kept) with its event: the engine's side of FAILED/STOPPED. */
export async function blockEngineRow(g: LockedGraph, row: SubtaskRow, owner: string, reason: string): Promise<void> {
  const rows = await blockItems(g.tx, [row.todo_id], { ownerIfNone: owner });
  if (rows.length && emitsFor(g.graph.scope, g.ctx.config.todo.emitEvents)) {
    await appendEvents(
      g.tx,
      g.graph.team_id,
      rows.map((r) => ({ topic: topicOf(r.scope), event: 'blocked', subjectId: r.id, payload: { ...eventPayload('blocked', r), reason } })),
      actorOf(g.ctx.principal),
    );
  }
}

/**
 * `POST /v1/graphs/{id}/subtasks/{sid}/heartbeat`: extends the dispatch's claim lease (the
 * engine's lease: `progress_at`, `claim_lease`). Who: authority.ts "act on a subtask". 409 when
 * the subtask is not RUNNING (an expired lease has already made it FAILED `interrupted`).
 */
export async function heartbeatSubtask(ctx: Ctx, id: string, subtaskId: string, input: { attempt?: number }) {
  const out = await withLockedGraph(ctx, id, async (g) => {
    const row = g.row(subtaskId);
    requireActor(ctx.principal, g.graph, row, 'heartbeat');
    requireRunning(g, row, input.attempt, 'graph-scheduling', 'heartbeat');
    const ms = ctx.config.todo.claimLeaseMs;
    const t = await touchProgress(g.tx, row.todo_id, ms);
    return { result: { leaseExpiresAt: t?.leaseExpiresAt ? t.leaseExpiresAt.toISOString() : null, attempt: row.attempt ?? 0 } };
  });
  return { ok: true as const, parentTaskId: id, subtaskId, ...out.result, claimLeaseMs: ctx.config.todo.claimLeaseMs };
}

/** The bounded completion evidence stored on the subtask (the full lists live in the audit evidence). */
function completionEvidence(report: CompletionReport, base: string) {
  return {
    kind: 'IMPLEMENTATION_DONE' as const,
    verified: true,
    graphBaseCommit: base,
    implementationCommit: report.implementationCommit.toLowerCase(),
    committedChangeCount: report.committedChanges.length,
    committedChangesTruncated: report.committedChangesTruncated === true,
    dirtyChangeCount: report.dirtyChanges.length,
    dirtyChangesTruncated: report.dirtyChangesTruncated === true,
    dirtyWorktreeAvailable: report.dirtyWorktreeAvailable,
    ...(report.summary ? { summary: report.summary } : {}),
  };
}

/** Checks what the report proves by itself (see the file header); 422 AGENT_RUNTIME_ERROR otherwise. */
function verifyReport(graph: GraphRow, row: SubtaskRow, report: CompletionReport): string {
  const id = graph.id;
  const facts = { parentTaskId: id, subtaskId: row.subtask_id };
  const base = graph.base_commit;
  if (!base) refuse('TASK_STATE_CONFLICT', 'completion', `Task Graph ${id} has no base commit; it was never run.`, facts);
  if (!isCommitId(report.graphBaseCommit) || !isCommitId(report.implementationCommit)) {
    refuse(
      'AGENT_RUNTIME_ERROR',
      'completion',
      'graphBaseCommit and implementationCommit must be full commit ids (40 or 64 hex digits); prose and file names are never proof.',
      facts,
    );
  }
  if (report.graphBaseCommit.toLowerCase() !== base) {
    refuse('AGENT_RUNTIME_ERROR', 'completion', `the reported graph base ${report.graphBaseCommit.toLowerCase()} is not the dispatch's base ${base}.`, {
      ...facts,
      details: { baseCommit: base },
    });
  }
  if (report.implementationCommit.toLowerCase() === base) {
    refuse('AGENT_RUNTIME_ERROR', 'completion', `the implementation commit equals the graph base ${base}: the implementer committed nothing.`, facts);
  }
  if (!report.dirtyWorktreeAvailable && report.dirtyChanges.length > 0) {
    refuse('AGENT_RUNTIME_ERROR', 'completion', 'dirtyChanges were reported although dirtyWorktreeAvailable is false.', facts);
  }
  return base;
}

/**
 * `POST /v1/graphs/{id}/subtasks/{sid}/complete` (see the file header). Who: authority.ts "act on
 * a subtask". Errors: 404 TASK_NOT_FOUND, 403 forbidden, 409 TASK_STATE_CONFLICT (not RUNNING, a
 * stale `attempt`, or the audit could not inspect a reported path: stage `scope-audit`), 422
 * AGENT_RUNTIME_ERROR (stage `completion`). A second complete of the same subtask finds it no
 * longer RUNNING: one SUCCEEDED transition, one event.
 */
export async function completeSubtask(ctx: Ctx, id: string, subtaskId: string, report: CompletionReport) {
  const out = await withLockedGraph(ctx, id, async (g) => {
    const row = g.row(subtaskId);
    requireActor(ctx.principal, g.graph, row, 'complete');
    requireRunning(g, row, report.attempt, 'completion', 'complete');
    const base = verifyReport(g.graph, row, report);
    const map = g.graph.intent_map;
    let scope: ScopeEvidence | null = null;
    if (map) {
      if (map.scopePolicy === 'strict' && (report.committedChangesTruncated || report.dirtyChangesTruncated || !report.dirtyWorktreeAvailable)) {
        // Strict cannot vouch for paths it was not shown: fail closed (seed 002 "An audit that cannot inspect its required facts fails closed").
        refuse(
          'TASK_STATE_CONFLICT',
          'scope-audit',
          'a strict Intent Map needs complete evidence: untruncated change lists and an inspected worktree (dirtyWorktreeAvailable).',
          {
            parentTaskId: id,
            subtaskId,
          },
        );
      }
      const declaration = map.subtasks.find((d) => d.id === subtaskId);
      const audit = auditScope({
        parentTaskId: id,
        subtaskId,
        graphBaseCommit: base,
        implementationCommit: report.implementationCommit,
        scopePolicy: map.scopePolicy,
        writeIntent: declaration?.writeIntent ?? [],
        committedChanges: report.committedChanges,
        committedChangesTruncated: report.committedChangesTruncated,
        dirtyChanges: report.dirtyChanges,
        dirtyChangesTruncated: report.dirtyChangesTruncated,
        dirtyWorktreeAvailable: report.dirtyWorktreeAvailable,
      });
      if (!audit.ok) refuse('TASK_STATE_CONFLICT', 'scope-audit', audit.error.message, { parentTaskId: id, subtaskId, details: audit.error.details });
      scope = audit.value;
    }
    const evidence = completionEvidence(report, base);
    const commit = evidence.implementationCommit;
    const strictDrift = scope?.drift && scope.scopePolicy === 'strict';
    if (strictDrift) {
      const reason = driftReason(scope!) ?? 'INTENT_SCOPE_DRIFT';
      const lastError = {
        code: 'INTENT_SCOPE_DRIFT',
        classification: 'failed',
        stage: 'scope-audit',
        message: reason,
        recoverable: true,
        outsideIntentPathCount: scope!.outsideIntentPathCount,
        outsideIntentPaths: scope!.outsideIntentPaths,
      };
      await g.tx`
        update graph_subtasks set outcome = 'FAILED', reason = ${JSON.stringify(boundReason(reason))}::text::jsonb,
               evidence = ${JSON.stringify(evidence)}::text::jsonb, implementation_commit = ${commit},
               scope_evidence = ${JSON.stringify(scope)}::text::jsonb, last_error = ${JSON.stringify(lastError)}::text::jsonb, updated_at = now()
         where team_id = ${g.graph.team_id} and graph_id = ${id} and subtask_id = ${subtaskId}`;
      await blockEngineRow(g, row, row.owner ?? ctx.principal.id, 'INTENT_SCOPE_DRIFT');
    } else {
      const warn = scope?.drift && scope.scopePolicy === 'warn' ? driftReason(scope) : null;
      await g.tx`
        update graph_subtasks set outcome = null, reason = ${warn === null ? null : JSON.stringify(boundReason(warn))}::text::jsonb,
               evidence = ${JSON.stringify(evidence)}::text::jsonb, implementation_commit = ${commit},
               scope_evidence = ${scope === null ? null : JSON.stringify(scope)}::text::jsonb, last_error = null, updated_at = now()
         where team_id = ${g.graph.team_id} and graph_id = ${id} and subtask_id = ${subtaskId}`;
      // The engine's own done: guarded transition, cascade to dependents, `done`/`unblocked` events.
      await completeContractRow(g.tx, row.todo_id, row.owner ?? null, actorOf(ctx.principal), ctx.config.todo.emitEvents);
      noteTopics(g.tx, [streamKey(g.graph.team_id, topicOf(g.graph.scope))]);
    }
    await stopDispatchSession(g, row);
    return { result: { scopeEvidence: scope, evidence, strictDrift }, direct: [subtaskId] };
  });
  const subtask = out.graph.subtasks.find((s) => s.subtaskId === subtaskId)!;
  return {
    ok: !out.result.strictDrift,
    command: 'task.graph-complete' as const,
    parentTaskId: id,
    subtaskId,
    state: subtask.state,
    reason: subtask.reason,
    evidence: out.result.evidence,
    scopeEvidence: out.result.scopeEvidence,
    ...(out.result.strictDrift
      ? {
          error: {
            code: 'INTENT_SCOPE_DRIFT' as const,
            stage: 'scope-audit' as const,
            recoverable: true as const,
            message: subtask.reason ?? 'INTENT_SCOPE_DRIFT',
          },
        }
      : {}),
    transitions: out.transitions,
    frontier: out.graph.frontier,
    graph: out.graph,
  };
}

/**
 * `POST /v1/graphs/{id}/subtasks/{sid}/fail`: RUNNING → FAILED with the runner's error (e.g.
 * `AGENT_EXIT_NONZERO` with `exitCode`), siblings untouched, dependents BLOCKED with the
 * contract's reason. Who: authority.ts "act on a subtask". A repeat for a subtask already FAILED
 * with the same code changes nothing and succeeds (`changed: false`); any other state is 409.
 */
export async function failSubtask(ctx: Ctx, id: string, subtaskId: string, report: FailureReport) {
  const out = await withLockedGraph(ctx, id, async (g) => {
    const row = g.row(subtaskId);
    requireActor(ctx.principal, g.graph, row, 'fail');
    const previous = row.last_error as { code?: string } | null;
    if (g.state(subtaskId).state === 'FAILED' && previous?.code === report.code && (report.attempt === undefined || report.attempt === row.attempt)) {
      return { result: { changed: false } };
    }
    requireRunning(g, row, report.attempt, report.stage ?? 'completion', 'fail');
    const message = boundReason(report.message) ?? report.code;
    const reason = boundReason(`${report.code}: ${message}`)!;
    const lastError = {
      code: report.code,
      classification: 'failed',
      stage: report.stage ?? 'completion',
      message,
      recoverable: report.recoverable ?? true,
      exitCode: report.exitCode ?? null,
      signal: report.signal ?? null,
      parentTaskId: id,
      subtaskId,
      agent: row.implementer,
      sessionId: row.session_id ?? null,
      attempt: row.attempt ?? 0,
    };
    await g.tx`
      update graph_subtasks set outcome = 'FAILED', reason = ${JSON.stringify(reason)}::text::jsonb,
             last_error = ${JSON.stringify(lastError)}::text::jsonb, updated_at = now()
       where team_id = ${g.graph.team_id} and graph_id = ${id} and subtask_id = ${subtaskId}`;
    await blockEngineRow(g, row, row.owner ?? ctx.principal.id, report.code);
    await stopDispatchSession(g, row);
    return { result: { changed: true }, direct: [subtaskId] };
  });
  const subtask = out.graph.subtasks.find((s) => s.subtaskId === subtaskId)!;
  return {
    ok: true as const,
    command: 'task.graph-fail' as const,
    parentTaskId: id,
    subtaskId,
    state: subtask.state,
    reason: subtask.reason,
    changed: out.result.changed,
    transitions: out.transitions,
    frontier: out.graph.frontier,
    graph: out.graph,
  };
}
