/**
 * How the graph routes read stored graphs: the visibility rule, the `graphs` row and the subtask
 * rows joined with their engine rows and execution facts. Plain SQL; the meaning of the rows is
 * graphs.view.ts's.
 *
 * Visibility (docs/architecture.md §D2, "a session outside a scope gets 404"): only graphs of the caller's
 * team (graph ids are unique per team). There users see every graph. A
 * session sees a graph when the graph was created in its subtree (same `rootId` as the creating
 * session), or when the session is bound to an Agent the graph names (an implementer, the planner
 * or the reviewer): a worker for that Agent, or a subtask session a dispatch created. Anyone else
 * gets 404 `graph_not_found`, exactly as for a missing id.
 */
import type postgres from 'postgres';
import type { Principal } from '../auth/principal.js';
import type { Db } from '../db/client.js';
import { teamLock } from '../db/locks.js';
import { fail } from '../http/errors.js';
import { isTaskId } from './contract/ids.js';
import type { GraphRow, SubtaskRow } from './graphs.view.js';
import { leaseEndSql, leaseExpiredSql } from '../todos/todos.view.js';

const GRAPH_PREFIX = 'graph:';

/** The todo scope of a graph: `graph:<parentTaskId>`. */
export const graphScope = (id: string) => `${GRAPH_PREFIX}${id}`;

/** SQL over a scope column: true for a graph's scope ({@link graphScope}). */
export const isGraphScopeSql = (db: Db, column: postgres.PendingQuery<postgres.Row[]>) => db`${column} like ${`${GRAPH_PREFIX}%`}`;

/** SQL over a graph's scope column: the graph's id (what follows `graph:`). */
export const graphIdOfScopeSql = (db: Db, column: postgres.PendingQuery<postgres.Row[]>) => db`substr(${column}, ${GRAPH_PREFIX.length + 1})`;

/** The advisory lock every writer of graph `id` of team `teamId` holds (src/db/locks.ts `teamLock`). */
export const graphLock = (teamId: string, id: string) => teamLock(teamId, graphScope(id));

/** 404 `graph_not_found`, with the id bounded. */
export function graphNotFound(id: string): never {
  fail('graph_not_found', `Task Graph not found: ${id.length > 128 ? `${id.slice(0, 128)}…` : id}`);
}

/** The graph columns every read selects (alias `g`, and `cs` for the creating session). */
export function graphColumns(db: Db) {
  return db`g.team_id, g.id, g.scope, g.parent, g.max_concurrency, g.intent_map, g.created_by, g.created_at, g.updated_at, g.revision,
            g.base_commit, g.integration, g.review, cs.root_id as creator_root`;
}

/**
 * SQL (over alias `g` for the graph and `cs` for its creating session, left-joined) deciding
 * whether `p` may see the graph. See the file header.
 */
export function visibleTo(db: Db, p: Principal) {
  if (p.kind === 'user') return db`g.team_id = ${p.teamId}`;
  // A dispatch's own session (COORD_TOKEN of one implementer run) sees its graph and nothing else.
  if (p.graphId !== null) return db`(g.team_id = ${p.teamId} and g.id = ${p.graphId})`;
  const agent = p.agentId;
  return db`(g.team_id = ${p.teamId} and (cs.root_id = ${p.rootId}
             ${
               agent === null
                 ? db``
                 : db`or g.parent->>'planner' = ${agent} or g.parent->>'reviewer' = ${agent}
                or exists (select 1 from graph_subtasks ga where ga.team_id = g.team_id and ga.graph_id = g.id and ga.implementer = ${agent})`
             }))`;
}

/**
 * Reads graph `id` if `p` may see it, else 404 `graph_not_found`. `lock` takes the row `FOR
 * UPDATE` as well (writers already hold the graph's advisory lock; the row lock orders them with
 * create).
 */
export async function loadVisibleGraph(db: Db, p: Principal, id: string): Promise<GraphRow> {
  if (!isTaskId(id)) graphNotFound(id);
  const [graph] = await db<GraphRow[]>`
    select ${graphColumns(db)}
      from graphs g left join sessions cs on cs.id = g.created_by
     where g.id = ${id} and ${visibleTo(db, p)}`;
  if (!graph) graphNotFound(id);
  return graph;
}

/**
 * The subtask rows of graph `id` of team `teamId` with their engine rows and execution facts. `interrupted` is
 * set when the todo row is in progress but its owner session is no longer active or its claim
 * lease (`leaseMs`, 0 = none) expired, both against the database clock.
 */
export async function loadSubtaskRows(db: Db, teamId: string, id: string, leaseMs: number, withSpecs: boolean): Promise<SubtaskRow[]> {
  return db<SubtaskRow[]>`
    select gs.subtask_id, gs.todo_id, gs.implementer, gs.title, ${withSpecs ? db`gs.spec` : db`null as spec`}, gs.depends_on,
           gs.outcome, gs.reason, gs.evidence, greatest(gs.updated_at, t.updated_at) as updated_at,
           t.status, t.unfinished_deps, t.note, t.owner, t.revision as todo_revision,
           gs.attempt, gs.session_id, ss.status as session_status, gs.dispatched_by, gs.dispatched_at,
           gs.implementation_commit, gs.scope_evidence, gs.last_error, gs.cleanup,
           case when t.status = 'in-progress' and ${leaseMs}::float8 > 0
                then ${leaseEndSql(db, leaseMs)} end as lease_expires_at,
           case when t.status <> 'in-progress' then null
                when os.status is distinct from 'active' then 'session-stopped'
                when ${leaseExpiredSql(db, leaseMs)}
                then 'lease-expired' end as interrupted
      from graph_subtasks gs
      join todos t on t.id = gs.todo_id
      left join sessions os on os.id = t.owner
      left join sessions ss on ss.id = gs.session_id
     where gs.team_id = ${teamId} and gs.graph_id = ${id}`;
}
