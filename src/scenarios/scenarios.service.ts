/**
 * Scenarios: a named shared list `scenario:<id>` with an orchestrator and named members, seeded
 * atomically, whose completion is derived from item state (seed 000 "In scenarios";
 * docs/seeds/todo-list.md §2, §6 "Scenario graphs", docs/seeds/todo-list.md §13).
 *
 * Completion. A member is *tracked* when it has assigned items in the scope or a required result,
 * and *complete* when every item assigned to it is done and its required result is published.
 * The scenario is complete when it has at least one tracked member and every tracked member is
 * complete (a scenario with no tracked work never completes: there is nothing to derive from).
 * `scenarios.completed_at` is written once, by a guarded `UPDATE … WHERE completed_at IS NULL`,
 * in the same transaction as the `scenario-completed` event. Because the todo engine has no hook
 * for scenario scopes, completion is evaluated (a) in the transaction that publishes a result,
 * (b) on every status/detail read, (c) on every sweep tick (`runSweep`). So the event follows the
 * last `done` within one `sweep_interval` (default 1 min) at worst, at once when someone reads the
 * status, and in the same transaction when a result publication is the last missing piece.
 */
import type { Principal } from '../auth/principal.js';
import { insertFirstToken, insertTokens } from '../tokens/tokens.repo.js';
import type { Config } from '../config.js';
import type { Db, Sql } from '../db/client.js';
import { withTx } from '../db/tx.js';
import { appendEvents, emitsFor, topicOf, type EventInput } from '../events/events.repo.js';
import { recordSessionEvents } from '../sessions/sessions.service.js';
import { decodeCursor, encodeCursor } from '../http/cursor.js';
import { DomainError, fail } from '../http/errors.js';
import { newId, newToken } from '../lib/ids.js';
import { eventPayload, selectItems, type StoredStatus } from '../todos/todos.view.js';
import { scopeCountsSql } from '../scopes/scopes.counts.js';
import { checkMembers, NAME_PATTERN, type MemberInput } from './scenarios.plan.js';
import type { z } from 'zod';
import type { MemberStatus as MemberStatusSchema } from './scenarios.schemas.js';
import { findScenarioId, scenarioAccess, scenarioNotFound, scenarioScope } from './scenarios.scope.js';
import { actorOf, type Actor } from '../auth/actor.js';
import { insertEdges, insertItems } from '../todos/todos.repo.js';

export interface ScenarioCtx {
  sql: Sql;
  config: Config;
  principal: Principal;
}

export interface ScenarioMemberView {
  name: string;
  sessionId: string;
  /** An existing session granted access (true), or one created for the scenario (false). */
  shared: boolean;
  task?: string;
  dependsOn: string[];
  requiresResult: boolean;
  /** The member's original seed item (stable even when the item is reassigned). */
  seedId?: string;
  result?: unknown;
  resultAt?: string;
}

export interface ScenarioView {
  id: string;
  name: string;
  /** `scenario:<id>`: the list's scope; events go to `todo:scenario:<id>`. */
  scope: string;
  orchestratorId: string;
  createdBy: string;
  createdAt: string;
  /** When derived completion first held (set once). */
  completedAt?: string;
  revision: number;
  members: ScenarioMemberView[];
}

interface ScenarioRow {
  id: string;
  /** Its team: scenario names are unique within a team. */
  team_id: string;
  name: string;
  orchestrator_id: string;
  created_by: string;
  created_at: Date;
  completed_at: Date | null;
  revision: number;
}

interface MemberRow {
  name: string;
  session_id: string;
  task: string | null;
  depends_on: string[];
  shared: boolean;
  requires_result: boolean;
  result: unknown;
  result_at: Date | null;
  seed_id: string | null;
}

function toMember(r: MemberRow): ScenarioMemberView {
  const v: ScenarioMemberView = { name: r.name, sessionId: r.session_id, shared: r.shared, dependsOn: r.depends_on, requiresResult: r.requires_result };
  if (r.task !== null) v.task = r.task;
  if (r.seed_id) v.seedId = r.seed_id;
  if (r.result_at) {
    v.result = r.result;
    v.resultAt = r.result_at.toISOString();
  }
  return v;
}

