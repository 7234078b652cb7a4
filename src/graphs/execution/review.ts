/**
 * The integration record and the aggregate review (seed 002 "Deterministic integration and
 * aggregate review"; docs/seeds/task-graph-v1.md §11).
 *
 * The runner cherry-picks the verified commits in subtask-id order into the Runtime-owned
 * `__integration__` worktree and reports the result; the coordinator accepts a record only when
 * it matches what it verified: every subtask SUCCEEDED, the graph base, one source per subtask in
 * id order on its Runtime branch at its recorded implementation commit. It stores the record with
 * the source fingerprint (contract/execution.ts `sourceFingerprint`). A conflict is recorded as a
 * structured, durable result; the coordinator never resolves or retries anything.
 *
 * A review names the fingerprint and aggregate commit it looked at; either being stale (a newer
 * record, or sources that no longer match the subtasks) is refused. REVIEW_APPROVED makes the
 * graph APPROVED and authorises nothing else: no merge, push, tag, publish, deploy or release.
 */
import type { EventInput } from '../../events/events.repo.js';
import { topicOf } from '../../events/events.repo.js';
import { isDeepStrictEqual } from 'node:util';
import type { Ctx } from '../../todos/todos.context.js';
import { isCommitId, runtimeWorktree, sourceFingerprint, INTEGRATION_NAME, type IntegrationSource } from '../contract/execution.js';
import { compareByteOrder } from '../contract/text.js';
import { requireOwner, requireReviewer } from './authority.js';
import { refuse, withLockedGraph, type LockedGraph } from './locked.js';

/** The integration result the runner reports (wire shape: execution.schemas.ts). */
export interface IntegrationReport {
  baseCommit: string;
  status: 'SUCCEEDED' | 'CONFLICT' | 'FAILED';
  sources: IntegrationSource[];
  /** The commits the cherry-picks created, in source order (SUCCEEDED: one per source). */
  appliedRefs?: { subtaskId: string; commit: string }[];
  aggregateCommit?: string;
  conflict?: { subtaskId: string; commit: string; paths: string[]; message: string };
  error?: { code: string; message: string };
}

/** What the record says authorises nothing (seed 002: "not merge, push, tag, release, deploy, or publish"). */
export const REVIEW_BOUNDARIES = {
  merge: false,
  push: false,
  tag: false,
  publish: false,
  deploy: false,
  release: false,
  note: 'REVIEW_APPROVED records the aggregate review in Coord only; it authorises no merge, push, tag, publish, deploy or release.',
} as const;

/** The sources the coordinator verified: every SUCCEEDED subtask's branch and commit, by id. */
function verifiedSources(g: LockedGraph): IntegrationSource[] {
  return g.derived.map((s) => {
    const row = g.row(s.id);
    return { subtaskId: s.id, branch: runtimeWorktree(g.graph.id, s.id).branch, commit: row.implementation_commit ?? '' };
  });
}

function requireAllSucceeded(g: LockedGraph, stage: string): void {
  const open = g.derived.filter((s) => s.state !== 'SUCCEEDED').map((s) => `${s.id} (${s.state})`);
  if (open.length) {
    refuse(
      'TASK_STATE_CONFLICT',
      stage,
      `Task Graph ${g.graph.id} has subtasks that are not SUCCEEDED: ${open.slice(0, 8).join(', ')}${open.length > 8 ? ', …' : ''}.`,
      {
        parentTaskId: g.graph.id,
      },
    );
  }
}

