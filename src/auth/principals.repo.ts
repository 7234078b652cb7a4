/**
 * Who a bearer token is: the principals repository (a token's user or active session, by the hash of
 * the token). Read-only; tokens are made and revoked in src/tokens/.
 */
import { timingSafeEqual } from 'node:crypto';
import type { Db, Sql } from '../db/client.js';
import { hashToken } from '../lib/ids.js';
import type { PrincipalCache } from './principal-cache.js';
import type { Principal, SessionPrincipal } from './principal.js';

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
  return r.kind === 'user'
    ? { kind: 'user', id: r.id, name: r.name, teamId: r.team_id, role: r.role ?? 'operator', token: tok }
    : { ...sessionPrincipal(r), token: tok };
}

type SessionRow = {
  id: string;
  name: string;
  team_id: string;
  root_id: string | null;
  parent_id: string | null;
  system_kind: string | null;
  agent_id: string | null;
  graph_id: string | null;
  subtask_id: string | null;
};

function sessionPrincipal(r: SessionRow): SessionPrincipal {
  return {
    kind: 'session',
    id: r.id,
    name: r.name,
    teamId: r.team_id,
    rootId: r.root_id!,
    parentId: r.parent_id,
    systemKind: r.system_kind,
    agentId: r.agent_id,
    graphId: r.graph_id,
    subtaskId: r.subtask_id,
  };
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
