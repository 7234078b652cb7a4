/**
 * Listing, creating, rotating and revoking bearer tokens. A token belongs to one
 * principal (an operator or a session); the secret is returned once, by `createToken` and
 * `rotateToken`, and never stored (only its sha256).
 *
 * Authority: every principal manages its own tokens. Operators may also list and revoke any
 * principal's tokens (to cut off a leaked agent token), but never create or rotate them: that
 * would hand an operator another principal's secret. A token the caller may not see is answered
 * exactly as a missing one (`token_not_found`).
 *
 * Revocation and rotation ring `token-revoked:<id>` after the commit: every replica evicts the
 * token from its principal cache and ends the event streams opened with it, so the old secret is
 * refused at once everywhere. Expiry is compared with the database clock (`now()`), never the
 * replica's.
 */
import { actorOf } from '../auth/actor.js';
import { isServerAdmin, type Principal } from '../auth/principal.js';
import type { Db, Sql } from '../db/client.js';
import { lockXact } from '../db/locks.js';
import { withTx } from '../db/tx.js';
import { fail } from '../http/errors.js';
import { newToken } from '../lib/ids.js';
import { hashToken } from '../lib/ids.js';
import { insertTokens, noteTokensRevoked, recordTokenEvents } from './tokens.repo.js';

/** Unrevoked tokens one principal may hold (expired ones count until revoked). */
export const MAX_TOKENS_PER_PRINCIPAL = 100;

/** `stopped`: the token is not revoked, but its session has stopped, so it no longer authenticates. */
export type TokenState = 'active' | 'expired' | 'revoked' | 'stopped';

/** A token as the API shows it: never the secret. Times are ISO 8601 (UTC). */
export interface TokenView {
  id: string;
  name: string;
  /** The owner. */
  principal: { kind: 'user' | 'session'; id: string };
  createdAt: string;
  /** The user or session id that created it. */
  createdBy: string | null;
  rotatedAt: string | null;
  /** Refused from this instant (database clock); null = never. */
  expiresAt: string | null;
  revokedAt: string | null;
  /** By the database clock at the time of the read. */
  state: TokenState;
  /** Whether the request was made with this token. */
  current: boolean;
}

type Row = {
  id: string;
  name: string;
  user_id: string | null;
  session_id: string | null;
  created_at: Date;
  created_by: string | null;
  rotated_at: Date | null;
  expires_at: Date | null;
  revoked_at: Date | null;
  state: TokenState;
  /** The owner's team: a token is another team's object to everyone else. */
  team_id: string;
  /** The owning operator's role (null for a session's token): an administrator's tokens are the administrators' to manage. */
  owner_role: 'operator' | 'admin' | null;
};

const COLUMNS = (db: Db) => db`
  id, name, user_id, session_id, created_at, created_by, rotated_at, expires_at, revoked_at,
  case when revoked_at is not null then 'revoked' when expires_at is not null and expires_at <= now() then 'expired'
       when session_id is not null and (select s.status from sessions s where s.id = tokens.session_id) <> 'active' then 'stopped'
       else 'active' end as state,
  coalesce((select u.team_id from users u where u.id = tokens.user_id), (select s.team_id from sessions s where s.id = tokens.session_id)) as team_id,
  (select u.role from users u where u.id = tokens.user_id) as owner_role`;

function view(r: Row, caller: Principal): TokenView {
  const iso = (d: Date | null) => (d ? d.toISOString() : null);
  return {
    id: r.id,
    name: r.name,
    principal: r.user_id ? { kind: 'user', id: r.user_id } : { kind: 'session', id: r.session_id! },
    createdAt: r.created_at.toISOString(),
    createdBy: r.created_by,
    rotatedAt: iso(r.rotated_at),
    expiresAt: iso(r.expires_at),
    revokedAt: iso(r.revoked_at),
    state: r.state,
    current: caller.token?.id === r.id,
  };
}

const ownerColumn = (p: { kind: 'user' | 'session' }) => (p.kind === 'user' ? 'user_id' : 'session_id');

/** Rows `listTokens` returns at most for `principalKind: 'user'` (every operator's tokens). */
export const MAX_OPERATOR_TOKENS_LISTED = 1000;

/**
 * The tokens of `principalId` (default: the caller), newest first: every unrevoked one (at most
 * `MAX_TOKENS_PER_PRINCIPAL`), and with `includeRevoked` also the latest revoked ones (up to as
 * many again). With `principalKind: 'user'` instead: every operator's tokens (at most
 * `MAX_OPERATOR_TOKENS_LISTED`), to find the operators earlier `COORD_ADMIN_TOKEN` values made.
 * Sessions may list only their own (`forbidden` otherwise); an operator any principal's of its
 * team but an administrator's (an id that is no such user or session: `not_found`).
 */
