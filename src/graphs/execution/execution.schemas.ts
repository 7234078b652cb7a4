/**
 * Wire shapes of the Task Graph v1 execution routes (seed 002; docs/seeds/task-graph-v1.md §7–§11). Names are
 * the contract's (camelCase already; docs/architecture.md §D9); results keep the contract's `command` names
 * (`task.graph-run`, `task.graph-recover`, …) so a runner can pass them through unchanged.
 */
import { z } from 'zod';
import { StoredText } from '../../http/text.js';
import {
  SCOPE_AUDIT_MAX_CHANGES,
  SCOPE_AUDIT_MAX_PATH_BYTES,
  TaskGraphFrontierSchema,
  TaskGraphPlanSchema,
  TaskGraphStateSchema,
  SubtaskStateSchema,
} from '../contract/index.js';
import { RecoveryEntrySchema, TaskGraphRecord } from '../graphs.schemas.js';

/** Bounds of `sessionWaitMs` (the runner's observation window per selected subtask), in ms. */
export const SESSION_WAIT_MAX_MS = 24 * 3_600_000;

const Commit = z.string().max(64).describe('A full commit id: 40 (SHA-1) or 64 (SHA-256) hex digits');

const Text = StoredText;
const Attempt = z.number().int().min(1).max(1_000_000).optional().describe('The dispatch attempt this call is about; a stale one is 409');
const Path = Text(SCOPE_AUDIT_MAX_PATH_BYTES).min(1);

export const SubtaskParams = z.object({
  id: z.string().max(200).describe('The parent Task id (`task-…`)'),
  sid: z.string().max(200).describe('The subtask id'),
});

// ---------------------------------------------------------------------------------------------
// Requests

export const RunBody = z
  .strictObject({
    baseCommit: Commit.optional().describe(
      'The repository HEAD to run on. Required until the first dispatch fixes the graph base; afterwards it must equal it.',
    ),
    sessionWaitMs: z
      .number()
      .int()
      .min(0)
      .max(SESSION_WAIT_MAX_MS)
      .optional()
      .describe('The runner’s observation window per selected subtask, in ms (echoed in each dispatch; the coordinator waits for nothing)'),
  })
  .meta({ id: 'TaskGraphRunRequest' });

export const HeartbeatBody = z.strictObject({ attempt: Attempt }).meta({ id: 'TaskGraphHeartbeatRequest' });

export const ReportedChangeSchema = z
  .strictObject({
    status: z.string().min(1).max(4).describe('Committed: git name-status `A|M|D|T|R<score>|C<score>`. Dirty: a porcelain v1 `XY` code (`??` untracked)'),
    path: Path,
    oldPath: Path.optional().describe('Renames and copies only: the source path'),
  })
  .meta({ id: 'TaskGraphReportedChange' });

export const CompleteBody = z
  .strictObject({
    attempt: Attempt,
    kind: z.literal('IMPLEMENTATION_DONE').optional(),
    graphBaseCommit: Commit.describe('The graph base the worktree was created at (must equal the dispatch’s)'),
    implementationCommit: Commit.describe('The new commit at the worktree HEAD, descending from the base'),
    committedChanges: z.array(ReportedChangeSchema).max(SCOPE_AUDIT_MAX_CHANGES).describe('`git diff --name-status -M -z <base> <commit>`, parsed'),
    committedChangesTruncated: z.boolean().optional().describe('The runner cut its list (more than it reports)'),
    dirtyChanges: z
      .array(ReportedChangeSchema)
      .max(SCOPE_AUDIT_MAX_CHANGES)
      .describe('`git status --porcelain=v1 -z --untracked-files=all` in the worktree, parsed'),
    dirtyChangesTruncated: z.boolean().optional(),
    dirtyWorktreeAvailable: z.boolean().describe('False when the runner could not inspect the worktree (then dirtyChanges is [])'),
    summary: Text(8192).optional().describe('A bounded human summary; never proof of completion'),
  })
  .meta({ id: 'TaskGraphCompletionEvidence', description: 'IMPLEMENTATION_DONE evidence reported by the runner.' });

