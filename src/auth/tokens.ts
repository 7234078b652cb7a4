import { createHash, timingSafeEqual } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Db, Sql } from '../db/client.js';
import { newId, newToken } from '../lib/ids.js';
import type { PrincipalCache } from './principal-cache.js';
import type { Principal, SessionPrincipal } from './principal.js';

/** sha256(token) as hex. Tokens carry 256 random bits, so a fast hash is the right tool. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/**
 * Resolves a bearer token to its principal, or undefined. One indexed lookup (skipped on a hit in
 * `cache`); the stored hash is then compared in constant time. Only `active` sessions
 * authenticate (a stopped session's token stops working at once, on every replica: see
 * principal-cache.ts for how the cache keeps that true).
 */
export async function principalForToken(sql: Sql, token: string, cache?: PrincipalCache): Promise<Principal | undefined> {
  const hash = hashToken(token);
  const cached = cache?.get(hash);
  if (cached) return cached;
  const rows = await sql<
    { kind: 'user' | 'session'; id: string; name: string; root_id: string | null; parent_id: string | null; system_kind: string | null; agent_id: string | null; graph_id: string | null; subtask_id: string | null; token_hash: string }[]
  >`
    select 'session' as kind, id, name, root_id, parent_id, system_kind, agent_id, graph_id, subtask_id, token_hash
      from sessions where token_hash = ${hash} and status = 'active'
    union all
    select 'user', id, name, null, null, null, null, null, null, token_hash from users where token_hash = ${hash}
    limit 1`;
  const r = rows[0];
  if (!r || !timingSafeEqual(Buffer.from(r.token_hash), Buffer.from(hash))) return undefined;
  const principal: Principal = r.kind === 'user' ? { kind: 'user', id: r.id, name: r.name } : sessionPrincipal(r);
  cache?.set(hash, principal);
  return principal;
}

type SessionRow = { id: string; name: string; root_id: string | null; parent_id: string | null; system_kind: string | null; agent_id: string | null; graph_id: string | null; subtask_id: string | null };

function sessionPrincipal(r: SessionRow): SessionPrincipal {
  return { kind: 'session', id: r.id, name: r.name, rootId: r.root_id!, parentId: r.parent_id, systemKind: r.system_kind, agentId: r.agent_id, graphId: r.graph_id, subtaskId: r.subtask_id };
}

/**
 * The principal of an active session by id, as its own token would authenticate it, or
 * undefined when no active session has that id (stopped, deleted, unknown, or an operator's id).
 * Used to check what another session may do (an assignee must be able to claim).
 */
export async function activeSessionPrincipal(db: Db, id: string): Promise<SessionPrincipal | undefined> {
  const [r] = await db<SessionRow[]>`
    select id, name, root_id, parent_id, system_kind, agent_id, graph_id, subtask_id
      from sessions where id = ${id} and status = 'active'`;
  return r ? sessionPrincipal(r) : undefined;
}

/** Creates an operator and returns its token (shown once). */
export async function createUser(sql: Sql, name: string, token = newToken()): Promise<{ id: string; token: string }> {
  const id = newId('u');
  await sql`insert into users (id, name, token_hash) values (${id}, ${name}, ${hashToken(token)})`;
  return { id, token };
}

/**
 * First-start bootstrap (design brief §2). With `COORD_ADMIN_TOKEN`, makes sure an operator
 * `admin` holds that token. Otherwise, when no operator exists yet, creates one and writes its
 * token to `<dataDir>/admin-token` with mode 0600. Returns a line for the start-up log.
 */
export async function bootstrapAdmin(sql: Sql, dataDir: string, envToken?: string): Promise<string> {
  if (envToken) {
    const hash = hashToken(envToken);
    const [found] = await sql`select id from users where token_hash = ${hash}`;
    if (!found) await createUser(sql, 'admin', envToken);
    return 'operator token: taken from COORD_ADMIN_TOKEN';
  }
  const file = path.join(dataDir, 'admin-token');
  const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from users`;
  if (n > 0) {
    return existsSync(file)
      ? `operator token: ${file}`
      : 'operator token: an operator already exists (its token was shown when it was created)';
  }
  const { token } = await createUser(sql, 'admin');
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(file, token + '\n', { mode: 0o600 });
  chmodSync(file, 0o600);
  return `operator token written to ${file} (mode 0600); use it as: Authorization: Bearer $(cat ${file})`;
}

/** Reads the token file written by `bootstrapAdmin`, if present. */
export function readAdminTokenFile(dataDir: string): string | undefined {
  const file = path.join(dataDir, 'admin-token');
  return existsSync(file) ? readFileSync(file, 'utf8').trim() : undefined;
}