function toScenario(s: ScenarioRow, members: MemberRow[]): ScenarioView {
  const v: ScenarioView = {
    id: s.id,
    name: s.name,
    scope: scenarioScope(s.id),
    orchestratorId: s.orchestrator_id,
    createdBy: s.created_by,
    createdAt: s.created_at.toISOString(),
    revision: s.revision,
    members: members.map(toMember),
  };
  if (s.completed_at) v.completedAt = s.completed_at.toISOString();
  return v;
}

async function readMembers(db: Db, scenarioId: string): Promise<MemberRow[]> {
  return db<MemberRow[]>`
    select m.name, m.session_id, m.task, m.depends_on, m.shared, m.requires_result, m.result, m.result_at, sd.todo_id as seed_id
      from scenario_members m
      left join todo_scenario_seeds sd on sd.scenario_id = m.scenario_id and sd.member_name = m.name
     where m.scenario_id = ${scenarioId}
     order by m.name`;
}

const bytes = (s: string) => Buffer.byteLength(s, 'utf8');

// ---------------------------------------------------------------------------------------------
// Create

export interface CreateScenarioInput {
  name: string;
  /** An existing session id; default: the calling session, or (for a user) a new orchestrator session. */
  orchestrator?: string;
  members: MemberInput[];
}

export interface CreatedScenario {
  scenario: ScenarioView;
  /** The new orchestrator session's token, when one was created (shown once). */
  orchestratorToken?: string;
  /** Tokens of the sessions created for members, by member name (shown once). */
  tokens: Record<string, string>;
}

interface SessionRef {
  id: string;
  root_id: string;
  system_kind: string | null;
  status: string;
}

/**
 * Starts a scenario (seed 000 "In scenarios"). In one transaction: the scenario row, a session for
 * every member without `session` (a child of the orchestrator, anchored as the seed's subtree walk
 * says), the member rows, one assigned, ownerless seed item per member with a task (title = task,
 * assignee = the member's session, `createdBy` = the scope), the member-name dependency edges
 * between seeds, the seed records, and the events (`scenario-created`, then `added` per seed).
 * Any failure writes nothing, new sessions included.
 *
 * Who: a user (any orchestrator; without one a new `orchestrator` system session is created), or
 * a session, which becomes the orchestrator itself and may name as shared members only sessions
 * of its own subtree or its descendants (any other reads as not found).
 * Errors: 403 forbidden (a session naming another orchestrator); 404 session_not_found; 409 session_not_active, scenario_name_taken;
 * 422 scenario_member_*, scenario_dependency_*, scenario_dependent_without_task, title_required,
 * title_too_long.
 */