export const FailBody = z
  .strictObject({
    attempt: Attempt,
    code: z
      .string()
      .regex(/^[A-Z][A-Z0-9_]{1,63}$/, 'an UPPER_SNAKE runtime error code such as AGENT_EXIT_NONZERO')
      .describe(
        'The contract’s runtime error code: AGENT_EXIT_NONZERO, AGENT_TIMEOUT, AGENT_RUNTIME_ERROR, SPAWN_FAILED, EXECUTABLE_NOT_FOUND, WORKTREE_CONFLICT, …',
      ),
    message: Text(8192).min(1),
    stage: z
      .string()
      .regex(/^[a-z][a-z0-9-]{0,63}$/)
      .optional()
      .describe('Default `completion`'),
    exitCode: z.number().int().min(-1_000_000).max(1_000_000).nullable().optional(),
    signal: z
      .string()
      .regex(/^[A-Z0-9]{1,32}$/, 'a signal name such as SIGTERM')
      .nullable()
      .optional(),
    recoverable: z.boolean().optional().describe('Default true'),
  })
  .meta({ id: 'TaskGraphFailureReport' });

const SubtaskId = z.string().max(200);

export const RecoverBody = z
  .strictObject({
    subtaskId: SubtaskId.optional().describe('Recover one subtask; default every subtask'),
    observations: z
      .array(
        z.strictObject({
          subtaskId: SubtaskId,
          processAlive: z.boolean().optional().describe('False: the runner found no live implementer process for the RUNNING dispatch'),
          worktreeExists: z.boolean().optional().describe('False: the dispatch’s worktree is gone'),
        }),
      )
      .max(256)
      .optional()
      .describe('What the runner sees on its machine; a RUNNING subtask reported dead is recorded FAILED `interrupted`'),
  })
  .nullish()
  .meta({ id: 'TaskGraphRecoverRequest' });

export const ResumeBody = z.strictObject({ subtaskId: SubtaskId }).meta({ id: 'TaskGraphResumeRequest' });

export const StopBody = z
  .strictObject({
    reason: Text(8192).trim().min(1).describe('Why; recorded on every stopped subtask'),
    subtaskId: SubtaskId.optional().describe('Stop one subtask; default the whole graph'),
  })
  .meta({ id: 'TaskGraphStopRequest' });

const CleanupStatus = z.enum(['CLEANED', 'FAILED', 'SKIPPED']);
const ErrorFact = z.strictObject({ code: z.string().regex(/^[A-Za-z][A-Za-z0-9_]{0,63}$/, 'an error code such as WORKTREE_CONFLICT'), message: Text(2048) });

export const CleanupBody = z
  .strictObject({
    subtaskId: SubtaskId.optional().describe('Record only this subtask’s outcome'),
    outcomes: z
      .array(z.strictObject({ subtaskId: SubtaskId, status: CleanupStatus, error: ErrorFact.optional() }))
      .max(256)
      .describe('The runner’s outcome of removing each owned worktree'),
    integration: z.strictObject({ status: CleanupStatus, error: ErrorFact.optional() }).optional().describe('The integration worktree’s outcome'),
  })
  .meta({ id: 'TaskGraphCleanupReport' });

export const IntegrationBody = z
  .strictObject({
    baseCommit: Commit,
    status: z.enum(['SUCCEEDED', 'CONFLICT', 'FAILED']),
    sources: z
      .array(z.strictObject({ subtaskId: SubtaskId, branch: z.string().max(300), commit: Commit }))
      .min(1)
      .max(256)
      .describe('Every subtask, in byte order of id, on its Runtime branch at its verified commit'),
    appliedRefs: z
      .array(z.strictObject({ subtaskId: SubtaskId, commit: Commit }))
      .max(256)
      .optional()
      .describe('The commits the cherry-picks created, in source order'),
    aggregateCommit: Commit.optional().describe('SUCCEEDED: HEAD of the integration branch'),
    conflict: z
      .strictObject({
        subtaskId: SubtaskId,
        commit: Commit,
        paths: z.array(Path).max(64),
        message: Text(2048),
      })
      .optional()
      .describe('CONFLICT: the cherry-pick that stopped, left inspectable in the integration worktree'),
    error: ErrorFact.optional(),
  })
  .meta({ id: 'TaskGraphIntegrationReport' });

