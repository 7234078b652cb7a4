/**
 * Dispatch: the locked wave claim (`run`), the fleet claim of one subtask, and `next` in a graph
 * scope (seed 002 "Bounded parallel frontier execution", "Subtask dispatch…"; docs/seeds/task-graph-v1.md §7).
 *
 * One claim path. `run`, `claim` and `next` all end in {@link claimSubtask}: under the graph lock
 * (execution/locked.ts) it re-checks the contract's guard on the current snapshot
 * (`checkSubtaskClaim`: READY, a free slot, no write-intent overlap with any RUNNING subtask),
 * registers the dispatch's own session, and moves the engine row with the engine's own claim
 * statement (`guardedClaim`, the todo seed's compare-and-set, owned by that session). The
 * coordinator creates no worktree and launches nothing: the dispatch record tells the runner on
 * the agent's machine which worktree, branch and base to use (docs/architecture.md §D8).
 */
import { insertFirstToken } from '../../tokens/tokens.repo.js';
import type { Principal } from '../../auth/principal.js';
import { actorOf } from '../../auth/actor.js';
import { emitsFor } from '../../events/events.repo.js';
import { recordSessionEvents } from '../../sessions/sessions.service.js';
import { newId, newToken } from '../../lib/ids.js';
import { guardedClaim } from '../../todos/todos.repo.js';
import type { Ctx } from '../../todos/todos.context.js';
import { checkSubtaskClaim, planGraph, type AgentRegistryRecord, type PlanSubtaskSnapshot, type TaskGraphPlan } from '../contract/index.js';
import { isCommitId, runtimeWorktree } from '../contract/execution.js';
import { compareByteOrder } from '../contract/text.js';
import { storedSubtasks } from '../graphs.view.js';
import { requireClaimer, requireOwner } from './authority.js';
import type { DispatchSchema } from './execution.schemas.js';
import { refuse, withLockedGraph, type LockedGraph } from './locked.js';
import type { z } from 'zod';

/**
 * What the runner needs to execute one dispatched subtask (the session token is shown once): the
 * type of `DispatchSchema` (execution.schemas.ts, OpenAPI `TaskGraphDispatch`).
 */
export type Dispatch = z.output<typeof DispatchSchema>;

/** The agents registry records of the graph's implementers (for the claim guard's agent facts). */
async function registry(g: LockedGraph): Promise<AgentRegistryRecord[]> {
  const implementers = [...new Set(g.rows.map((r) => r.implementer))];
  const rows = await g.tx<{ id: string; adapter: string | null; command: string | null }[]>`
    select id, adapter, command from agents where team_id = ${g.graph.team_id} and id = any(${implementers}::text[]) order by id collate "C"`;
  return rows.map((a) => ({ id: a.id, adapter: a.adapter, command: a.command, commandSource: null }));
}

/** The in-memory snapshot a sequence of claims in one transaction updates as it goes. */
interface ClaimState {
  subtasks: PlanSubtaskSnapshot[];
  agents: AgentRegistryRecord[];
}

/** Fixes the graph base on the first dispatch; a different base afterwards is refused (409). */
async function fixBase(g: LockedGraph, requested: string | undefined): Promise<{ base: string; changed: boolean }> {
  const id = g.graph.id;
  const current = g.graph.base_commit ?? null;
  if (requested !== undefined && !isCommitId(requested)) {
    refuse('TASK_STATE_CONFLICT', 'graph-scheduling', `baseCommit must be a full commit id (40 or 64 hex digits).`, { parentTaskId: id, recoverable: false });
  }
  const wanted = requested?.toLowerCase();
  if (current !== null) {
    if (wanted !== undefined && wanted !== current) {
      refuse('TASK_STATE_CONFLICT', 'graph-scheduling', `Task Graph ${id} base commit is ${current}; every run uses that base, not ${wanted}.`, {
        parentTaskId: id,
        recoverable: false,
        details: { baseCommit: current, requestedBaseCommit: wanted },
      });
    }
    return { base: current, changed: false };
  }
  if (wanted === undefined) {
    refuse('TASK_STATE_CONFLICT', 'graph-scheduling', `Task Graph ${id} has no base commit yet: the first run must send baseCommit (the repository HEAD).`, {
      parentTaskId: id,
      recoverable: true,
    });
  }
  await g.tx`update graphs set base_commit = ${wanted} where team_id = ${g.graph.team_id} and id = ${id}`;
  g.graph.base_commit = wanted;
  return { base: wanted, changed: true };
}