export async function createScenario(ctx: ScenarioCtx, input: CreateScenarioInput): Promise<CreatedScenario> {
  const p = ctx.principal;
  const ordered = checkMembers(input.members);
  const titles = new Map<string, string>();
  for (const m of ordered) {
    if (m.task === undefined) continue;
    const title = m.task.trim();
    if (!title) throw new DomainError('title_required', `scenario member "${m.name}": the task must not be empty`, { member: m.name });
    const max = ctx.config.todo.maxTitle;
    if (bytes(title) > max) {
      throw new DomainError('title_too_long', `scenario member "${m.name}": the task is ${bytes(title)} bytes; the limit is ${max} bytes`, {
        member: m.name,
        limit: max,
      });
    }
    titles.set(m.name, title);
  }
  let orchestratorId = input.orchestrator;
  if (p.kind === 'session') {
    if (orchestratorId !== undefined && orchestratorId !== p.id) fail('forbidden', 'a session may start a scenario only as its own orchestrator');
    orchestratorId = p.id;
  }

  return withTx(ctx.sql, async (tx) => {
    const scenarioId = newId('sc');
    const scope = scenarioScope(scenarioId);
    let orchestratorToken: string | undefined;
    let orch: SessionRef;
    if (orchestratorId === undefined) {
      const id = newId('s');
      orchestratorToken = newToken();
      await tx`insert into sessions (id, name, parent_id, root_id, system_kind, created_by, team_id)
               values (${id}, ${`${input.name}/orchestrator`}, null, ${id}, 'orchestrator', ${p.id}, ${p.teamId})`;
      await insertFirstToken(tx, p.teamId, { sessionId: id, createdBy: p.id, secret: orchestratorToken }, actorOf(p));
      await recordSessionEvents(tx, p.teamId, actorOf(p), 'session-created', [{ id, name: `${input.name}/orchestrator` }]);
      orch = { id, root_id: id, system_kind: 'orchestrator', status: 'active' };
    } else {
      const [row] = await tx<
        SessionRef[]
      >`select id, root_id, system_kind, status from sessions where id = ${orchestratorId} and team_id = ${p.teamId} for share`;
      if (!row) throw new DomainError('session_not_found', `orchestrator session "${orchestratorId}" not found`);
      if (row.status !== 'active') fail('session_not_active', `orchestrator session "${orchestratorId}" is ${row.status}`);
      orch = row;
    }

    const sharedIds = input.members.filter((m) => m.session !== undefined).map((m) => m.session!);
    if (sharedIds.length) {
      const rows = await tx<
        SessionRef[]
      >`select id, root_id, system_kind, status from sessions where id = any(${sharedIds}::text[]) and team_id = ${p.teamId} order by id for share`;
      const found = new Map(rows.map((r) => [r.id, r]));
      let reachable = new Set<string>();
      if (p.kind === 'session') {
        // Descendants of the caller (a child of a system session anchors elsewhere, so the root alone is not enough).
        const r = await tx<{ start: string }[]>`
          with recursive chain(start, id, parent_id) as (
            select id, id, parent_id from sessions where id = any(${sharedIds}::text[])
            union all
            select c.start, s.id, s.parent_id from sessions s join chain c on s.id = c.parent_id)
          select distinct start from chain where id = ${p.id}`;
        reachable = new Set(r.map((x) => x.start));
      }
      for (const m of input.members) {
        if (m.session === undefined) continue;
        const s = found.get(m.session);
        // A session names only sessions of its own subtree; any other is one it cannot see, so it
        // gets the answer of a session that does not exist, before anything about its state
        // (a 403 here told an outsider the session existed).
        if (!s || (p.kind === 'session' && s.root_id !== p.rootId && !reachable.has(s.id))) {
          throw new DomainError(
            'session_not_found',
            `session "${m.session}" of scenario member "${m.name}" not found${p.kind === 'session' ? ' (a session may name as shared members only sessions of its own subtree)' : ''}`,
            { member: m.name },
          );
        }
        if (s.status !== 'active') fail('session_not_active', `session "${m.session}" of scenario member "${m.name}" is ${s.status}`, { member: m.name });
      }
    }

    const [scenario] = await tx<ScenarioRow[]>`
      insert into scenarios (id, name, orchestrator_id, created_by, team_id)
      values (${scenarioId}, ${input.name}, ${orch.id}, ${p.id}, ${p.teamId})
      on conflict (team_id, name) do nothing
      returning *`;
    if (!scenario) throw new DomainError('scenario_name_taken', `a scenario named "${input.name}" already exists`, { name: input.name });

    // Sessions created for members: children of the orchestrator, anchored by the seed's walk.
    const tokens: Record<string, string> = {};
    const sessionOf = new Map<string, string>();
    const created = input.members.filter((m) => m.session === undefined);
    if (created.length) {
      const ids = created.map(() => newId('s'));
      const toks = created.map(() => newToken());
      created.forEach((m, i) => {
        tokens[m.name] = toks[i];
        sessionOf.set(m.name, ids[i]);
      });
      await tx`
        insert into sessions (id, name, parent_id, root_id, created_by, team_id)
        select u.id, u.name, ${orch.id}, case when ${orch.system_kind !== null} then u.id else ${orch.root_id} end, ${p.id}, ${p.teamId}
          from unnest(${ids}::text[], ${created.map((m) => `${input.name}/${m.name}`)}::text[]) as u(id, name)`;
      await insertTokens(
        tx,
        p.teamId,
        ids.map((sessionId, i) => ({ sessionId, createdBy: p.id, secret: toks[i] })),
        actorOf(p),
      );
      await recordSessionEvents(
        tx,
        p.teamId,
        actorOf(p),
        'session-created',
        ids.map((id, i) => ({ id, name: `${input.name}/${created[i].name}` })),
      );
    }
    for (const m of input.members) if (m.session !== undefined) sessionOf.set(m.name, m.session);

    // Booleans and jagged dependsOn lists travel as text: postgres.js cannot bind a boolean[] or a text[][] here.
    await tx`
      insert into scenario_members (scenario_id, name, session_id, task, depends_on, shared, requires_result)
      select ${scenarioId}, u.name, u.session_id, u.task, array(select jsonb_array_elements_text(u.deps_json::jsonb)), u.shared::boolean, u.requires_result::boolean
        from unnest(${input.members.map((m) => m.name)}::text[],
                    ${input.members.map((m) => sessionOf.get(m.name)!)}::text[],
                    ${input.members.map((m) => titles.get(m.name) ?? null)}::text[],
                    ${input.members.map((m) => JSON.stringify(m.dependsOn ?? []))}::text[],
                    ${input.members.map((m) => String(m.session !== undefined))}::text[],
                    ${input.members.map((m) => String(m.requiresResult ?? false))}::text[])
             as u(name, session_id, task, deps_json, shared, requires_result)`;

    // Seeds, in dependency order so a seed's position follows its dependencies'.
    const seeded = ordered.filter((m) => titles.has(m.name));
    const seedOf = new Map(seeded.map((m) => [m.name, newId('td')]));
    const events: EventInput[] = [];
    const emit = emitsFor(scope, ctx.config.todo.emitEvents);
    if (emit) {
      events.push({
        topic: topicOf(scope),
        event: 'scenario-created',
        subjectId: scenarioId,
        payload: {
          event: 'scenario-created',
          id: scenarioId,
          scope,
          name: input.name,
          orchestratorId: orch.id,
          members: input.members.map((m) => m.name),
          revision: 1,
        },
      });
    }
    if (seeded.length) {
      const [{ last_position }] = await tx<{ last_position: number }[]>`
        insert into scopes (team_id, scope, last_position) values (${p.teamId}, ${scope}, ${seeded.length})
        on conflict (team_id, scope) do update set last_position = scopes.last_position + ${seeded.length}
        returning last_position`;
      const first = last_position - seeded.length + 1;
      const ids = seeded.map((m) => seedOf.get(m.name)!);
      await insertItems(
        tx,
        { teamId: p.teamId, scope, createdBy: scope },
        seeded.map((m, i) => ({
          id: ids[i]!,
          title: titles.get(m.name)!,
          assignee: sessionOf.get(m.name)!,
          position: first + i,
          unfinishedDeps: (m.dependsOn ?? []).length,
        })),
      );
      const from: string[] = [];
      const to: string[] = [];
      for (const m of seeded) {
        for (const dep of m.dependsOn ?? []) {
          from.push(seedOf.get(m.name)!);
          to.push(seedOf.get(dep)!);
        }
      }
      await insertEdges(
        tx,
        from.map((f, i) => [f, to[i]!] as const),
      );
      await tx`
        insert into todo_scenario_seeds (todo_id, scenario_id, member_name)
        select u.todo_id, ${scenarioId}, u.member from unnest(${ids}::text[], ${seeded.map((m) => m.name)}::text[]) as u(todo_id, member)`;
      if (emit) {
        const rows = await selectItems(tx, ctx.config.todo.claimLeaseMs, ids);
        for (const row of rows) events.push({ topic: topicOf(scope), event: 'added', subjectId: row.id, payload: eventPayload('added', row) });
      }
    }
    await appendEvents(tx, p.teamId, events, actorOf(ctx.principal));
    const view = toScenario(scenario, await readMembers(tx, scenarioId));
    return { scenario: view, ...(orchestratorToken ? { orchestratorToken } : {}), tokens };
  });
}

