/**
 * Teams (docs/architecture.md "Teams"): creating a team with its first operator, listing
 * and reading teams, and adding operators to a team. What a team owns, and that every other route
 * acts inside the caller's team, is the rest of the design; this module only manages the teams.
 *
 * Authority:
 * - The server administrator (an operator with role `admin`: the operator the bootstrap made, whose
 *   token is `.coord/admin-token` or COORD_ADMIN_TOKEN) creates teams, and reads and adds
 *   operators to any team.
 * - An operator reads its own team and adds operators to it. Another team's id answers exactly as
 *   a missing one (404 `not_found`, the same message once the id is swapped): an operator cannot
 *   tell that another team exists.
 * - Sessions manage no team: 403 `forbidden`, whatever the id (a refusal that depends on no
 *   object, so it tells nothing).
 *
 * Every operator made here gets its first token, `default`, in the same transaction as the
 * operator (and the team); its secret is returned once and never stored (only its sha256). The
 * audit records `team-created` and `operator-created` (topic `audit:teams`, in the team's own
 * audit) and the token's `token-created` (topic `audit:tokens`, the team's), with the
 * caller as the actor.
 */
import { actorOf } from '../auth/actor.js';
import { isServerAdmin, type Principal } from '../auth/principal.js';
import type { Db, Sql } from '../db/client.js';
import { withTx } from '../db/tx.js';
import { appendEvents, auditTopic } from '../events/events.repo.js';
import { DomainError, fail } from '../http/errors.js';
import { newId } from '../lib/ids.js';
import { insertTokens } from '../tokens/tokens.repo.js';
import { tokenView, type TokenView } from '../tokens/tokens.service.js';

export type Role = 'operator' | 'admin';

/** A team as the API shows it. Times are ISO 8601 (UTC). */
export interface TeamView {
  /** `tm-…`; the team of an upgraded database and of the server administrator is `tm-default`. */
  id: string;
  name: string;
  createdAt: string;
  /** The user id of the administrator that created it (`bootstrap` for `tm-default`). */
  createdBy: string;
  operatorCount: number;
}

/** An operator of a team (never a token). */
export interface OperatorView {
  /** `u-…` */
  id: string;
  name: string;
  teamId: string;
  role: Role;
  createdAt: string;
}

export interface TeamDetail extends TeamView {
  /** Oldest first. */
  operators: OperatorView[];
}

/** An operator just made, with its first token (`default`) and that token's secret, shown once. */
export interface OperatorWithSecret {
  operator: OperatorView;
  token: TokenView;
  secret: string;
}

type TeamRow = { id: string; name: string; created_by: string; created_at: Date; operator_count: number };
type OperatorRow = { id: string; name: string; team_id: string; role: Role; created_at: Date };

const teamView = (r: TeamRow): TeamView => ({
  id: r.id,
  name: r.name,
  createdAt: r.created_at.toISOString(),
  createdBy: r.created_by,
  operatorCount: r.operator_count,
});
const operatorView = (r: OperatorRow): OperatorView => ({ id: r.id, name: r.name, teamId: r.team_id, role: r.role, createdAt: r.created_at.toISOString() });

const TEAM_COLUMNS = (db: Db) => db`t.id, t.name, t.created_by, t.created_at, (select count(*)::int from users u where u.team_id = t.id) as operator_count`;

/** Refuses sessions (403 `forbidden`) before anything is looked up. */
function operatorsOnly(p: Principal): asserts p is Extract<Principal, { kind: 'user' }> {
  if (p.kind !== 'user')
    fail(
      'forbidden',
      'teams are managed by operators, not sessions: use an operator token (coord login, or --token with .coord/admin-token); GET /v1/me shows your team (teamId)',
    );
}

/** The one answer for a team the caller may not see and for a missing one. */
function teamNotFound(id: string): never {
  fail('not_found', `no team "${id}"; GET /v1/teams lists the teams you may see`);
}

/** Whether `p` may see (read, add operators to) team `teamId`: the administrator any, an operator its own. */
const canSee = (p: Principal, teamId: string) => isServerAdmin(p) || (p.kind === 'user' && p.teamId === teamId);

/**
 * The audit's record of team changes made by `caller`, in `tx` (topic `audit:teams`), in the audit
 * of the team they concern only: a copy in the administrator's team would show every operator of
 * the default team the other teams' names and operators, which `GET /v1/teams` keeps from them.
 * The administrator reads who made each team in `GET /v1/teams` (`createdBy`, `createdAt`).
 */
async function recordTeamEvents(
  tx: Db,
  caller: Principal,
  teamId: string,
  events: readonly (
    | { event: 'team-created'; id: string; name: string }
    | { event: 'operator-created'; id: string; name: string; teamId: string; role: Role }
  )[],
): Promise<void> {
  const written = events.map((e) => ({ topic: auditTopic('teams'), event: e.event, subjectId: e.id, payload: { ...e } }));
  await appendEvents(tx, teamId, written, actorOf(caller));
}