/** Checks a report against the verified facts; 409 TASK_STATE_CONFLICT (stage `integration`). */
function checkReport(g: LockedGraph, report: IntegrationReport): IntegrationSource[] {
  const id = g.graph.id;
  const facts = { parentTaskId: id };
  requireAllSucceeded(g, 'integration');
  if (report.baseCommit.toLowerCase() !== g.graph.base_commit) {
    refuse(
      'TASK_STATE_CONFLICT',
      'integration',
      `the integration base ${report.baseCommit.toLowerCase()} is not the graph base ${g.graph.base_commit}.`,
      facts,
    );
  }
  const expected = verifiedSources(g);
  const sorted = [...report.sources].sort((a, b) => compareByteOrder(a.subtaskId, b.subtaskId));
  const inOrder = sorted.every((s, i) => s.subtaskId === report.sources[i].subtaskId);
  if (!inOrder) refuse('TASK_STATE_CONFLICT', 'integration', 'integration sources must be in byte order of subtask id.', facts);
  if (sorted.length !== expected.length || sorted.some((s, i) => s.subtaskId !== expected[i].subtaskId)) {
    refuse(
      'TASK_STATE_CONFLICT',
      'integration',
      `integration sources must name every subtask exactly once: ${expected.map((e) => e.subtaskId).join(', ')}.`,
      facts,
    );
  }
  for (let i = 0; i < expected.length; i++) {
    const got = sorted[i];
    const want = expected[i];
    if (got.branch !== want.branch || got.commit.toLowerCase() !== want.commit) {
      refuse('TASK_STATE_CONFLICT', 'integration', `source ${got.subtaskId} must be ${want.branch} at its verified commit ${want.commit} (stale source).`, {
        parentTaskId: id,
        subtaskId: got.subtaskId,
        details: { branch: want.branch, commit: want.commit },
      });
    }
  }
  // Applied commits are a prefix of the sources, in order: the cherry-picks that went through.
  const applied = report.appliedRefs ?? [];
  if (applied.length > expected.length || applied.some((a, i) => a.subtaskId !== expected[i].subtaskId || !isCommitId(a.commit))) {
    refuse('TASK_STATE_CONFLICT', 'integration', 'appliedRefs must follow the sources in order, each with a full commit id.', facts);
  }
  if (report.aggregateCommit !== undefined && !isCommitId(report.aggregateCommit)) {
    refuse('TASK_STATE_CONFLICT', 'integration', 'aggregateCommit must be a full commit id (40/64 hex).', facts);
  }
  if (report.status === 'SUCCEEDED') {
    if (!report.aggregateCommit) refuse('TASK_STATE_CONFLICT', 'integration', 'a SUCCEEDED integration needs aggregateCommit (40/64 hex).', facts);
    if (applied.length !== expected.length)
      refuse('TASK_STATE_CONFLICT', 'integration', 'a SUCCEEDED integration needs one applied commit per source, in source order.', facts);
    if (report.conflict) refuse('TASK_STATE_CONFLICT', 'integration', 'a SUCCEEDED integration has no conflict.', facts);
  } else if (report.status === 'CONFLICT') {
    const c = report.conflict;
    if (!c) refuse('TASK_STATE_CONFLICT', 'integration', 'a CONFLICT integration needs the structured conflict (subtaskId, commit, paths, message).', facts);
    const stopped = expected[applied.length];
    if (!stopped || c.subtaskId !== stopped.subtaskId || c.commit.toLowerCase() !== stopped.commit) {
      refuse(
        'TASK_STATE_CONFLICT',
        'integration',
        `the conflict must name the source after the applied ones${stopped ? ` (${stopped.subtaskId} at ${stopped.commit})` : ''}.`,
        facts,
      );
    }
    const unsafe = c.paths.find((p) => p.startsWith('/') || p.includes('\\') || p.split('/').some((seg) => seg === '' || seg === '.' || seg === '..'));
    if (unsafe !== undefined)
      refuse('TASK_STATE_CONFLICT', 'integration', `conflict path ${JSON.stringify(unsafe.slice(0, 128))} is not a repository-relative path.`, facts);
  }
  return expected;
}

/**
 * `PUT /v1/graphs/{id}/integration` (see the file header). Owners only. An identical repeat
 * changes nothing (`changed: false`, no event); a different record replaces the previous one,
 * clears the review and returns an APPROVED graph to REVIEWING. Event:
 * `TASK_GRAPH_INTEGRATION_RECORDED`. Errors: 403, 404, 409 TASK_STATE_CONFLICT (stage
 * `integration`).
 */
export async function recordIntegration(ctx: Ctx, id: string, report: IntegrationReport) {
  const out = await withLockedGraph(ctx, id, async (g) => {
    requireOwner(ctx.principal, g.graph, 'record its integration');
    const sources = checkReport(g, report);
    const worktree = runtimeWorktree(id, INTEGRATION_NAME);
    const record = {
      schemaVersion: 1,
      status: report.status,
      baseCommit: g.graph.base_commit,
      sourceFingerprint: sourceFingerprint(g.graph.base_commit!, sources),
      sources,
      appliedRefs:
        report.status === 'SUCCEEDED'
          ? (report.appliedRefs ?? []).map((a) => ({ subtaskId: a.subtaskId, commit: a.commit.toLowerCase() }))
          : (report.appliedRefs ?? []),
      aggregateCommit: report.aggregateCommit?.toLowerCase() ?? null,
      branch: worktree.branch,
      ref: worktree.ref,
      worktreePath: worktree.path,
      conflict: report.conflict ?? null,
      error: report.error ?? null,
    };
    const previous = (g.graph.integration ?? null) as Record<string, unknown> | null;
    const { recordedAt: _at, recordedBy: _by, cleanup: _cleanup, ...previousCore } = previous ?? {};
    if (previous && isDeepStrictEqual(previousCore, record)) {
      return { result: { changed: false, integration: previous } };
    }
    const stored = { ...record, recordedBy: ctx.principal.id };
    const approved = g.graph.parent.state === 'APPROVED';
    await g.tx`
      update graphs set integration = ${JSON.stringify(stored)}::text::jsonb || jsonb_build_object('recordedAt', now()), review = null,
             parent = case when ${approved} then parent || '{"state":"REVIEWING"}'::jsonb else parent end
       where team_id = ${g.graph.team_id} and id = ${id}`;
    const events: EventInput[] = [
      {
        topic: topicOf(g.graph.scope),
        event: 'TASK_GRAPH_INTEGRATION_RECORDED',
        subjectId: id,
        payload: {
          event: 'TASK_GRAPH_INTEGRATION_RECORDED',
          id,
          scope: g.graph.scope,
          status: report.status,
          revision: g.graph.revision + 1,
          parentTaskId: id,
          sourceFingerprint: record.sourceFingerprint,
          aggregateCommit: record.aggregateCommit,
          conflict: record.conflict,
        },
      },
    ];
    return { result: { changed: true, integration: stored as Record<string, unknown> }, graphChanged: true, events };
  });
  return {
    ok: out.result.integration.status === 'SUCCEEDED',
    command: 'task.graph-integrate' as const,
    parentTaskId: id,
    changed: out.result.changed,
    integration: out.graph.integration,
    state: out.graph.state,
    graph: out.graph,
  };
}

