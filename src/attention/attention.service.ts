/**
 * `GET /v1/attention`: what is stuck in the caller's team, why, since when and what an operator
 * may do about it, oldest first, in one keyset-paginated list. Each kind is read from a small set
 * on a healthy fleet, through its own index, never by scanning a scope's items:
 * - `expired-claim`: in progress past its lease (`leaseExpiredSql`, the `todos_in_progress_idx`
 *   range), not yet taken over or reopened by the sweep;
 * - `silent-holder`: active sessions silent past their heartbeat interval (`SILENT_SQL`) that
 *   still hold in-progress items (a free claim is no longer held: `GET /v1/sessions`'s rule);
 * - `reserved-for-gone`: unfinished items assigned to a session that is stopped or deleted, which
 *   no other session may claim (`todos_reserved_idx`; a graph subtask's assignee is its Agent,
 *   not a session, and a contract's own);
 * - `manual-block`: items an owner blocked, with the note (`todos_blocked_idx`; a graph or metagit
 *   contract's blocks are its own and come as `graph-subtask-ended`);
 * - `graph-subtask-ended`: Task Graph v1 subtasks FAILED, STOPPED or BLOCKED
 *   (`graph_subtasks_outcome_idx`);
 * - `metagit-node-blocked`: metagit nodes blocked, with the reason (`todos_blocked_idx`);
 * - `scenario-member-waiting`: members of an unfinished scenario whose task waits on upstream
 *   members' unfinished work (WAITING ON), since the task was seeded; no action of its own, the
 *   upstream's entries (a block, an expired claim, a reservation) carry the remedy. Read per
 *   scenario of the team, not per item.
 * Operators only (a session gets `forbidden`): they hold override authority in every scope of
 * their team, so every action listed is one they may take.
 */
import type { Principal } from '../auth/principal.js';
import type { Sql } from '../db/client.js';
import { ANY_TEXT, decodeCursor, encodeCursor } from '../http/cursor.js';
import { fail } from '../http/errors.js';
import { SILENT_SQL } from '../sessions/sessions.liveness.js';
import { heldSql, leaseEndSql, leaseExpiredSql, selfManagedScopeSql } from '../todos/todos.view.js';
import type { AttentionEntry, AttentionQuery } from './attention.schemas.js';

interface Row {
  kind: AttentionEntry['kind'];
  subject_id: string;
  scope: string | null;
  title: string;
  session_id: string | null;
  session_name: string | null;
  since: Date;
  /** `since` in microseconds since the epoch: the cursor's exact key (a Date keeps milliseconds only). */
  since_us: string;
  detail: string | null;
  /** The graph subtask's id (`graph-subtask-ended`, a graph's `expired-claim`) or the metagit node's id. */
  part_id: string | null;
}

const KIND_PATTERN = /^[a-z-]+$/;
const INT8_MAX = 9223372036854775807n;

/**
 * A page of the caller's team's attention list. `leaseMs` is `claim_lease` in ms, `listLimit`
 * caps the page. Errors: 403 `forbidden` (a session), 400 `invalid_cursor`.
 */
