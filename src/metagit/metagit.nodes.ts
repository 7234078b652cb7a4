import { withTx } from '../db/tx.js';
import type { z } from 'zod';
import type { BindAcl } from './metagit.schemas.js';
import { appendEvents, emitsFor } from '../events/events.repo.js';
import { DomainError, fail } from '../http/errors.js';
import { blockItems, cascade, completeContractRow, guardedClaim, reopenItems, startItem } from '../todos/todos.repo.js';
import { readySql } from '../todos/todos.view.js';
import type { Ctx } from '../todos/todos.context.js';
import { slug, SLUG_ID } from './metagit.outline.js';
import { actorOf } from '../auth/actor.js';
import { nodeStatus, graphNotFound, type GraphRow, type TaskNodeView } from './metagit.view.js';
import { loadGraph, event, withTaskGraph, nodeOf, refuseStatus, requireActive, touched } from './metagit.locked.js';
import { bytes } from './metagit.intents.js';
import { getTaskGraph } from './metagit.graphs.js';

/**
 * `POST …/nodes/{nodeId}/start` (RFC `task start`, "start without a scheduler"): the engine's claim
 * of a ready node, owned by the calling session — two agents never start one node. Errors: 403
 * claim_requires_session (users do not claim), 409 dependency_blocked (pending), already_claimed
 * (running), invalid_transition (blocked, completed, cancelled).
 */
export async function startNode(ctx: Ctx, id: string, nodeId: string) {
  const p = ctx.principal;
  if (p.kind !== 'session') fail('claim_requires_session', 'starting a node is a claim: it needs a session identity');
  return withTaskGraph(ctx, id, async (tx, g, nodes) => {
    requireActive(g);
    const n = nodeOf(nodes, id, nodeId);
    const status = nodeStatus(n);
    if (status === 'running') throw new DomainError('already_claimed', `node ${id}/${nodeId} is already running (owner ${n.owner})`, { owner: n.owner });
    if (status !== 'ready') refuseStatus(id, n, 'start');
    const claimed = await guardedClaim(tx, {
      id: n.todo_id,
      actor: p.id,
      by: actorOf(p),
      override: false,
      emit: emitsFor(g.scope, ctx.config.todo.emitEvents),
      leaseMs: ctx.config.todo.claimLeaseMs,
    });
    if (!claimed) throw new DomainError('already_claimed', `node ${id}/${nodeId} could not be claimed`, {});
    touched(tx, g);
    return { result: { nodeId }, events: [{ type: 'TaskStarted', payload: { nodeId, status: 'running', owner: p.id } }] };
  });
}

/**
 * `POST …/nodes/{nodeId}/complete` (RFC `task complete`): running (by its owner or a user) or
 * blocked → completed through the engine's done (the cascade readies dependents; `TaskReady` once
 * each). A ready node completes in one step (claimed and done in the same transaction). Errors: 409
 * dependency_blocked (pending), invalid_transition (completed or cancelled: reopen first), 403
 * forbidden (someone else's running node).
 */
export async function completeNode(ctx: Ctx, id: string, nodeId: string) {
  const p = ctx.principal;
  return withTaskGraph(ctx, id, async (tx, g, nodes) => {
    requireActive(g);
    const n = nodeOf(nodes, id, nodeId);
    const status = nodeStatus(n);
    if (status === 'running' && n.owner !== p.id && p.kind !== 'user')
      fail('forbidden', `node ${id}/${nodeId} is running for ${n.owner}; only its owner or an operator completes it`);
    if (status === 'blocked' && n.unfinished_deps > 0) {
      // Blocking never skips the DAG: a blocked node completes only once its dependencies have.
      throw new DomainError('dependency_blocked', `node ${id}/${nodeId} waits on unfinished dependencies: ${n.depends_on.join(', ')}`, {
        dependsOn: n.depends_on,
      });
    }
    if (status === 'ready') {
      // Started and completed in one step; `next` may have started it meanwhile (it takes no graph lock).
      if (!(await startItem(tx, n.todo_id, p.id))) throw new DomainError('already_claimed', `node ${id}/${nodeId} was just started by another session`, {});
    } else if (status !== 'running' && status !== 'blocked') {
      refuseStatus(id, n, 'complete');
    }
    await completeContractRow(tx, n.todo_id, p.id, actorOf(p), ctx.config.todo.emitEvents);
    touched(tx, g);
    return { result: { nodeId }, events: [{ type: 'TaskCompleted', payload: { nodeId, status: 'completed' } }] };
  });
}