/**
 * The one claim (see the file header): the contract's guard on `state`, a session of the
 * dispatch's own (a child of the caller when the caller is a session, bound to the implementer,
 * carrying the graph and subtask ids), the engine's guarded claim owned by it, and the dispatch
 * facts on the subtask row. Updates `state` so the next claim of the same transaction sees this
 * one RUNNING. Throws the guard's 409 (`TASK_ALREADY_RUNNING`, `TASK_STATE_CONFLICT` with
 * `details.conflict` for write intent, …) or 404 `TASK_NOT_FOUND`.
 */
async function claimSubtask(g: LockedGraph, state: ClaimState, subtaskId: string, base: string, sessionWaitMs: number | null): Promise<Dispatch> {
  const { tx, ctx, graph } = g;
  guard(g, state, subtaskId);
  const row = g.row(subtaskId);
  const attempt = (row.attempt ?? 0) + 1;
  const caller: Principal = ctx.principal;
  const sessionId = newId('s');
  const token = newToken();
  // A child of the caller that anchors to itself: it is not in the owners' subtree, so the token an
  // implementer run gets is never an owner's (authority.ts), and the caller can still stop it.
  const parentId = caller.kind === 'session' ? caller.id : null;
  const rootId = sessionId;
  await tx`
    insert into sessions (id, name, parent_id, root_id, agent_id, graph_id, subtask_id, created_by, team_id)
    values (${sessionId}, ${`${graph.id}/${subtaskId}#${attempt}`}, ${parentId}, ${rootId}, ${row.implementer},
            ${graph.id}, ${subtaskId}, ${caller.id}, ${graph.team_id})`;
  await insertFirstToken(tx, graph.team_id, { sessionId, createdBy: caller.id, secret: token }, actorOf(caller));
  await recordSessionEvents(tx, graph.team_id, actorOf(caller), 'session-created', [{ id: sessionId, name: `${graph.id}/${subtaskId}#${attempt}` }]);
  const claimed = await guardedClaim(tx, {
    id: row.todo_id,
    actor: sessionId,
    by: actorOf(ctx.principal),
    override: true,
    emit: emitsFor(graph.scope, ctx.config.todo.emitEvents),
    leaseMs: ctx.config.todo.claimLeaseMs,
  });
  if (!claimed) {
    // The guard held on the locked snapshot, so the engine row disagrees with it: contradictory facts.
    refuse(
      'TASK_STATE_CONFLICT',
      'graph-scheduling',
      `Task Graph subtask ${graph.id}/${subtaskId} is not claimable in the engine although the graph reads it READY.`,
      {
        parentTaskId: graph.id,
        subtaskId,
        recoverable: false,
      },
    );
  }
  await tx`
    update graph_subtasks set attempt = ${attempt}, session_id = ${sessionId}, dispatched_by = ${caller.id}, dispatched_at = now(),
           implementation_commit = null, scope_evidence = null, evidence = null, last_error = null, cleanup = null,
           reason = null, updated_at = now()
     where team_id = ${graph.team_id} and graph_id = ${graph.id} and subtask_id = ${subtaskId}`;
  state.subtasks = state.subtasks.map((s) => (s.id === subtaskId ? { ...s, state: 'RUNNING', reason: null } : s));
  const worktree = runtimeWorktree(graph.id, subtaskId);
  const declaration = graph.intent_map?.subtasks.find((d) => d.id === subtaskId);
  return {
    parentTaskId: graph.id,
    subtaskId,
    attempt,
    implementer: row.implementer,
    title: row.title,
    spec: row.spec ?? '',
    dependsOn: [...row.depends_on].sort(compareByteOrder),
    writeIntent: declaration ? [...declaration.writeIntent] : null,
    scopePolicy: graph.intent_map?.scopePolicy ?? null,
    session: { id: sessionId, token, agentId: row.implementer, parentId },
    worktree: { ...worktree, baseCommit: base },
    todoId: row.todo_id,
    leaseExpiresAt: claimed.lease_expires_at ? claimed.lease_expires_at.toISOString() : null,
    claimLeaseMs: ctx.config.todo.claimLeaseMs,
    sessionWaitMs,
    dispatchedBy: caller.id,
  };
}

