import { timingSafeEqual } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Db, Sql } from '../db/client.js';
import { lockXact } from '../db/locks.js';
import { withTx } from '../db/tx.js';
import { newId, newToken } from '../lib/ids.js';
import type { PrincipalCache } from './principal-cache.js';
import type { Principal, SessionPrincipal } from './principal.js';
import { hashToken, insertFirstToken, insertTokens, recordTokenEvents } from '../tokens/tokens.repo.js';
import { systemActor } from './actor.js';
import { TOKEN_REVOKED } from '../events/events.hub.js';
import { DEFAULT_TEAM } from '../teams/teams.table.js';

/** Operators and COORD_ADMIN_TOKEN's tokens made at start-up, as the audit records them: Coord's start-up acting. */
const BOOTSTRAP = systemActor('bootstrap');

export { hashToken } from '../tokens/tokens.repo.js';

type PrincipalRow = {
  kind: 'user' | 'session';
  id: string;
  name: string;
  team_id: string;
  role: 'operator' | 'admin' | null;
  root_id: string | null;
  parent_id: string | null;
  system_kind: string | null;
  agent_id: string | null;
  graph_id: string | null;
  subtask_id: string | null;
  token_id: string;
  token_name: string;
  token_hash: string;
  /** ms until the token expires by the database clock, or null (no expiry). */
  expires_in_ms: number | null;
};

/**
 * Resolves a bearer token to its principal, or undefined. One indexed lookup (skipped on a hit in
 * `cache`, and for a token it refused less than its lifetime ago); the stored hash is then compared in constant time. A token authenticates while it is
 * not revoked and not expired by the database clock, and a session's only while the session is
 * `active` (a stopped session's or a revoked token stops working at once, on every replica: see
 * principal-cache.ts for how the cache keeps that true; a cached entry never outlives the
 * token's expiry as the database measured it).
 */
export async function principalForToken(sql: Sql, token: string, cache?: PrincipalCache): Promise<Principal | undefined> {
  const hash = hashToken(token);
  const cached = cache?.get(hash);
  if (cached) return cached;
  if (cache?.isRefused(hash)) return undefined;
  // Expiry is measured from before the query: the database's now() falls after this moment, so a
  // slow answer (a loaded machine) can only shorten how long the token is trusted, never extend it.
  const asked = performance.now();
  const [r] = await sql<PrincipalRow[]>`${principalRows(sql)} and k.token_hash = ${hash}`;
  if (!r || !timingSafeEqual(Buffer.from(r.token_hash), Buffer.from(hash))) {
    cache?.refuse(hash, asked);
    return undefined;
  }
  const principal = toPrincipal(r, asked);
  cache?.set(hash, principal, r.expires_in_ms ?? undefined, asked);
  return principal;
}

/**
 * The principals of many token hashes at once, in one statement: those that still authenticate
 * (as {@link principalForToken} decides), by hash; a hash that no longer does is absent. Bypasses
 * the cache: the event streams' periodic re-check (events.recheck.ts) is the backstop for a lost
 * revocation or stop ring, so it must ask the database.
 */
export async function principalsForHashes(sql: Sql, hashes: string[]): Promise<Map<string, Principal>> {
  if (!hashes.length) return new Map();
  const asked = performance.now();
  const rows = await sql<PrincipalRow[]>`${principalRows(sql)} and k.token_hash = any(${hashes}::text[])`;
  return new Map(rows.map((r) => [r.token_hash, toPrincipal(r, asked)]));
}

/** The live tokens with their principals (a WHERE clause to extend with `and …`). */
function principalRows(sql: Sql) {
  return sql`
    select case when k.user_id is null then 'session' else 'user' end as kind, coalesce(u.id, s.id) as id, coalesce(u.name, s.name) as name,
           coalesce(u.team_id, s.team_id) as team_id, u.role, s.root_id, s.parent_id, s.system_kind, s.agent_id, s.graph_id, s.subtask_id,
           k.id as token_id, k.name as token_name, k.token_hash,
           (extract(epoch from k.expires_at - now()) * 1000)::float8 as expires_in_ms
      from tokens k
      left join users u on u.id = k.user_id
      left join sessions s on s.id = k.session_id
     where k.revoked_at is null and (k.expires_at is null or k.expires_at > now())
       and (u.id is not null or s.status = 'active')`;
}