/** A review decision (wire shape: execution.schemas.ts). */
export interface ReviewInput {
  decision: 'REVIEW_APPROVED' | 'CHANGES_REQUESTED';
  feedback?: string;
  sourceFingerprint: string;
  aggregateCommit: string;
}

/**
 * `POST /v1/graphs/{id}/review` (see the file header). Who: a user or a session bound to the
 * reviewer Agent. Refused (409 TASK_STATE_CONFLICT, stage `review`) unless every subtask is
 * SUCCEEDED, a SUCCEEDED integration is recorded, its fingerprint still matches the verified
 * sources, and the request names that fingerprint and aggregate commit. An identical repeat
 * changes nothing. Event: `TASK_GRAPH_REVIEW_RECORDED` (and the parent's state change).
 */
export async function reviewGraph(ctx: Ctx, id: string, input: ReviewInput) {
  const out = await withLockedGraph(ctx, id, async (g) => {
    requireReviewer(ctx.principal, g.graph);
    requireAllSucceeded(g, 'review');
    const integration = (g.graph.integration ?? null) as { status?: string; sourceFingerprint?: string; aggregateCommit?: string } | null;
    const facts = { parentTaskId: id };
    if (integration?.status !== 'SUCCEEDED') {
      refuse('TASK_STATE_CONFLICT', 'review', `Task Graph ${id} has no successful integration to review; integrate it first.`, facts);
    }
    const current = sourceFingerprint(g.graph.base_commit!, verifiedSources(g));
    if (integration.sourceFingerprint !== current) {
      refuse('TASK_STATE_CONFLICT', 'review', `the recorded integration is stale: its sources no longer match the verified subtask commits.`, facts);
    }
    if (input.sourceFingerprint !== integration.sourceFingerprint || input.aggregateCommit.toLowerCase() !== integration.aggregateCommit) {
      refuse(
        'TASK_STATE_CONFLICT',
        'review',
        `the review names a stale integration: the current one is ${integration.sourceFingerprint} at ${integration.aggregateCommit}.`,
        {
          parentTaskId: id,
          details: { sourceFingerprint: integration.sourceFingerprint, aggregateCommit: integration.aggregateCommit },
        },
      );
    }
    const review = {
      decision: input.decision,
      feedback: input.feedback ?? null,
      sourceFingerprint: integration.sourceFingerprint,
      aggregateCommit: integration.aggregateCommit,
      reviewer: ctx.principal.id,
      agent: ctx.principal.kind === 'session' ? ctx.principal.agentId : null,
    };
    const previous = (g.graph.review ?? null) as Record<string, unknown> | null;
    const { reviewedAt: _at, ...previousCore } = previous ?? {};
    if (previous && isDeepStrictEqual(previousCore, review)) return { result: { changed: false } };
    const state = input.decision === 'REVIEW_APPROVED' ? 'APPROVED' : 'REVIEWING';
    await g.tx`
      update graphs set review = ${JSON.stringify(review)}::text::jsonb || jsonb_build_object('reviewedAt', now()),
             parent = parent || jsonb_build_object('state', ${state}::text)
       where team_id = ${g.graph.team_id} and id = ${id}`;
    g.graph.parent = { ...g.graph.parent, state };
    const events: EventInput[] = [
      {
        topic: topicOf(g.graph.scope),
        event: 'TASK_GRAPH_REVIEW_RECORDED',
        subjectId: id,
        payload: {
          event: 'TASK_GRAPH_REVIEW_RECORDED',
          id,
          scope: g.graph.scope,
          status: input.decision,
          revision: g.graph.revision + 1,
          parentTaskId: id,
          decision: input.decision,
          sourceFingerprint: review.sourceFingerprint,
          aggregateCommit: review.aggregateCommit,
          reviewer: review.reviewer,
        },
      },
    ];
    return { result: { changed: true }, graphChanged: true, events };
  });
  return {
    ok: true as const,
    command: 'task.graph-review' as const,
    parentTaskId: id,
    decision: input.decision,
    changed: out.result.changed,
    review: out.graph.review,
    state: out.graph.state,
    authorizes: REVIEW_BOUNDARIES,
    graph: out.graph,
  };
}