// ---------------------------------------------------------------------------------------------
// Read

/**
 * Resolves a scenario by name or id and checks the caller may read it (users, the orchestrator,
 * members). 404 `scenario_not_found`, the same for a scenario that does not exist and for one the
 * caller may not read ({@link scenarioNotFound}).
 */
async function visibleScenario(ctx: ScenarioCtx, db: Db, nameOrId: string, forUpdate = false): Promise<{ row: ScenarioRow; override: boolean }> {
  const id = await findScenarioId(db, ctx.principal.teamId, nameOrId);
  const rows = id
    ? forUpdate
      ? await db<ScenarioRow[]>`select * from scenarios where id = ${id} and team_id = ${ctx.principal.teamId} for update`
      : await db<ScenarioRow[]>`select * from scenarios where id = ${id} and team_id = ${ctx.principal.teamId}`
    : [];
  const a = rows[0] ? await scenarioAccess(db, ctx.principal, rows[0].id) : undefined;
  if (!rows[0] || !a?.inScope) throw new DomainError('scenario_not_found', scenarioNotFound(nameOrId));
  return { row: rows[0], override: a.override };
}

/**
 * A scenario with its members (`GET /v1/scenarios/{name}`). Evaluates derived completion first,
 * so `completedAt` is current. Errors: 404 scenario_not_found (also for a caller who may not read it).
 */