/** `asked`: `performance.now()` just before the query that read `r`, which its expiry counts from. */
function toPrincipal(r: PrincipalRow, asked: number): Principal {
  const tok = { id: r.token_id, name: r.token_name, ...(r.expires_in_ms === null ? {} : { expiresAtMono: asked + r.expires_in_ms }) };
  return r.kind === 'user' ? { kind: 'user', id: r.id, name: r.name, teamId: r.team_id, role: r.role ?? 'operator', token: tok } : { ...sessionPrincipal(r), token: tok };
}

type SessionRow = { id: string; name: string; team_id: string; root_id: string | null; parent_id: string | null; system_kind: string | null; agent_id: string | null; graph_id: string | null; subtask_id: string | null };

function sessionPrincipal(r: SessionRow): SessionPrincipal {
  return { kind: 'session', id: r.id, name: r.name, teamId: r.team_id, rootId: r.root_id!, parentId: r.parent_id, systemKind: r.system_kind, agentId: r.agent_id, graphId: r.graph_id, subtaskId: r.subtask_id };
}

/**
 * The principal of an active session by id, as its own token would authenticate it, or
 * undefined when no active session has that id (stopped, deleted, unknown, or an operator's id).
 * Used to check what another session may do (an assignee must be able to claim).
 */
export async function activeSessionPrincipal(db: Db, id: string): Promise<SessionPrincipal | undefined> {
  const [r] = await db<SessionRow[]>`
    select id, name, team_id, root_id, parent_id, system_kind, agent_id, graph_id, subtask_id
      from sessions where id = ${id} and status = 'active'`;
  return r ? sessionPrincipal(r) : undefined;
}

/**
 * Creates an operator with its first token (named `default`) and returns both. Accepts the pool or
 * a transaction. `opts.role` `admin` makes the server administrator (the bootstrap's operator);
 * `opts.teamId` defaults to the default team.
 */
export async function createUser(
  sql: Db,
  name: string,
  token = newToken(),
  opts: { teamId?: string; role?: 'operator' | 'admin' } = {},
): Promise<{ id: string; token: string }> {
  const id = newId('u');
  await sql`insert into users (id, name, team_id, role) values (${id}, ${name}, ${opts.teamId ?? DEFAULT_TEAM}, ${opts.role ?? 'operator'})`;
  await insertFirstToken(sql, opts.teamId ?? DEFAULT_TEAM, { userId: id, createdBy: id, secret: token }, BOOTSTRAP);
  return { id, token };
}

/** The name of the operator token that `COORD_ADMIN_TOKEN` installs (see `bootstrapAdmin`). */
export const ENV_TOKEN_NAME = 'COORD_ADMIN_TOKEN';