/** Inserts an operator of `teamId` with its `default` token, recording both, in `tx`. */
async function insertOperator(tx: Db, caller: Principal, teamId: string, name: string, role: Role = 'operator'): Promise<OperatorWithSecret> {
  const id = newId('u');
  const [row] = await tx<OperatorRow[]>`
    insert into users (id, name, team_id, role) values (${id}, ${name}, ${teamId}, ${role})
    returning id, name, team_id, role, created_at`;
  await recordTeamEvents(tx, caller, teamId, [{ event: 'operator-created', id, name, teamId, role }]);
  const [token] = await insertTokens(tx, teamId, [{ userId: id, createdBy: caller.id }], actorOf(caller));
  return { operator: operatorView(row), token: await tokenView(tx, token.id, caller), secret: token.secret };
}

/**
 * Creates team `name` with its first operator (role `operator`, named `operatorName`) and that
 * operator's `default` token, in one transaction: all of it or nothing. The server
 * administrator only (403 `forbidden` otherwise). Errors: 409 `team_name_taken`.
 */
export async function createTeam(
  sql: Sql,
  caller: Principal,
  input: { name: string; operator: { name: string } },
): Promise<{ team: TeamView } & OperatorWithSecret> {
  operatorsOnly(caller);
  if (!isServerAdmin(caller)) {
    fail(
      'forbidden',
      'only the server administrator creates teams (the operator whose token the server made at its first start, or COORD_ADMIN_TOKEN): ' +
        'ask them (coord team create <name> --operator <name>); to add an operator to your own team: ' +
        `POST /v1/teams/${caller.teamId}/operators (coord team add-operator ${caller.teamId} <name>)`,
    );
  }
  return withTx(sql, async (tx) => {
    const [made] = await tx<{ id: string }[]>`
      insert into teams (id, name, created_by) values (${newId('tm')}, ${input.name}, ${caller.id})
      on conflict do nothing
      returning id`;
    // Names are unique ignoring case (`teams_name_lower_unique`): "Platform" is taken by "platform".
    if (!made)
      throw new DomainError('team_name_taken', `a team named "${input.name}" already exists (names ignore case); pick another name`, { name: input.name });
    await recordTeamEvents(tx, caller, made.id, [{ event: 'team-created', id: made.id, name: input.name }]);
    const first = await insertOperator(tx, caller, made.id, input.operator.name);
    const [team] = await tx<TeamRow[]>`select ${TEAM_COLUMNS(tx)} from teams t where t.id = ${made.id}`;
    return { team: teamView(team), ...first };
  });
}

/** The teams the caller may see, oldest first: the administrator every team, an operator its own. Sessions: 403 `forbidden`. */
export async function listTeams(sql: Sql, caller: Principal): Promise<TeamView[]> {
  operatorsOnly(caller);
  const rows = await sql<TeamRow[]>`
    select ${TEAM_COLUMNS(sql)} from teams t
     ${isServerAdmin(caller) ? sql`` : sql`where t.id = ${caller.teamId}`}
     order by t.created_at, t.id`;
  return rows.map(teamView);
}

/**
 * One team with its operators (oldest first). The administrator reads any team, an operator its
 * own; another team is 404 `not_found`, word for word as a missing one. Sessions: 403 `forbidden`.
 */
export async function getTeam(sql: Sql, caller: Principal, id: string): Promise<TeamDetail> {
  operatorsOnly(caller);
  if (!canSee(caller, id)) teamNotFound(id);
  const [team] = await sql<TeamRow[]>`select ${TEAM_COLUMNS(sql)} from teams t where t.id = ${id}`;
  if (!team) teamNotFound(id);
  const operators = await sql<OperatorRow[]>`
    select id, name, team_id, role, created_at from users where team_id = ${id} order by created_at, id`;
  return { ...teamView(team), operators: operators.map(operatorView) };
}

/**
 * Adds an operator (role `operator`) named `name` to team `teamId`, with its `default` token,
 * whose secret is returned once. The administrator adds to any team, an operator to its own;
 * another team is 404 `not_found`, word for word as a missing one. Sessions: 403 `forbidden`.
 */
export async function addOperator(sql: Sql, caller: Principal, teamId: string, input: { name: string }): Promise<OperatorWithSecret> {
  operatorsOnly(caller);
  if (!canSee(caller, teamId)) teamNotFound(teamId);
  return withTx(sql, async (tx) => {
    // A share lock: the team stays while its operator is added.
    const [team] = await tx`select 1 from teams where id = ${teamId} for share`;
    if (!team) teamNotFound(teamId);
    return insertOperator(tx, caller, teamId, input.name);
  });
}