export async function getScenario(ctx: ScenarioCtx, nameOrId: string): Promise<ScenarioView> {
  const { row } = await visibleScenario(ctx, ctx.sql, nameOrId);
  const done = await completeScenarios(ctx.sql, ctx.config, actorOf(ctx.principal), row.id);
  const fresh = done.length ? { ...row, completed_at: new Date(done[0].completedAt), revision: done[0].revision } : row;
  return toScenario(fresh, await readMembers(ctx.sql, row.id));
}

/** One scenario in `GET /v1/scenarios`: the record without its members, plus derived progress. */
export interface ScenarioSummary extends Omit<ScenarioView, 'members'> {
  /** How many members the scenario has. */
  members: number;
  /** Done items in the whole scope (sub-items included), as `…/status` counts them. */
  done: number;
  /** Items in the whole scope. */
  total: number;
  /** Derived completion now: at least one tracked member, and every tracked member complete. */
  complete: boolean;
}

/**
 * Lists the scenarios the caller may read, in name order with a keyset cursor (`nextCursor` set
 * while more exist; never silently truncated). Who sees what is `GET /v1/scenarios/{name}`'s rule
 * (`scenarioAccess`): a user sees every scenario; a session (an orchestrator one too) those it
 * orchestrates or is a member of. Each is a {@link ScenarioSummary}: the record without its
 * members (their results may be large: `GET /v1/scenarios/{name}` has them), the member count,
 * scope-wide done/total and derived completion, evaluated as `…/status` does (so a scenario whose
 * completion holds now is recorded, with its `scenario-completed` event, as a read of it would).
 * `limit` ≤ `[todo] list_limit` (also the default). Errors: 400 invalid_cursor.
 */