/** Writes a token file with mode 0600 through a temporary file and a rename (never half-written). */
function writeTokenFile(file: string, token: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, token + '\n', { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
}

/**
 * First-start bootstrap (design brief §2), safe when several replicas start at once on one
 * database (issue 18 #5): everything runs in one transaction under one advisory lock, so the
 * replicas take turns and the later ones find the work done. Returns a line for the start-up
 * log; throws only on database errors.
 *
 * - With `COORD_ADMIN_TOKEN` (issue 21: explicit, never an extra operator per value): the value
 *   becomes the token named `COORD_ADMIN_TOKEN` of the first operator (created as `admin` when
 *   the database has none). When that operator already has a different `COORD_ADMIN_TOKEN` token
 *   (the variable changed), the old one is revoked and a new one holds the new value. A
 *   value that is already a live token of anyone is left as it is. A value that was revoked
 *   through `DELETE /v1/tokens/{id}` is not brought back: the log says so and the server starts
 *   without it (set a new value).
 * - Without it: when the database has no operator yet, creates one and writes its token to
 *   `<dataDir>/admin-token` (mode 0600). The file is written before the transaction commits: an
 *   operator never exists without its token on disk (a failed commit leaves a file the next start
 *   overwrites). Replicas sharing a data folder then all name the same file; a replica with its
 *   own folder reports that the operator exists and where its token went.
 */
export async function bootstrapAdmin(sql: Sql, dataDir: string, envToken?: string): Promise<string> {
  const file = path.join(dataDir, 'admin-token');
  return withTx(sql, async (tx) => {
    await lockXact(tx, 'coord:bootstrap-admin');
    if (envToken) return installEnvToken(tx, envToken);
    const [{ n }] = await tx<{ n: number }[]>`select count(*)::int as n from users`;
    if (n === 0) {
      const { token } = await createUser(tx, 'admin', undefined, { role: 'admin' });
      writeTokenFile(file, token);
      return `operator token written to ${file} (mode 0600); use it as: Authorization: Bearer $(cat ${file})`;
    }
    if (!existsSync(file)) {
      return (
        'operator token: this database already has an operator; its token is in the admin-token file of the data folder ' +
        'of the replica that created it (or was shown when it was created). Set COORD_ADMIN_TOKEN to give every replica the same one.'
      );
    }
    const [known] = await tx`
      select 1 from tokens where token_hash = ${hashToken(readFileSync(file, 'utf8').trim())} and user_id is not null
         and revoked_at is null and (expires_at is null or expires_at > now())`;
    return known
      ? `operator token: ${file}`
      : `operator token: ${file} holds no live operator token of this database (it was written for another one, or revoked or expired); ` +
          'use an operator token of this database, or set COORD_ADMIN_TOKEN';
  });
}

async function installEnvToken(tx: Db, envToken: string): Promise<string> {
  const hash = hashToken(envToken);
  const [existing] = await tx<{ id: string; name: string; owner: string; revoked: boolean }[]>`
    select id, name, coalesce(user_id, session_id) as owner, revoked_at is not null as revoked from tokens where token_hash = ${hash}`;
  if (existing?.revoked) {
    return `operator token: COORD_ADMIN_TOKEN was revoked (token ${existing.id}) and is not reinstated; set COORD_ADMIN_TOKEN to a new value`;
  }
  if (existing) return `operator token: COORD_ADMIN_TOKEN is token "${existing.name}" (${existing.id}) of ${existing.owner}`;
  let [first] = await tx<{ id: string }[]>`
    select id from users where team_id = ${DEFAULT_TEAM} order by role = 'admin' desc, created_at, id limit 1`;
  if (!first) {
    const id = newId('u');
    await tx`insert into users (id, name, team_id, role) values (${id}, 'admin', ${DEFAULT_TEAM}, 'admin')`;
    first = { id };
  }
  const replaced = await tx<{ id: string; expires_at: Date | null }[]>`
    update tokens set revoked_at = now() where user_id = ${first.id} and name = ${ENV_TOKEN_NAME} and revoked_at is null returning id, expires_at`;
  // At start-up this replica's doorbell may not be installed yet; a NOTIFY sent at commit (a
  // rare statement, so its cluster-wide lock costs nothing) tells the running replicas.
  if (replaced.length) await tx`select pg_notify('coord_events', ${TOKEN_REVOKED} || t) from unnest(${replaced.map((r) => r.id)}::text[]) t`;
  const fact = (id: string, expiresAt: Date | null) => ({ id, name: ENV_TOKEN_NAME, principal: { kind: 'user' as const, id: first.id }, expiresAt: expiresAt?.toISOString() ?? null });
  await recordTokenEvents(tx, DEFAULT_TEAM, BOOTSTRAP, 'token-revoked', replaced.map((r) => fact(r.id, r.expires_at)));
  await insertTokens(tx, DEFAULT_TEAM, [{ userId: first.id, name: ENV_TOKEN_NAME, createdBy: first.id, secret: envToken }], BOOTSTRAP);
  return (
    `operator token: COORD_ADMIN_TOKEN installed as token "${ENV_TOKEN_NAME}" of operator ${first.id}` +
    (replaced.length ? ` (its previous value, token ${replaced[0].id}, is revoked)` : '')
  );
}

/** Reads the token file written by `bootstrapAdmin`, if present. */
export function readAdminTokenFile(dataDir: string): string | undefined {
  const file = path.join(dataDir, 'admin-token');
  return existsSync(file) ? readFileSync(file, 'utf8').trim() : undefined;
}