/** `POST …/nodes/{nodeId}/block` (RFC `task block --reason`): ready, pending or running → blocked with the reason. */
export async function blockNode(ctx: Ctx, id: string, nodeId: string, reason: string) {
  const p = ctx.principal;
  const text = reason.trim();
  if (!text) fail('validation_failed', 'reason is required', { errors: [{ path: 'body.reason', message: 'must not be empty' }] });
  if (bytes(text) > ctx.config.todo.maxNote)
    fail('note_too_long', `reason is ${bytes(text)} bytes; the limit is ${ctx.config.todo.maxNote} bytes`, { limit: ctx.config.todo.maxNote });
  return withTaskGraph(ctx, id, async (tx, g, nodes) => {
    requireActive(g);
    const n = nodeOf(nodes, id, nodeId);
    const status = nodeStatus(n);
    if (status === 'completed' || status === 'cancelled') refuseStatus(id, n, 'block');
    if (status === 'running' && n.owner !== p.id && p.kind !== 'user')
      fail('forbidden', `node ${id}/${nodeId} is running for ${n.owner}; only its owner or an operator blocks it`);
    if (status === 'blocked' && n.note === text) return { result: { nodeId } };
    await blockItems(tx, [n.todo_id], { ownerIfNone: p.id, note: text });
    touched(tx, g);
    return { result: { nodeId }, events: [{ type: 'TaskBlocked', payload: { nodeId, status: 'blocked', reason: text } }] };
  });
}

/** `POST …/nodes/{nodeId}/cancel` (RFC `cancel`): any non-terminal node → cancelled; its dependents stay pending and name it. */
export async function cancelNode(ctx: Ctx, id: string, nodeId: string) {
  const p = ctx.principal;
  return withTaskGraph(ctx, id, async (tx, g, nodes) => {
    requireActive(g);
    const n = nodeOf(nodes, id, nodeId);
    const status = nodeStatus(n);
    if (status === 'cancelled') return { result: { nodeId } };
    if (status === 'completed') refuseStatus(id, n, 'cancel');
    if ((status === 'running' || status === 'blocked') && n.owner !== p.id && p.kind !== 'user') {
      fail('forbidden', `node ${id}/${nodeId} is ${status} for ${n.owner}; only its owner or an operator cancels it`);
    }
    await tx`update metagit_nodes set cancelled_at = now() where team_id = ${g.team_id} and graph_id = ${id} and node_id = ${nodeId}`;
    await blockItems(tx, [n.todo_id], { ownerIfNone: p.id, note: 'cancelled' });
    touched(tx, g);
    return { result: { nodeId }, events: [{ type: 'TaskCancelled', payload: { nodeId, status: 'cancelled' } }] };
  });
}

/**
 * `POST …/nodes/{nodeId}/reopen` (Coord's explicit way out of a terminal or blocked state; docs/seeds/metagit.md §9):
 * blocked, cancelled or completed → pending/ready again. Reopening a completed node re-blocks its
 * unclaimed ready dependents (the engine's cascade).
 */
export async function reopenNode(ctx: Ctx, id: string, nodeId: string) {
  return withTaskGraph(ctx, id, async (tx, g, nodes) => {
    requireActive(g);
    const n = nodeOf(nodes, id, nodeId);
    const status = nodeStatus(n);
    if (status === 'ready' || status === 'pending' || status === 'running') {
      throw new DomainError('invalid_transition', `node ${id}/${nodeId} is ${status}: only a blocked, cancelled or completed node is reopened`, {
        nodeStatus: status,
      });
    }
    await tx`update metagit_nodes set cancelled_at = null where team_id = ${g.team_id} and graph_id = ${id} and node_id = ${nodeId}`;
    await reopenItems(tx, [n.todo_id], { includeDone: true, clearNote: true });
    if (n.status === 'done') await cascade(tx, n.todo_id, 1);
    touched(tx, g);
    return { result: { nodeId }, events: [{ type: 'TaskReopened', payload: { nodeId, status: n.unfinished_deps > 0 ? 'pending' : 'ready', from: status } }] };
  });
}

/** POSIX shell quoting: plain words as they are, anything else in single quotes. */
function q(value: string): string {
  return /^[\w./:@%+=-]+$/.test(value) ? value : `'${value.replaceAll("'", "'\\''")}'`;
}

/** What binding an ACL takes: the body of `PUT …/nodes/{nodeId}/acl` (`BindAcl`). */
export type AclInput = z.output<typeof BindAcl>;