export const ReviewBody = z
  .strictObject({
    decision: z.enum(['REVIEW_APPROVED', 'CHANGES_REQUESTED']),
    feedback: Text(8192).optional().describe('Bounded review notes'),
    sourceFingerprint: z.string().max(100).describe('The integration’s `sourceFingerprint` the reviewer looked at'),
    aggregateCommit: Commit.describe('The integration’s `aggregateCommit` the reviewer looked at'),
  })
  .meta({ id: 'TaskGraphReviewRequest' });

// ---------------------------------------------------------------------------------------------
// Results

export const DispatchSchema = z
  .object({
    parentTaskId: z.string(),
    subtaskId: z.string(),
    attempt: z.number().int(),
    implementer: z.string(),
    title: z.string().nullable(),
    spec: z.string(),
    dependsOn: z.array(z.string()),
    writeIntent: z.array(z.string()).nullable().describe('Null: the graph has no Intent Map'),
    scopePolicy: z.enum(['observe', 'warn', 'strict']).nullable(),
    session: z
      .object({
        id: z.string(),
        token: z.string().describe('Bearer token of the dispatch’s own session; shown once'),
        agentId: z.string(),
        parentId: z.string().nullable(),
      })
      .describe('The implementer’s session: give it COORD_TOKEN=<token>'),
    worktree: z.object({ path: z.string(), branch: z.string(), ref: z.string(), baseCommit: z.string() }).describe('Where the runner must run it'),
    todoId: z.string(),
    leaseExpiresAt: z.string().nullable(),
    claimLeaseMs: z.number().int(),
    sessionWaitMs: z.number().int().nullable(),
    dispatchedBy: z.string(),
  })
  .meta({ id: 'TaskGraphDispatch', description: 'One dispatched subtask: what the runner on the agent’s machine needs to execute it.' });

const Transition = z.object({ subtaskId: z.string(), from: SubtaskStateSchema, to: SubtaskStateSchema, reason: z.string().nullable(), derived: z.boolean() });

export const RunResult = z
  .object({
    ok: z.literal(true),
    command: z.literal('task.graph-run'),
    parentTaskId: z.string(),
    baseCommit: z.string().nullable(),
    selected: z.array(z.string()).describe('The dispatched subtasks (the plan’s selected wave); [] when nothing was READY'),
    initialPlan: TaskGraphPlanSchema.describe('The plan this run executed'),
    dispatches: z.array(DispatchSchema),
    frontier: TaskGraphFrontierSchema,
    state: TaskGraphStateSchema,
    graph: TaskGraphRecord,
  })
  .meta({ id: 'TaskGraphRunResult' });

export const ClaimResult = z
  .object({ ok: z.literal(true), command: z.literal('task.graph-dispatch'), parentTaskId: z.string(), dispatch: DispatchSchema, graph: TaskGraphRecord })
  .meta({ id: 'TaskGraphClaimResult' });

export const HeartbeatResult = z
  .object({
    ok: z.literal(true),
    parentTaskId: z.string(),
    subtaskId: z.string(),
    leaseExpiresAt: z.string().nullable(),
    attempt: z.number().int(),
    claimLeaseMs: z.number().int(),
  })
  .meta({ id: 'TaskGraphHeartbeatResult' });