/** The contract's claim guard on `state` (`checkSubtaskClaim`), or its refusal. */
function guard(g: LockedGraph, state: ClaimState, subtaskId: string): void {
  const graph = g.graph;
  const check = checkSubtaskClaim(
    { parentTaskId: graph.id, maxConcurrency: graph.max_concurrency, subtasks: state.subtasks, intentMap: graph.intent_map, agents: state.agents },
    subtaskId,
  );
  if (!check.ok) {
    const e = check.error;
    refuse(e.code, e.stage, e.message, { parentTaskId: graph.id, subtaskId: e.details.subtaskId, recoverable: e.recoverable, details: e.details });
  }
}

async function claimState(g: LockedGraph): Promise<ClaimState> {
  return { subtasks: storedSubtasks(g.rows, true), agents: await registry(g) };
}

/** The plan of the locked snapshot (the same derivation as Graph Preflight), or its 409. */
function lockedPlan(g: LockedGraph, state: ClaimState): TaskGraphPlan {
  const plan = planGraph({
    parentTaskId: g.graph.id,
    maxConcurrency: g.graph.max_concurrency,
    subtasks: state.subtasks,
    intentMap: g.graph.intent_map,
    agents: state.agents,
  });
  if (!plan.ok) {
    const e = plan.error;
    refuse(e.code, e.stage, e.message, { parentTaskId: g.graph.id, subtaskId: e.details.subtaskId, recoverable: e.recoverable, details: e.details });
  }
  return plan.value;
}

/**
 * `POST /v1/graphs/{id}/run` (seed 002 "Bounded parallel frontier execution"; docs/seeds/task-graph-v1.md §7): under the
 * graph lock, plans once (the Graph Preflight derivation) and claims its selected wave, each
 * subtask through {@link claimSubtask}. Newly unlocked work waits for the next run. Nothing READY
 * → `selected: []`, success, nothing written. The first run that dispatches fixes the graph base
 * (`baseCommit`, 40/64 hex); a later run with another base is 409 `TASK_STATE_CONFLICT`.
 * Owners only (authority.ts). Returns the plan it executed, the dispatches (each with its session
 * token, once) and the fresh record.
 */
export async function runGraph(ctx: Ctx, id: string, input: { baseCommit?: string; sessionWaitMs?: number }) {
  const out = await withLockedGraph(ctx, id, async (g) => {
    requireOwner(ctx.principal, g.graph, 'run it');
    if (g.graph.base_commit) await fixBase(g, input.baseCommit); // another base is refused even when nothing is READY
    const state = await claimState(g);
    const plan = lockedPlan(g, state);
    const selected = plan.wave.selected;
    if (selected.length === 0) return { result: { plan, dispatches: [] as Dispatch[], baseCommit: g.graph.base_commit ?? null } };
    const { base, changed } = await fixBase(g, input.baseCommit);
    const dispatches: Dispatch[] = [];
    for (const subtaskId of selected) dispatches.push(await claimSubtask(g, state, subtaskId, base, input.sessionWaitMs ?? null));
    return { result: { plan, dispatches, baseCommit: base }, direct: selected, graphChanged: changed };
  });
  return {
    ok: true as const,
    command: 'task.graph-run' as const,
    parentTaskId: id,
    baseCommit: out.result.baseCommit,
    selected: out.result.dispatches.map((d) => d.subtaskId),
    initialPlan: out.result.plan,
    dispatches: out.result.dispatches,
    frontier: out.graph.frontier,
    state: out.graph.state,
    graph: out.graph,
  };
}