export async function listScenarios(
  ctx: ScenarioCtx,
  opts: { limit?: number; cursor?: string },
): Promise<{ scenarios: ScenarioSummary[]; nextCursor: string | null }> {
  const max = ctx.config.todo.listLimit;
  const limit = Math.min(opts.limit ?? max, max);
  const after = opts.cursor ? (decodeCursor(opts.cursor, [NAME_PATTERN])[0] as string) : null;
  const p = ctx.principal;
  const sql = ctx.sql;
  const rows = await sql<(ScenarioRow & { members: number; done: number; total: number; complete: boolean })[]>`
    select s.*,
           (select count(*)::int from scenario_members m where m.scenario_id = s.id) as members,
           coalesce(c.done, 0) as done, coalesce(c.total, 0) as total,
           (exists (select 1 from scenario_members m
                     where m.scenario_id = s.id
                       and (m.requires_result or exists (select 1 from todos t where t.team_id = s.team_id and t.scope = 'scenario:' || s.id and t.assignee = m.session_id)))
            and not exists (select 1 from scenario_members m
                     where m.scenario_id = s.id
                       and ((m.requires_result and m.result_at is null)
                            or exists (select 1 from todos t where t.team_id = s.team_id and t.scope = 'scenario:' || s.id and t.assignee = m.session_id and t.status <> 'done'))))
             as complete
      from scenarios s
      left join lateral ${scopeCountsSql(sql, sql`s.team_id`, sql`'scenario:' || s.id`)} c on true
     where s.team_id = ${p.teamId} and ${
       p.kind === 'user'
         ? sql`true`
         : sql`(s.orchestrator_id = ${p.id} or exists (select 1 from scenario_members m where m.scenario_id = s.id and m.session_id = ${p.id}))`
     }
       ${after !== null ? sql`and s.name > ${after}` : sql``}
     order by s.name
     limit ${limit + 1}`;
  const more = rows.length > limit;
  const page = more ? rows.slice(0, limit) : rows;
  const scenarios: ScenarioSummary[] = [];
  for (const r of page) {
    // Completion holds but is not recorded yet: record it now, as a read of the scenario does.
    const recorded = r.complete && r.completed_at === null ? (await completeScenarios(sql, ctx.config, actorOf(ctx.principal), r.id))[0] : undefined;
    const v: ScenarioSummary = {
      id: r.id,
      name: r.name,
      scope: scenarioScope(r.id),
      orchestratorId: r.orchestrator_id,
      createdBy: r.created_by,
      createdAt: r.created_at.toISOString(),
      revision: recorded?.revision ?? r.revision,
      members: r.members,
      done: r.done,
      total: r.total,
      complete: r.complete,
    };
    const completedAt = recorded?.completedAt ?? r.completed_at?.toISOString();
    if (completedAt) v.completedAt = completedAt;
    scenarios.push(v);
  }
  return { scenarios, nextCursor: more ? encodeCursor([page[page.length - 1].name]) : null };
}

/** A member's status line: the type of the `MemberStatus` zod schema (scenarios.schemas.ts, OpenAPI `ScenarioMemberStatus`). */
export type MemberStatus = z.output<typeof MemberStatusSchema>;

export interface ScenarioStatus {
  scenario: { id: string; name: string; scope: string; orchestratorId: string; completedAt?: string };
  /** Live derivation: at least one tracked member, and every tracked member complete. */
  complete: boolean;
  /** Scenario-wide item counts (every item of the scope, sub-items included). */
  done: number;
  total: number;
  members: MemberStatus[];
}

/**
 * Per-member progress and WAITING ON (`gr scenario status`, seed 000 "In scenarios"): done/total
 * from the items assigned to each member, `—` when a member has no tracked work, and the
 * unfinished upstream members. Evaluates (and, the first time it holds, records) completion.
 * Errors: 404 scenario_not_found (also for a caller who may not read it).
 */