export async function listTokens(
  sql: Sql,
  caller: Principal,
  opts: { principalId?: string; principalKind?: 'user'; includeRevoked?: boolean } = {},
): Promise<TokenView[]> {
  const owner = opts.principalId ?? caller.id;
  if ((owner !== caller.id || opts.principalKind) && caller.kind !== 'user') {
    fail('forbidden', 'a session may list only its own tokens; call without `principal` and `principalKind`');
  }
  if (opts.principalId && opts.principalKind) fail('validation_failed', 'pass `principal` or `principalKind`, not both');
  if (opts.principalId !== undefined && opts.principalId !== caller.id) {
    const [known] = await sql`
      select 1 from users where id = ${opts.principalId} and team_id = ${caller.teamId} ${isServerAdmin(caller) ? sql`` : sql`and role <> 'admin'`}
      union all select 1 from sessions where id = ${opts.principalId} and team_id = ${caller.teamId} limit 1`;
    if (!known)
      fail(
        'not_found',
        `no user or session "${opts.principalId}" whose tokens you may list; pass a user id (u-…) or a session id (s-…) of your team, or omit principal for your own tokens`,
      );
  }
  const operators = isServerAdmin(caller) ? sql`` : sql`and role <> 'admin'`;
  const whose = opts.principalKind
    ? sql`user_id in (select id from users where team_id = ${caller.teamId} ${operators})`
    : sql`coalesce(user_id, session_id) = ${owner}`;
  const limit = opts.principalKind ? MAX_OPERATOR_TOKENS_LISTED : opts.includeRevoked ? 2 * MAX_TOKENS_PER_PRINCIPAL : MAX_TOKENS_PER_PRINCIPAL;
  const rows = await sql<Row[]>`
    select ${COLUMNS(sql)} from tokens where ${whose} ${opts.includeRevoked ? sql`` : sql`and revoked_at is null`}
     order by created_at desc, id desc limit ${limit}`;
  return rows.map((r) => view(r, caller));
}

/**
 * Creates a token for the caller, named `name` (unique among its unrevoked tokens), expiring
 * `expiresInMs` after the database's `now()` (or never). Returns the view and the secret, which
 * is shown only here. Errors: `token_name_taken`, `token_limit_reached` (409).
 */
export async function createToken(sql: Sql, caller: Principal, input: { name: string; expiresInMs?: number }): Promise<{ token: TokenView; secret: string }> {
  return withTx(sql, async (tx) => {
    // One writer per owner at a time, so the name check and the limit are exact under races.
    await lockXact(tx, `coord:tokens:${caller.id}`);
    const [{ n, taken }] = await tx<{ n: number; taken: boolean }[]>`
      select count(*)::int as n, coalesce(bool_or(name = ${input.name}), false) as taken
        from tokens where ${tx(ownerColumn(caller))} = ${caller.id} and revoked_at is null`;
    if (taken) fail('token_name_taken', `you already have an unrevoked token named "${input.name}"; pick another name, or revoke that one first`);
    if (n >= MAX_TOKENS_PER_PRINCIPAL) {
      fail('token_limit_reached', `you hold ${n} unrevoked tokens, the most allowed (${MAX_TOKENS_PER_PRINCIPAL}); revoke unused or expired ones first`);
    }
    const [made] = await insertTokens(
      tx,
      caller.teamId,
      [
        {
          ...(caller.kind === 'user' ? { userId: caller.id } : { sessionId: caller.id }),
          name: input.name,
          createdBy: caller.id,
          expiresInMs: input.expiresInMs,
        },
      ],
      actorOf(caller),
    );
    const [row] = await tx<Row[]>`select ${COLUMNS(tx)} from tokens where id = ${made.id}`;
    return { token: view(row, caller), secret: made.secret };
  });
}

/** One token as `caller` would see it in a list (never the secret), read in `db`; used after another module minted it (a team's first operator). */
export async function tokenView(db: Db, id: string, caller: Principal): Promise<TokenView> {
  const [row] = await db<Row[]>`select ${COLUMNS(db)} from tokens where id = ${id}`;
  return view(row, caller);
}

/** The audit's record of a token change by `caller` (topic `audit:tokens`; never the secret). */
async function recordTokenEvent(tx: Db, caller: Principal, event: 'token-rotated' | 'token-revoked', r: Row): Promise<void> {
  const principal = r.user_id ? { kind: 'user' as const, id: r.user_id } : { kind: 'session' as const, id: r.session_id! };
  await recordTokenEvents(tx, caller.teamId, actorOf(caller), event, [{ id: r.id, name: r.name, principal, expiresAt: r.expires_at?.toISOString() ?? null }]);
}

/** Reads one token the caller may see (`own` = only its own), locked for update; `token_not_found` otherwise. */
async function lockVisible(tx: Db, caller: Principal, id: string, own: boolean): Promise<Row> {
  const [row] = await tx<Row[]>`select ${COLUMNS(tx)} from tokens where id = ${id} for update`;
  const mine = row && (row.user_id ?? row.session_id) === caller.id;
  // Another team's token, and (to an operator that is not one) an administrator's, is missing.
  if (!row || (!mine && (own || caller.kind !== 'user' || row.team_id !== caller.teamId || (row.owner_role === 'admin' && !isServerAdmin(caller))))) {
    fail('token_not_found', `no token "${id}" that you may ${own ? 'rotate' : 'revoke'}; list yours with GET /v1/tokens`);
  }
  return row;
}

