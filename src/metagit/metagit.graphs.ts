import { lockXact } from '../db/locks.js';
import type { z } from 'zod';
import type { CreateTaskGraph } from './metagit.schemas.js';
import { withTx } from '../db/tx.js';
import { appendEvents } from '../events/events.repo.js';
import { DomainError, fail } from '../http/errors.js';
import { decodeCursor, encodeCursor } from '../http/cursor.js';
import { newId } from '../lib/ids.js';
import type { Ctx } from '../todos/todos.context.js';
import { unstorable } from '../http/text.js';
import { expandOutline, SLUG_ID } from './metagit.outline.js';
import { actorOf } from '../auth/actor.js';
import { insertEdges, insertItems } from '../todos/todos.repo.js';
import { toGraph, type GraphRow, type TaskGraphView } from './metagit.view.js';
import { scopeOf, graphLock, loadGraph, loadNodes, event, withTaskGraph } from './metagit.locked.js';
import { bytes, checkIntent, insertIntent } from './metagit.intents.js';

/** What creating a graph takes: the body of `POST /v1/task-graphs` (`CreateMetagitGraph`). */
export type CreateTaskGraphInput = z.output<typeof CreateTaskGraph>;

/**
 * `POST /v1/task-graphs` (RFC `task create`): the graph and its root intent `intent-<graphId>` in
 * one transaction, with `TaskGraphCreated`. Id: `graphId` (slug pattern) or 12 random hex. A taken
 * id is 409 task_graph_exists and writes nothing.
 */
export async function createTaskGraph(ctx: Ctx, input: CreateTaskGraphInput): Promise<TaskGraphView> {
  const id = input.graphId ?? newId('td').slice(3, 15);
  const title = checkIntent(input).title;
  const scope = scopeOf(id);
  return withTx(ctx.sql, async (tx) => {
    await lockXact(tx, graphLock(ctx.principal.teamId, id));
    const [exists] = await tx`select 1 from metagit_graphs where team_id = ${ctx.principal.teamId} and id = ${id}`;
    if (exists) throw new DomainError('task_graph_exists', `task graph "${id}" already exists; use it, or pick another graphId`, { graphId: id });
    const intent = await insertIntent(ctx, tx, `intent-${id}`, input);
    const [g] = await tx<GraphRow[]>`
      insert into metagit_graphs (id, scope, title, root_intent_id, objective_id, handoff_id, created_by, team_id)
      values (${id}, ${scope}, ${title}, ${intent.id}, ${input.objectiveId ?? null}, ${input.handoffId ?? null}, ${ctx.principal.id}, ${ctx.principal.teamId})
      returning *`;
    await appendEvents(tx, g.team_id, [event(g, 'TaskGraphCreated', { title, status: 'active' }, g.revision)], actorOf(ctx.principal));
    return toGraph(g, []);
  });
}

/** `GET /v1/task-graphs/{id}` (RFC `task list --graph-id`, status): the graph with every node's status view. */
export async function getTaskGraph(ctx: Ctx, id: string): Promise<TaskGraphView> {
  return (await ctx.sql.begin('isolation level repeatable read read only', async (tx) => {
    const g = await loadGraph(ctx, tx, id);
    return toGraph(g, await loadNodes(tx, g.team_id, id));
  })) as TaskGraphView;
}

/** `GET /v1/task-graphs`: the graphs the caller may see (by id), optionally with one `status`; summaries. */
export async function listTaskGraphs(ctx: Ctx, input: { status?: string; limit?: number; cursor?: string }) {
  const limit = Math.min(input.limit ?? ctx.config.todo.listLimit, ctx.config.todo.listLimit);
  const after = input.cursor !== undefined ? (decodeCursor(input.cursor, [SLUG_ID])[0] as string) : undefined;
  const p = ctx.principal;
  const rows = await ctx.sql<GraphRow[]>`
    select g.* from metagit_graphs g left join sessions cs on cs.id = g.created_by
     where g.team_id = ${p.teamId}
       and ${p.kind === 'user' ? ctx.sql`true` : p.graphId !== null ? ctx.sql`false` : ctx.sql`cs.root_id = ${p.rootId}`}
       and ${input.status ? ctx.sql`g.status = ${input.status}` : ctx.sql`true`}
       and ${after !== undefined ? ctx.sql`g.id collate "C" > ${after}` : ctx.sql`true`}
     order by g.id collate "C" limit ${limit + 1}`;
  const more = rows.length > limit;
  const page = more ? rows.slice(0, limit) : rows;
  return {
    graphs: page.map((g) => ({
      graphId: g.id,
      title: g.title,
      status: g.status,
      rootIntentId: g.root_intent_id,
      objectiveId: g.objective_id,
      updatedAt: g.updated_at.toISOString(),
      revision: g.revision,
    })),
    nextCursor: more ? encodeCursor([page[page.length - 1].id]) : null,
  };
}

/** `GET /v1/task-graphs/{id}/ready` (RFC `task ready`): the ready nodes, by position. Writes nothing. */
export async function readyNodes(ctx: Ctx, id: string) {
  const g = await getTaskGraph(ctx, id);
  return { graphId: g.graphId, nodes: g.nodes.filter((n) => n.status === 'ready') };
}