export async function listAttention(
  sql: Sql,
  p: Principal,
  q: AttentionQuery,
  opts: { leaseMs: number; listLimit: number },
): Promise<{ entries: AttentionEntry[]; nextCursor: string | null }> {
  if (p.kind !== 'user')
    fail('forbidden', 'the attention list is for operators; a session reads what it holds with GET /v1/sessions/{its id} (GET /v1/me names it)');
  const limit = Math.min(q.limit ?? opts.listLimit, opts.listLimit);
  const after = q.cursor ? decodeCursor(q.cursor, [/^-?\d{1,19}$/, KIND_PATTERN, ANY_TEXT]) : null;
  // 19 digits can still overflow int8: a cursor this server issued never does.
  if (after && (BigInt(String(after[0])) > INT8_MAX || BigInt(String(after[0])) < -INT8_MAX))
    fail('invalid_cursor', 'cursor is not one this server issued; start again without it');
  const team = p.teamId;
  const want = (k: AttentionEntry['kind']) => (q.kind === undefined || q.kind === k ? sql`true` : sql`false`);
  const rows = await sql<Row[]>`
    select a.*, s.name as session_name from (select *, (extract(epoch from since) * 1000000)::int8::text as since_us from (
      select 'expired-claim'::text as kind, t.id as subject_id, t.scope, t.title, t.owner as session_id,
             ${leaseEndSql(sql, opts.leaseMs)} as since, null::text as detail, gs.subtask_id as part_id
        from todos t left join graph_subtasks gs on gs.todo_id = t.id
       where ${want('expired-claim')} and t.status = 'in-progress' and t.team_id = ${team} and ${leaseExpiredSql(sql, opts.leaseMs)}
      union all
      select 'silent-holder', s.id, null, s.name, s.id, s.last_seen_at + s.heartbeat_interval_ms * interval '1 millisecond',
             'holds ' || (select count(*) from todos t where t.owner = s.id and ${heldSql(sql, opts.leaseMs)})
               || ' item(s) in progress', null
        from sessions s
       where ${want('silent-holder')} and s.team_id = ${team} and ${sql.unsafe(SILENT_SQL)}
         and exists (select 1 from todos t where t.owner = s.id and ${heldSql(sql, opts.leaseMs)})
      union all
      select 'reserved-for-gone', t.id, t.scope, t.title, t.assignee, coalesce(rs.stopped_at, t.updated_at),
             'reserved for a ' || coalesce(rs.status, 'deleted') || ' session', null
        from todos t left join sessions rs on rs.id = t.assignee
       where ${want('reserved-for-gone')} and t.assignee is not null and t.status <> 'done' and t.team_id = ${team}
         and (rs.id is null or rs.status <> 'active') and ${selfManagedScopeSql(sql)}
      union all
      select 'manual-block', t.id, t.scope, t.title, t.owner, t.updated_at, t.note, null
        from todos t
       where ${want('manual-block')} and t.status = 'blocked' and t.team_id = ${team} and ${selfManagedScopeSql(sql)}
      union all
      select 'graph-subtask-ended', gs.todo_id, 'graph:' || gs.graph_id, coalesce(gs.title, gs.subtask_id), gs.session_id, gs.updated_at,
             gs.outcome || coalesce(': ' || coalesce(gs.reason #>> '{}', gs.reason ->> 'message'), ''), gs.subtask_id
        from graph_subtasks gs
       where ${want('graph-subtask-ended')} and gs.outcome is not null and gs.team_id = ${team}
      union all
      select 'metagit-node-blocked', t.id, t.scope, t.title, t.owner, t.updated_at, t.note, mn.node_id
        from todos t join metagit_nodes mn on mn.todo_id = t.id
       where ${want('metagit-node-blocked')} and t.status = 'blocked' and t.team_id = ${team} and t.scope like 'metagit:%'
      union all
      select 'scenario-member-waiting', st.id, st.scope, m.name || ': ' || st.title, m.session_id, st.created_at,
             'waiting on ' || coalesce((
               select string_agg(d, ', ' order by d) from unnest(m.depends_on) d
                where exists (select 1 from todo_scenario_seeds ud join todos ut on ut.id = ud.todo_id
                               where ud.scenario_id = m.scenario_id and ud.member_name = d and ut.status <> 'done')), 'upstream work'),
             null
        from scenarios sc
        join scenario_members m on m.scenario_id = sc.id
        join todo_scenario_seeds sd on sd.scenario_id = m.scenario_id and sd.member_name = m.name
        join todos st on st.id = sd.todo_id
       where ${want('scenario-member-waiting')} and sc.team_id = ${team} and sc.completed_at is null
         and st.status = 'todo' and st.unfinished_deps > 0
    ) u) a left join sessions s on s.id = a.session_id
     where ${after ? sql`(a.since_us::int8, a.kind, a.subject_id) > (${String(after[0])}::int8, ${String(after[1])}, ${String(after[2])})` : sql`true`}
     order by a.since_us::int8, a.kind, a.subject_id
     limit ${limit + 1}`;
  const more = rows.length > limit;
  const page = more ? rows.slice(0, limit) : rows;
  const last = page.at(-1);
  return {
    entries: page.map(toEntry),
    nextCursor: more && last ? encodeCursor([last.since_us, last.kind, last.subject_id]) : null,
  };
}

function toEntry(r: Row): AttentionEntry {
  return {
    kind: r.kind,
    subjectId: r.subject_id,
    scope: r.scope,
    title: r.title,
    session: r.session_id ? { id: r.session_id, name: r.session_name } : null,
    since: r.since.toISOString(),
    detail: r.detail,
    actions: actionsOf(r),
  };
}

/** The requests that resolve an entry (the routes' own paths; docs/guides/dashboard.md "What needs attention"). */
function actionsOf(r: Row): AttentionEntry['actions'] {
  const item = encodeURIComponent(r.subject_id);
  const reopen = { action: 'reopen' as const, method: 'POST' as const, path: `/v1/todos/${item}/reopen` };
  const assign = { action: 'assign' as const, method: 'PUT' as const, path: `/v1/todos/${item}/assignee`, body: { assignee: null } };
  const graphId = r.scope?.startsWith('graph:') ? r.scope.slice('graph:'.length) : undefined;
  const resume = (subtaskId: string) => ({
    action: 'resume' as const,
    method: 'POST' as const,
    path: `/v1/graphs/${encodeURIComponent(graphId!)}/resume`,
    body: { subtaskId },
  });
  switch (r.kind) {
    case 'silent-holder':
      return [{ action: 'stop', method: 'POST', path: `/v1/sessions/${item}/stop` }];
    case 'graph-subtask-ended':
      return r.part_id && graphId ? [resume(r.part_id)] : [];
    case 'expired-claim':
      // A graph dispatch that outlived its lease reads FAILED (interrupted): resume it. A metagit
      // start is reopened by its contract's sweep: nothing to do.
      if (graphId) return r.part_id ? [resume(r.part_id)] : [];
      if (r.scope?.startsWith('metagit:')) return [];
      // Reopen first: a claim past its lease is still its owner's, so an assign alone would leave
      // it claimed (reassign after the reopen, as a reserved-for-gone entry would).
      return [reopen];
    case 'reserved-for-gone':
      return [assign];
    case 'manual-block':
      return [reopen];
    case 'scenario-member-waiting':
      return [];
    case 'metagit-node-blocked': {
      const graph = r.scope!.slice('metagit:'.length);
      return r.part_id
        ? [{ action: 'reopen', method: 'POST', path: `/v1/task-graphs/${encodeURIComponent(graph)}/nodes/${encodeURIComponent(r.part_id)}/reopen` }]
        : [];
    }
  }
}