/**
 * Refuses (409 `last_operator_token`) to revoke, or to give an expiry to, operator token `row`
 * when no other unrevoked operator token without an expiry would remain: for an administrator's
 * token another administrator's (else nobody could create teams or read the configuration), for
 * any other operator's another of its team's (else nobody could administer the team). Tokens that
 * expire do not count. Takes the lock that serialises these checks (READ COMMITTED: a racing
 * revocation's commit is seen).
 */
async function assertAnotherOperatorToken(tx: Db, row: Row, doing: 'revoking' | 'giving an expiry to'): Promise<void> {
  await lockXact(tx, 'coord:operator-tokens');
  const admin = row.owner_role === 'admin';
  const [other] = await tx`
    select 1 from tokens
     where user_id in (select id from users where ${admin ? tx`role = 'admin'` : tx`team_id = ${row.team_id}`})
       and id <> ${row.id} and revoked_at is null and expires_at is null limit 1`;
  if (!other) {
    fail(
      'last_operator_token',
      `token ${row.id} is the last ${admin ? 'server administrator' : 'operator'} token without an expiry${admin ? '' : ' of its team'}; ` +
        `create another without expiresIn (POST /v1/tokens) before ${doing} this one`,
    );
  }
}

/**
 * Gives one of the caller's own unrevoked tokens a new secret (same id and name; the old secret
 * is refused at once on every replica). `expiresInMs` sets a new expiry that many ms after the
 * database's `now()`, `null` removes the expiry, and `undefined` keeps it; an expired token
 * therefore needs a new one (or `null`). Errors: `token_not_found` (404), `invalid_transition`
 * (409: revoked, or expired with the expiry kept), `last_operator_token` (409: an expiry for the
 * last operator token without one; see `assertAnotherOperatorToken`).
 */
export async function rotateToken(
  sql: Sql,
  caller: Principal,
  id: string,
  input: { expiresInMs?: number | null },
): Promise<{ token: TokenView; secret: string }> {
  return withTx(sql, async (tx) => {
    const row = await lockVisible(tx, caller, id, true);
    if (row.state === 'revoked') fail('invalid_transition', `token ${id} is revoked; create a new one with POST /v1/tokens`);
    if (row.state === 'expired' && input.expiresInMs === undefined) {
      fail('invalid_transition', `token ${id} has expired; rotate it with a new expiresIn, or create a new one`);
    }
    // Giving the last operator token without an expiry one would leave nobody able to administer.
    if (row.user_id && row.expires_at === null && typeof input.expiresInMs === 'number') await assertAnotherOperatorToken(tx, row, 'giving an expiry to');
    const secret = newToken();
    const expiry =
      input.expiresInMs === undefined
        ? tx`expires_at`
        : input.expiresInMs === null
          ? tx`null`
          : tx`now() + make_interval(secs => ${input.expiresInMs / 1000}::float8)`;
    const [updated] = await tx<Row[]>`
      update tokens set token_hash = ${hashToken(secret)}, rotated_at = now(), expires_at = ${expiry}
       where id = ${id} returning ${COLUMNS(tx)}`;
    noteTokensRevoked(tx, [id]);
    await recordTokenEvent(tx, caller, 'token-rotated', updated);
    return { token: view(updated, caller), secret };
  });
}

/**
 * Revokes a token: it is refused at once on every replica and its streams end; the row stays (what
 * it did remains attributable to its name). Idempotent: revoking a revoked token returns it
 * unchanged. Sessions revoke their own tokens; operators anyone's in their team but an
 * administrator's (administrators: every one of their team). Errors: `token_not_found` (404),
 * `last_operator_token` (409: no other unrevoked operator token of the team without an expiry
 * would be left, or for an administrator's token no other administrator's; tokens that expire do
 * not count: once they had, nobody could administer the team, or Coord).
 */
export async function revokeToken(sql: Sql, caller: Principal, id: string): Promise<TokenView> {
  return withTx(sql, async (tx) => {
    const row = await lockVisible(tx, caller, id, false);
    if (row.state === 'revoked') return view(row, caller);
    // Operator tokens: one check at a time, so two racing revocations cannot both pass it.
    if (row.user_id) await assertAnotherOperatorToken(tx, row, 'revoking');
    const [updated] = await tx<Row[]>`update tokens set revoked_at = now() where id = ${id} returning ${COLUMNS(tx)}`;
    noteTokensRevoked(tx, [id]);
    await recordTokenEvent(tx, caller, 'token-revoked', updated);
    return view(updated, caller);
  });
}