/**
 * `PUT …/nodes/{nodeId}/acl` (RFC `task bind-acl`, docs/seeds/metagit.md §5): stores the binding and the suggested
 * commands, and sets the node's agent. Hints only: no git, no lease, no worktree, no other side
 * effect. Writes `TaskAclBound`.
 */
export async function bindAcl(ctx: Ctx, id: string, nodeId: string, input: AclInput) {
  return withTaskGraph(ctx, id, async (tx, g, nodes) => {
    requireActive(g);
    const n = nodeOf(nodes, id, nodeId);
    const repo = n.repository?.includes('/') ? n.repository : n.project && n.repository ? `${n.project}/${n.repository}` : (n.repository ?? 'PROJECT/REPO');
    const branch = input.branch ?? `agent/${nodeId}-${slug(n.title)}`;
    const pattern = input.pattern ?? '**/*';
    const acl = {
      branch,
      leaseId: input.leaseId ?? null,
      worktreeId: input.worktreeId ?? null,
      claimIds: input.claimIds ?? [],
      // Every value is shell-quoted: the commands are suggestions a person or agent may paste.
      commands: [
        `metagit branch allocate --repo ${q(repo)} --agent ${q(input.agentId)} --node ${q(nodeId)}`,
        `metagit branch lease acquire --repo ${q(repo)} --branch ${q(branch)} --agent ${q(input.agentId)} --allocate`,
        `metagit worktree create --repo ${q(repo)} --branch ${q(branch)}`,
        `metagit claim declare --repo ${q(repo)} --agent ${q(input.agentId)} --pattern ${q(pattern)}`,
      ],
    };
    await tx`update metagit_nodes set acl = ${JSON.stringify(acl)}::text::jsonb, agent_id = ${input.agentId}
              where team_id = ${g.team_id} and graph_id = ${id} and node_id = ${nodeId}`;
    return { result: { nodeId }, events: [{ type: 'TaskAclBound', payload: { nodeId, agentId: input.agentId, status: nodeStatus(n) } }] };
  });
}

/** `GET …/nodes/{nodeId}` (RFC `task status --node-id`). */
export async function getNode(ctx: Ctx, id: string, nodeId: string): Promise<TaskNodeView> {
  const g = await getTaskGraph(ctx, id);
  const n = g.nodes.find((x) => x.nodeId === nodeId);
  if (!n) fail('task_node_not_found', `task node not found: ${id}/${nodeId.slice(0, 128)}`);
  return n;
}

/**
 * `next` in scope `metagit:<id>`: starts the first ready node by position for the calling session.
 * The engine's own `next` shape — the lowest ready row `FOR UPDATE SKIP LOCKED`, then the guarded
 * claim — so racing agents each get a different node without waiting on the graph's lock (a start
 * changes no other node's readiness); `TaskStarted` is written in the same transaction.
 */
export async function nextNode(ctx: Ctx, id: string): Promise<{ nodeId: string | null; todoId: string | null }> {
  const p = ctx.principal;
  if (p.kind !== 'session') fail('claim_requires_session', 'starting a node is a claim: it needs a session identity');
  if (!SLUG_ID.test(id)) graphNotFound(id);
  return withTx(ctx.sql, async (tx) => {
    const g = await loadGraph(ctx, tx, id);
    if (g.status === 'cancelled') return { nodeId: null, todoId: null };
    for (;;) {
      const [pick] = await tx<{ todo_id: string; node_id: string }[]>`
        select t.id as todo_id, n.node_id from todos t join metagit_nodes n on n.team_id = t.team_id and n.todo_id = t.id
         where t.team_id = ${g.team_id} and t.scope = ${g.scope} and ${readySql(tx)}
         order by t.position, t.id limit 1 for update of t skip locked`;
      if (!pick) return { nodeId: null, todoId: null };
      const claimed = await guardedClaim(tx, {
        id: pick.todo_id,
        actor: p.id,
        by: actorOf(p),
        override: false,
        emit: emitsFor(g.scope, ctx.config.todo.emitEvents),
        leaseMs: ctx.config.todo.claimLeaseMs,
      });
      if (!claimed) continue;
      touched(tx, g);
      const [u] = await tx<GraphRow[]>`
        update metagit_graphs set updated_at = now(), revision = revision + 1 where team_id = ${g.team_id} and id = ${id} returning *`;
      await appendEvents(tx, u.team_id, [event(u, 'TaskStarted', { nodeId: pick.node_id, status: 'running', owner: p.id }, u.revision)], actorOf(p));
      return { nodeId: pick.node_id, todoId: pick.todo_id };
    }
  });
}