export async function scenarioStatus(ctx: ScenarioCtx, nameOrId: string): Promise<ScenarioStatus> {
  const { row } = await visibleScenario(ctx, ctx.sql, nameOrId);
  const recorded = await completeScenarios(ctx.sql, ctx.config, actorOf(ctx.principal), row.id);
  const completedAt = recorded[0]?.completedAt ?? row.completed_at?.toISOString();
  const scope = scenarioScope(row.id);
  const members = await ctx.sql<
    (MemberRow & { done: number; total: number; seed_status: StoredStatus | null; seed_unfinished: number | null; seed_note: string | null })[]
  >`
    with counts as (
      select assignee, count(*)::int as total, (count(*) filter (where status = 'done'))::int as done
        from todos where team_id = ${row.team_id} and scope = ${scope} and assignee is not null group by assignee)
    select m.name, m.session_id, m.task, m.depends_on, m.shared, m.requires_result, m.result, m.result_at,
           sd.todo_id as seed_id, st.status as seed_status, st.unfinished_deps as seed_unfinished, st.note as seed_note,
           coalesce(c.total, 0) as total, coalesce(c.done, 0) as done
      from scenario_members m
      left join counts c on c.assignee = m.session_id
      left join todo_scenario_seeds sd on sd.scenario_id = m.scenario_id and sd.member_name = m.name
      left join todos st on st.id = sd.todo_id
     where m.scenario_id = ${row.id}
     order by m.name`;
  const [totals] = await ctx.sql<{ total: number; done: number }[]>`
    select c.total, c.done from ${scopeCountsSql(ctx.sql, row.team_id, scope)} c`;
  const seedStatus = new Map(members.map((m) => [m.name, m.seed_status]));
  const out: MemberStatus[] = members.map((m) => {
    const tracked = m.total > 0 || m.requires_result;
    const resultPublished = m.result_at !== null;
    const complete = tracked && m.done === m.total && (!m.requires_result || resultPublished);
    // Member-name dependencies point at the original seeds; a removed seed holds nothing back.
    const waitingOn = complete
      ? []
      : m.depends_on.filter((d) => {
          const st = seedStatus.get(d);
          return st != null && st !== 'done';
        });
    const s: MemberStatus = {
      name: m.name,
      sessionId: m.session_id,
      shared: m.shared,
      tracked,
      done: m.done,
      total: m.total,
      progress: tracked ? `${m.done}/${m.total}` : '—',
      requiresResult: m.requires_result,
      resultPublished,
      complete,
      waitingOn,
      blockedBy: waitingOn,
    };
    if (m.seed_id) s.seedId = m.seed_id;
    if (m.seed_status) s.seedStatus = m.seed_status === 'todo' && (m.seed_unfinished ?? 0) > 0 ? 'blocked' : m.seed_status;
    if (m.seed_status === 'blocked' && m.seed_note) s.blockNote = m.seed_note;
    return s;
  });
  const trackedMembers = out.filter((m) => m.tracked);
  const scenario: ScenarioStatus['scenario'] = { id: row.id, name: row.name, scope, orchestratorId: row.orchestrator_id };
  if (completedAt) scenario.completedAt = completedAt;
  return {
    scenario,
    complete: trackedMembers.length > 0 && trackedMembers.every((m) => m.complete),
    done: totals.done,
    total: totals.total,
    members: out,
  };
}

