/**
 * Task Graph v1 execution routes (docs/architecture.md §D7 "Graphs"; seed 002; docs/seeds/task-graph-v1.md §7–§11):
 * run, fleet claim, heartbeat, complete, fail, recover, resume, stop, cleanup, integration,
 * review. Each handler parses, calls one service function and returns its result; the rules live
 * in this folder's services and the pure contract (`../contract/`).
 *
 * Every route answers a graph the caller may not see with 404 `graph_not_found`, an unknown
 * subtask with 404 `TASK_NOT_FOUND`, and a call the state does not allow with 409
 * `TASK_STATE_CONFLICT` carrying the contract's members (`stage`, `recoverable`, `taskId`,
 * `details`). Nothing changes when a call is refused.
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Config } from '../../config.js';
import type { Sql } from '../../db/client.js';
import type { ErrorCode } from '../../http/errors.js';
import { problemResponses } from '../../http/problem.js';
import type { Ctx } from '../../todos/todos.context.js';
import { GraphIdParams, TaskGraphConflictProblem } from '../graphs.schemas.js';
import { completeSubtask, failSubtask, heartbeatSubtask } from './completion.js';
import { claimGraphSubtask, runGraph } from './dispatch.js';
import {
  ClaimResult,
  CleanupBody,
  CompleteBody,
  CompleteResult,
  FailBody,
  FailResult,
  HeartbeatBody,
  HeartbeatResult,
  IntegrationBody,
  IntegrationResult,
  RecoverBody,
  RecoveryResult,
  ResumeBody,
  ReviewBody,
  ReviewResult,
  RunBody,
  RunResult,
  StopBody,
  SubtaskParams,
} from './execution.schemas.js';
import { cleanupGraph, recoverGraph, resumeSubtask, stopGraph } from './recovery.js';
import { recordIntegration, reviewGraph } from './review.js';

/** The body bound of `complete`: 2 × 10,000 reported changes with two 4 KiB paths each, and framing. */
export const COMPLETE_BODY_LIMIT = 2 * 10_000 * (2 * 4096 + 64) + 64 * 1024;

const tags = ['graph execution'];

/** The error responses of an execution route: catalogue problems plus the contract's 409. */
function errors(conflicts: ('TASK_STATE_CONFLICT' | 'DISPATCH_INTERRUPTED' | 'TASK_ALREADY_RUNNING' | 'INVALID_AGENT_CONFIG')[], ...codes: ErrorCode[]) {
  return {
    ...problemResponses('graph_not_found', 'forbidden', ...codes),
    409: TaskGraphConflictProblem.describe(`Problem codes: ${[...conflicts].sort().join(', ')}`),
  };
}