/** `POST /v1/task-graphs/{id}/cancel`: the graph reads cancelled (its nodes are left as they are). Idempotent. */
export async function cancelTaskGraph(ctx: Ctx, id: string): Promise<TaskGraphView> {
  const out = await withTaskGraph(ctx, id, async (_tx, g) => {
    g.status = 'cancelled'; // withTaskGraph writes it, with TaskGraphStatusChanged, when it moved
    return { result: null };
  });
  return out.graph;
}

/** `POST /v1/task-graphs/{id}/reopen`: a cancelled graph is active again (completed when every node is). Idempotent. */
export async function reopenTaskGraph(ctx: Ctx, id: string): Promise<TaskGraphView> {
  const out = await withTaskGraph(ctx, id, async (_tx, g) => {
    if (g.status === 'cancelled') g.status = 'active';
    return { result: null };
  });
  return out.graph;
}

/**
 * `POST /v1/task-graphs/{id}/expand` (RFC `task expand`; docs/seeds/metagit.md §4 with Coord's deterministic rules,
 * metagit.outline.ts): adds the nodes and edges in one transaction — all or nothing — with one
 * `TaskNodeCreated` per node, then `TaskReady` for each that is ready. Errors: 400 validation_failed
 * (outline_empty/invalid, too many nodes), 409 node_id_taken, 422 dependency_not_found /
 * dependency_cycle naming the ids.
 */
export async function expandTaskGraph(ctx: Ctx, id: string, outline: string | unknown[]) {
  const maxTitle = ctx.config.todo.maxTitle;
  return withTaskGraph(ctx, id, async (tx, g, existing) => {
    if (g.status === 'cancelled') fail('invalid_transition', `task graph "${id}" is cancelled`);
    const r = expandOutline(outline, new Set(existing.keys()));
    if (!r.ok) {
      if (r.code === 'node_id_taken') throw new DomainError('node_id_taken', r.message, { ids: r.ids });
      if (r.code === 'dependency_not_found') throw new DomainError('dependency_not_found', r.message, { ids: r.ids });
      if (r.code === 'dependency_cycle') throw new DomainError('dependency_cycle', r.message, { ids: r.ids });
      fail('validation_failed', r.message, { errors: [{ path: 'body.outline', message: r.message }] });
    }
    for (const n of r.nodes) {
      for (const [what, v] of [
        ['title', n.title],
        ['project', n.project ?? undefined],
        ['repository', n.repository ?? undefined],
      ] as const) {
        const why = unstorable(v);
        if (why)
          fail('validation_failed', `node "${n.nodeId}" ${what} contains ${why}`, {
            errors: [{ path: 'body.outline', message: `node "${n.nodeId}" ${what} contains ${why}` }],
          });
      }
      if (bytes(n.title) > maxTitle)
        fail('title_too_long', `node "${n.nodeId}" title is ${bytes(n.title)} bytes; the limit is ${maxTitle} bytes`, { limit: maxTitle });
    }
    const count = r.nodes.length;
    const [{ last_position }] = await tx<{ last_position: number }[]>`
      insert into scopes (scope, last_position, team_id) values (${g.scope}, ${count}, ${g.team_id})
      on conflict (team_id, scope) do update set last_position = scopes.last_position + ${count}
      returning last_position`;
    const first = last_position - count + 1;
    const todoIds = new Map<string, string>([...existing.values()].map((e) => [e.node_id, e.todo_id]));
    for (const n of r.nodes) todoIds.set(n.nodeId, newId('td'));
    const doneDeps = new Set([...existing.values()].filter((e) => e.status === 'done').map((e) => e.node_id));
    await insertItems(
      tx,
      { teamId: g.team_id, scope: g.scope, createdBy: ctx.principal.id },
      r.nodes.map((n, i) => ({
        id: todoIds.get(n.nodeId)!,
        title: n.title,
        position: first + i,
        unfinishedDeps: n.dependsOn.filter((d) => !doneDeps.has(d)).length,
      })),
    );
    const edges = r.nodes.flatMap((n) => n.dependsOn.map((d) => [todoIds.get(n.nodeId)!, todoIds.get(d)!] as const));
    await insertEdges(tx, edges);
    await tx`
      insert into metagit_nodes (team_id, graph_id, node_id, todo_id, intent_id, project, repository)
      select ${g.team_id}, ${id}, * from unnest(${r.nodes.map((n) => n.nodeId)}::text[], ${r.nodes.map((n) => todoIds.get(n.nodeId)!)}::text[],
                                  ${r.nodes.map(() => g.root_intent_id)}::text[], ${r.nodes.map((n) => n.project)}::text[],
                                  ${r.nodes.map((n) => n.repository)}::text[])`;
    return {
      result: { added: r.nodes.map((n) => n.nodeId) },
      events: r.nodes.map((n) => ({ type: 'TaskNodeCreated', payload: { nodeId: n.nodeId, title: n.title, status: 'pending' } })),
    };
  });
}