/** The status as the seed's table: MEMBER, SESSION, DONE/TOTAL, RESULT, WAITING ON. */
export function renderStatusText(s: ScenarioStatus): string {
  const head = ['MEMBER', 'SESSION', 'DONE/TOTAL', 'RESULT', 'WAITING ON'];
  const rows = s.members.map((m) => [
    m.name,
    m.sessionId,
    m.progress,
    m.requiresResult ? (m.resultPublished ? 'published' : 'pending') : '-',
    m.waitingOn.join(', '),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  const state = s.complete ? `complete${s.scenario.completedAt ? ` (since ${s.scenario.completedAt})` : ''}` : 'in progress';
  return `${[`SCENARIO ${s.scenario.name} (${s.scenario.id}): ${state}, ${s.done}/${s.total} items done`, line(head), ...rows.map(line)].join('\n')}\n`;
}

// ---------------------------------------------------------------------------------------------
// Results and completion

/**
 * Publishes (or replaces) a member's declared result (seed 000: "with a required result it
 * completes by publishing it"). Who: the member's own session, the orchestrator, or a user.
 * Writes a `result-published` event and, when this was the last missing piece, records
 * completion and its event in the same transaction (the scenario row is locked first, so two
 * concurrent publications cannot both miss completion).
 * Errors: 404 scenario_not_found, scenario_member_not_found; 403 forbidden.
 */
export async function publishResult(
  ctx: ScenarioCtx,
  nameOrId: string,
  memberName: string,
  result: unknown,
): Promise<{ member: ScenarioMemberView; scenarioComplete: boolean }> {
  return withTx(ctx.sql, async (tx) => {
    const { row, override } = await visibleScenario(ctx, tx, nameOrId, true);
    const [member] = await tx<{ session_id: string }[]>`
      select session_id from scenario_members where scenario_id = ${row.id} and name = ${memberName} for update`;
    if (!member) throw new DomainError('scenario_member_not_found', `scenario "${row.name}" has no member "${memberName}"`);
    if (!override && ctx.principal.id !== member.session_id) {
      fail('forbidden', 'only the member itself, the orchestrator or the human may publish its result');
    }
    await tx`update scenario_members set result = ${JSON.stringify(result)}::text::jsonb, result_at = now()
              where scenario_id = ${row.id} and name = ${memberName}`;
    const scope = scenarioScope(row.id);
    if (emitsFor(scope, ctx.config.todo.emitEvents)) {
      await appendEvents(
        tx,
        row.team_id,
        [
          {
            topic: topicOf(scope),
            event: 'result-published',
            subjectId: row.id,
            payload: { event: 'result-published', id: row.id, scope, member: memberName, revision: row.revision },
          },
        ],
        actorOf(ctx.principal),
      );
    }
    const completed = await completeInTx(tx, ctx.config, actorOf(ctx.principal), row.id);
    const [fresh] = (await readMembers(tx, row.id)).filter((m) => m.name === memberName);
    return { member: toMember(fresh), scenarioComplete: completed.length > 0 || row.completed_at !== null };
  });
}

export interface CompletedScenario {
  id: string;
  name: string;
  completedAt: string;
  revision: number;
}

/**
 * Records derived completion for every incomplete scenario (or just `scenarioId`) where it now
 * holds, writing one `scenario-completed` event each (topic `todo:scenario:<id>`), in the
 * transaction `tx`. The guarded `completed_at IS NULL` makes it exactly once, also when two
 * replicas' sweeps race (the second UPDATE re-checks the row after the first commits). `actor`
 * is whoever's call or sweep noticed it (the audit).
 */
export async function completeInTx(tx: Db, config: Config, actor: Actor, scenarioId?: string): Promise<CompletedScenario[]> {
  const rows = await tx<{ id: string; team_id: string; name: string; completed_at: Date; revision: number }[]>`
    update scenarios s set completed_at = now(), revision = s.revision + 1
     where s.completed_at is null
       ${scenarioId !== undefined ? tx`and s.id = ${scenarioId}` : tx``}
       and exists (
         select 1 from scenario_members m
          where m.scenario_id = s.id
            and (m.requires_result
                 or exists (select 1 from todos t where t.team_id = s.team_id and t.scope = 'scenario:' || s.id and t.assignee = m.session_id)))
       and not exists (
         select 1 from scenario_members m
          where m.scenario_id = s.id
            and ((m.requires_result and m.result_at is null)
                 or exists (select 1 from todos t where t.team_id = s.team_id and t.scope = 'scenario:' || s.id and t.assignee = m.session_id and t.status <> 'done')))
    returning s.id, s.team_id, s.name, s.completed_at, s.revision`;
  // One scenario at a time: a sweep's pass may complete scenarios of several teams.
  for (const r of rows) {
    if (!emitsFor(scenarioScope(r.id), config.todo.emitEvents)) continue;
    await appendEvents(
      tx,
      r.team_id,
      [
        {
          topic: topicOf(scenarioScope(r.id)),
          event: 'scenario-completed',
          subjectId: r.id,
          payload: {
            event: 'scenario-completed',
            id: r.id,
            scope: scenarioScope(r.id),
            name: r.name,
            status: 'complete',
            completedAt: r.completed_at.toISOString(),
            revision: r.revision,
          },
        },
      ],
      actor,
    );
  }
  return rows.map((r) => ({ id: r.id, name: r.name, completedAt: r.completed_at.toISOString(), revision: r.revision }));
}

/**
 * Evaluates derived completion in its own transaction (status reads, the sweep tick). Returns the
 * scenarios whose completion was recorded now.
 */
export async function completeScenarios(sql: Sql, config: Config, actor: Actor, scenarioId?: string): Promise<CompletedScenario[]> {
  return withTx(sql, (tx) => completeInTx(tx, config, actor, scenarioId));
}