/** Registers the execution routes (listed in `src/modules.ts`). */
export function executionRoutes(app: FastifyInstance, deps: { sql: Sql; config: Config }) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const ctx = (req: { principal: Ctx['principal'] }): Ctx => ({ sql: deps.sql, config: deps.config, principal: req.principal });

  r.post(
    '/v1/graphs/:id/run',
    {
      schema: {
        tags,
        operationId: 'graphsRun',
        summary: 'Run the next wave (locked wave claim)',
        description:
          'Under the graph lock: plans once (the Graph Preflight derivation) and claims its selected wave, rechecking READY, ' +
          'remaining capacity and write-intent compatibility with every RUNNING subtask (docs/seeds/task-graph-v1.md §7). Each dispatch gets ' +
          'its own session (a child of the caller, bound to the implementer; token shown once), the Runtime worktree path and ' +
          'branch, and the graph base. The first run that dispatches fixes the base (`baseCommit`); another base later is 409. ' +
          'Nothing READY → `selected: []`, success, nothing written. Newly unlocked work waits for the next run. Owners only.',
        params: GraphIdParams,
        body: RunBody,
        response: { 200: RunResult, ...errors(['INVALID_AGENT_CONFIG', 'TASK_ALREADY_RUNNING', 'TASK_STATE_CONFLICT']) },
      },
    },
    async (req) => runGraph(ctx(req), req.params.id, req.body ?? {}),
  );

  r.post(
    '/v1/graphs/:id/subtasks/:sid/claim',
    {
      schema: {
        tags,
        operationId: 'graphsClaim',
        summary: 'Claim one subtask (fleet claim / dispatch)',
        description:
          'The same locked claim as run, for one subtask: by the graph’s owners or a session bound to its implementer Agent. ' +
          '409 `TASK_ALREADY_RUNNING` when another dispatch holds it; `TASK_STATE_CONFLICT` (stage graph-scheduling) when it is ' +
          'not READY, no slot is free, or its write intent overlaps a RUNNING subtask (`details.conflict`).',
        params: SubtaskParams,
        body: RunBody.nullish(),
        response: { 200: ClaimResult, ...errors(['INVALID_AGENT_CONFIG', 'TASK_ALREADY_RUNNING', 'TASK_STATE_CONFLICT'], 'TASK_NOT_FOUND') },
      },
    },
    async (req) => claimGraphSubtask(ctx(req), req.params.id, req.params.sid, req.body ?? {}),
  );

  r.post(
    '/v1/graphs/:id/subtasks/:sid/heartbeat',
    {
      schema: {
        tags,
        operationId: 'graphsHeartbeat',
        summary: 'Extend a dispatch’s lease',
        description:
          'Extends the claim lease (`claim_lease` after now). A dispatch whose lease expired, or whose session stopped, is FAILED ' +
          '`interrupted` at once and refused here (409): resume it and dispatch again.',
        params: SubtaskParams,
        body: HeartbeatBody.nullish(),
        response: { 200: HeartbeatResult, ...errors(['TASK_STATE_CONFLICT', 'DISPATCH_INTERRUPTED'], 'TASK_NOT_FOUND') },
      },
    },
    async (req) => heartbeatSubtask(ctx(req), req.params.id, req.params.sid, req.body ?? {}),
  );

  r.post(
    '/v1/graphs/:id/subtasks/:sid/complete',
    {
      bodyLimit: COMPLETE_BODY_LIMIT,
      schema: {
        tags,
        operationId: 'graphsComplete',
        summary: 'Complete with IMPLEMENTATION_DONE evidence (and Scope Audit v1)',
        description:
          'Checks the report (full commit ids, the dispatch’s base, a commit that differs from it, bounded lists), then audits ' +
          'the reported paths against the subtask’s write intent (docs/seeds/task-graph-v1.md §9) with the map’s policy: observe/warn → SUCCEEDED ' +
          '(warn with a visible reason), strict drift → FAILED `INTENT_SCOPE_DRIFT` (recoverable; dependents BLOCKED). No map, no ' +
          'audit. SUCCEEDED readies dependents in the same transaction. A report that cannot be accepted changes nothing: 422 ' +
          '`AGENT_RUNTIME_ERROR` (stage completion) or 409 `TASK_STATE_CONFLICT` (stage scope-audit, failing closed). A report for an ' +
          'attempt already recorded interrupted (lease expired, runner reported dead) is 409 `DISPATCH_INTERRUPTED`: resume, then dispatch again.',
        params: SubtaskParams,
        body: CompleteBody,
        response: {
          200: CompleteResult,
          ...errors(['TASK_STATE_CONFLICT', 'DISPATCH_INTERRUPTED'], 'TASK_NOT_FOUND', 'AGENT_RUNTIME_ERROR', 'payload_too_large'),
        },
      },
    },
    async (req) => completeSubtask(ctx(req), req.params.id, req.params.sid, req.body),
  );

  r.post(
    '/v1/graphs/:id/subtasks/:sid/fail',
    {
      schema: {
        tags,
        operationId: 'graphsFail',
        summary: 'Report a failed dispatch',
        description:
          'RUNNING → FAILED with the runner’s error (e.g. `AGENT_EXIT_NONZERO` with `exitCode`); siblings untouched, dependents ' +
          'BLOCKED. A repeat with the same code changes nothing (`changed: false`).',
        params: SubtaskParams,
        body: FailBody,
        response: { 200: FailResult, ...errors(['TASK_STATE_CONFLICT', 'DISPATCH_INTERRUPTED'], 'TASK_NOT_FOUND') },
      },
    },
    async (req) => failSubtask(ctx(req), req.params.id, req.params.sid, req.body),
  );

  r.post(
    '/v1/graphs/:id/recover',
    {
      schema: {
        tags,
        operationId: 'graphsRecover',
        summary: 'Recover: reconcile stranded dispatches',
        description:
          'Records every RUNNING subtask whose session stopped, whose lease expired, or that the runner reports dead ' +
          '(`observations`) as FAILED `interrupted`. Never relaunches, replays or retries; never infers completion. Idempotent.',
        params: GraphIdParams,
        body: RecoverBody,
        response: { 200: RecoveryResult, ...errors(['TASK_STATE_CONFLICT'], 'TASK_NOT_FOUND') },
      },
    },
    async (req) => recoverGraph(ctx(req), req.params.id, req.body ?? {}),
  );

  r.post(
    '/v1/graphs/:id/resume',
    {
      schema: {
        tags,
        operationId: 'graphsResume',
        summary: 'Resume one subtask (clear the recovery gate)',
        description:
          'FAILED or STOPPED → READY (or WAITING), dependents re-derived; dispatch stays an explicit run or claim ' +
          '(`dispatchRequired: true`). A healthy RUNNING subtask is left alone (`reused-healthy-session`). Anything else, and ' +
          'a repeat, is `action: none` with an error object and changes nothing.',
        params: GraphIdParams,
        body: ResumeBody,
        response: { 200: RecoveryResult, ...errors(['TASK_STATE_CONFLICT'], 'TASK_NOT_FOUND') },
      },
    },
    async (req) => resumeSubtask(ctx(req), req.params.id, req.body),
  );

  r.post(
    '/v1/graphs/:id/stop',
    {
      schema: {
        tags,
        operationId: 'graphsStop',
        summary: 'Stop the graph or one subtask',
        description:
          'Active subtasks (RUNNING, READY, WAITING; a whole-graph stop also dependency-BLOCKED ones) → STOPPED with the reason; ' +
          'the stopped dispatches’ sessions are stopped, so their runners see their event streams end. Branches, commits and ' +
          'evidence are kept. Idempotent.',
        params: GraphIdParams,
        body: StopBody,
        response: { 200: RecoveryResult, ...errors(['TASK_STATE_CONFLICT'], 'TASK_NOT_FOUND') },
      },
    },
    async (req) => stopGraph(ctx(req), req.params.id, req.body),
  );

  r.post(
    '/v1/graphs/:id/cleanup',
    {
      schema: {
        tags,
        operationId: 'graphsCleanup',
        summary: 'Record the runner’s cleanup outcomes',
        description:
          'Records CLEANED / FAILED / SKIPPED per subtask (and for the integration worktree); a RUNNING subtask is recorded ' +
          'SKIPPED. An identical repeat is idempotent and writes nothing.',
        params: GraphIdParams,
        body: CleanupBody,
        response: { 200: RecoveryResult, ...errors(['TASK_STATE_CONFLICT'], 'TASK_NOT_FOUND') },
      },
    },
    async (req) => cleanupGraph(ctx(req), req.params.id, req.body),
  );

  r.put(
    '/v1/graphs/:id/integration',
    {
      schema: {
        tags,
        operationId: 'graphsRecordIntegration',
        summary: 'Record the integration result',
        description:
          'The runner’s ordered cherry-pick result: base, sources (every subtask in id order, on its Runtime branch at its verified ' +
          'commit), applied commits and the aggregate commit — or a structured conflict. Refused (409, stage integration) unless ' +
          'every subtask is SUCCEEDED and the sources match. Stores the source fingerprint. An identical repeat changes nothing.',
        params: GraphIdParams,
        body: IntegrationBody,
        response: { 200: IntegrationResult, ...errors(['TASK_STATE_CONFLICT']) },
      },
    },
    async (req) => recordIntegration(ctx(req), req.params.id, req.body),
  );

  r.post(
    '/v1/graphs/:id/review',
    {
      schema: {
        tags,
        operationId: 'graphsReview',
        summary: 'Record the aggregate review',
        description:
          '`REVIEW_APPROVED` or `CHANGES_REQUESTED` by a user or a session bound to the reviewer Agent, naming the integration’s ' +
          '`sourceFingerprint` and `aggregateCommit`; stale ones are refused (409, stage review). Approval makes the graph APPROVED ' +
          'and authorises nothing else (`authorizes`: no merge, push, tag, publish, deploy or release).',
        params: GraphIdParams,
        body: ReviewBody,
        response: { 200: ReviewResult, ...errors(['TASK_STATE_CONFLICT']) },
      },
    },
    async (req) => reviewGraph(ctx(req), req.params.id, req.body),
  );
}