/**
 * `POST /v1/graphs/{id}/subtasks/{sid}/claim` (fleet claim; docs/seeds/task-graph-v1.md §7 `graph-dispatch`'s
 * claim): the same locked claim for one subtask, by the graph's owners or a session bound to its
 * implementer. `baseCommit` as for run (required on the graph's first dispatch).
 */
export async function claimGraphSubtask(ctx: Ctx, id: string, subtaskId: string, input: { baseCommit?: string; sessionWaitMs?: number }) {
  const out = await withLockedGraph(ctx, id, async (g) => {
    requireClaimer(ctx.principal, g.graph, g.row(subtaskId));
    const state = await claimState(g);
    guard(g, state, subtaskId);
    const { base, changed } = await fixBase(g, input.baseCommit);
    const dispatch = await claimSubtask(g, state, subtaskId, base, input.sessionWaitMs ?? null);
    return { result: dispatch, direct: [subtaskId], graphChanged: changed };
  });
  return { ok: true as const, command: 'task.graph-dispatch' as const, parentTaskId: id, dispatch: out.result, graph: out.graph };
}

/**
 * `next` in scope `graph:<id>` (POST /v1/todos/next): the first subtask in byte order of id that
 * is implemented by the caller's Agent and passes the claim guard, claimed through
 * {@link claimSubtask}; `{claimed:false}` when there is none (capacity, write intent and
 * dependencies all count). Needs a session bound to an Agent, other than a dispatch's own
 * session; the graph must have its base (a
 * first `run` or `claim` with `baseCommit` fixes it), else `{claimed:false}` with the reason.
 */
export async function nextGraphSubtask(ctx: Ctx, id: string) {
  const p = ctx.principal;
  const agent = p.kind === 'session' ? p.agentId : null;
  const out = await withLockedGraph<{ dispatch: Dispatch | null; reason: string | null }>(ctx, id, async (g) => {
    if (!agent) return { result: { dispatch: null as Dispatch | null, reason: 'the caller is not a session bound to an Agent (agentId)' } };
    // A dispatch's own session is bound to its implementer's Agent too, but it never claims
    // (authority.ts; `requireClaimer` refuses it on the claim route): without this, an
    // implementer's token took its siblings' work through `next` (found by the HTTP test suites).
    if (p.kind === 'session' && p.graphId !== null) {
      return { result: { dispatch: null, reason: "a dispatch's own session (an implementer's token) cannot claim; its runner or the graph's owners do" } };
    }
    if (!g.graph.base_commit) return { result: { dispatch: null, reason: `Task Graph ${id} has no base commit yet; a first run fixes it` } };
    const state = await claimState(g);
    const candidates = g.derived.filter((s) => s.state === 'READY' && g.row(s.id).implementer === agent).map((s) => s.id);
    for (const subtaskId of candidates) {
      const check = checkSubtaskClaim(
        { parentTaskId: id, maxConcurrency: g.graph.max_concurrency, subtasks: state.subtasks, intentMap: g.graph.intent_map, agents: state.agents },
        subtaskId,
      );
      if (!check.ok) continue; // at capacity, or its write intent overlaps a RUNNING subtask
      const dispatch = await claimSubtask(g, state, subtaskId, g.graph.base_commit, null);
      return { result: { dispatch, reason: null }, direct: [subtaskId] };
    }
    return { result: { dispatch: null, reason: `no READY subtask of Agent "${agent}" can be claimed now` } };
  });
  return out.result;
}