const StateResult = {
  parentTaskId: z.string(),
  subtaskId: z.string(),
  state: SubtaskStateSchema,
  reason: z.string().nullable(),
  transitions: z.array(Transition).describe('The durable transitions this call made: the subtask first, then derived ones by id'),
  frontier: TaskGraphFrontierSchema,
  graph: TaskGraphRecord,
};

export const CompleteResult = z
  .object({
    ok: z.boolean().describe('False when strict scope drift recorded FAILED'),
    command: z.literal('task.graph-complete'),
    ...StateResult,
    evidence: z.unknown().describe('The stored IMPLEMENTATION_DONE evidence'),
    scopeEvidence: z.unknown().describe('Scope Audit v1 evidence (docs/seeds/task-graph-v1.md §9); null without an Intent Map'),
    error: z.object({ code: z.literal('INTENT_SCOPE_DRIFT'), stage: z.literal('scope-audit'), recoverable: z.literal(true), message: z.string() }).optional(),
  })
  .meta({ id: 'TaskGraphCompleteResult' });

export const FailResult = z
  .object({ ok: z.literal(true), command: z.literal('task.graph-fail'), ...StateResult, changed: z.boolean() })
  .meta({ id: 'TaskGraphFailResult' });

const RecoveryOutcome = z.object({
  subtaskId: z.string(),
  state: SubtaskStateSchema,
  status: SubtaskStateSchema,
  classification: z.string(),
  action: z.string().describe('recorded-failed, ready-for-explicit-dispatch, reused-healthy-session, stopped, cleanup-<status>, none'),
  changed: z.boolean(),
  idempotent: z.boolean(),
  recoverable: z.boolean(),
  session: z.object({ id: z.string(), state: z.string().nullable() }).nullable(),
  worktree: z.object({ path: z.string(), branch: z.string(), ref: z.string() }),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
  cleanup: z.unknown(),
});

export const RecoveryResult = z
  .object({
    ok: z.literal(true),
    command: z.enum(['task.graph-recover', 'task.graph-resume', 'task.graph-stop', 'task.graph-cleanup']),
    parentTaskId: z.string(),
    graphId: z.string(),
    graph: TaskGraphRecord,
    before: z.array(RecoveryEntrySchema).optional().describe('recover: the entries before it'),
    recovery: z.array(RecoveryEntrySchema),
    outcomes: z.array(RecoveryOutcome),
    transitions: z.array(Transition),
    dispatchRequired: z.boolean().optional().describe('resume: the subtask waits for an explicit run or claim'),
    reason: z.string().optional().describe('stop: the recorded reason'),
    integrationCleanup: z.object({ status: z.string(), idempotent: z.boolean() }).nullable().optional(),
    automaticRetry: z.literal(false),
  })
  .meta({ id: 'TaskGraphRecoveryResult', description: 'The shared result of recover, resume, stop and cleanup (docs/seeds/task-graph-v1.md §10).' });

const Boundaries = z.object({
  merge: z.literal(false),
  push: z.literal(false),
  tag: z.literal(false),
  publish: z.literal(false),
  deploy: z.literal(false),
  release: z.literal(false),
  note: z.string(),
});

export const IntegrationResult = z
  .object({
    ok: z.boolean().describe('True for a SUCCEEDED integration'),
    command: z.literal('task.graph-integrate'),
    parentTaskId: z.string(),
    changed: z.boolean(),
    integration: z.unknown(),
    state: TaskGraphStateSchema,
    graph: TaskGraphRecord,
  })
  .meta({ id: 'TaskGraphIntegrationResult' });

export const ReviewResult = z
  .object({
    ok: z.literal(true),
    command: z.literal('task.graph-review'),
    parentTaskId: z.string(),
    decision: z.enum(['REVIEW_APPROVED', 'CHANGES_REQUESTED']),
    changed: z.boolean(),
    review: z.unknown(),
    state: TaskGraphStateSchema,
    authorizes: Boundaries.describe('Review authorises nothing beyond the recorded decision'),
    graph: TaskGraphRecord,
  })
  .meta({ id: 'TaskGraphReviewResult' });
