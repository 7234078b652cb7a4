import { createHash, timingSafeEqual } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Db, Sql } from '../db/client.js';
import { lockXact } from '../db/locks.js';
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

/** Creates an operator and returns its token (shown once). Accepts the pool or a transaction. */
export async function createUser(sql: Db, name: string, token = newToken()): Promise<{ id: string; token: string }> {
  const id = newId('u');
  await sql`insert into users (id, name, token_hash) values (${id}, ${name}, ${hashToken(token)})`;
  return { id, token };
}

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
 * database (issue 18 #5). Returns a line for the start-up log; throws only on database errors.
 *
 * - With `COORD_ADMIN_TOKEN`: makes sure an operator `admin` holds that token. Replicas given the
 *   same token insert the same hash; `on conflict do nothing` makes the losers no-ops, so every
 *   replica shares the one operator.
 * - Without it: when the database has no operator yet, creates one and writes its token to
 *   `<dataDir>/admin-token` (mode 0600). The check and the insert run under one
 *   transaction-scoped advisory lock, so exactly one replica creates the operator. The file is
 *   written before that transaction commits: an operator never exists without its token on disk
 *   (a failed commit leaves a file the next start overwrites). Replicas sharing a data folder
 *   then all name the same file; a replica with its own folder reports that the operator exists
 *   and where its token went (the creating replica's folder).
 */
export async function bootstrapAdmin(sql: Sql, dataDir: string, envToken?: string): Promise<string> {
  if (envToken) {
    await sql`insert into users (id, name, token_hash) values (${newId('u')}, 'admin', ${hashToken(envToken)}) on conflict (token_hash) do nothing`;
    return 'operator token: taken from COORD_ADMIN_TOKEN';
  }
  const file = path.join(dataDir, 'admin-token');
  return sql.begin(async (tx) => {
    await lockXact(tx, 'coord:bootstrap-admin');
    const [{ n }] = await tx<{ n: number }[]>`select count(*)::int as n from users`;
    if (n === 0) {
      const { token } = await createUser(tx, 'admin');
      writeTokenFile(file, token);
      return `operator token written to ${file} (mode 0600); use it as: Authorization: Bearer $(cat ${file})`;
    }
    if (!existsSync(file)) {
      return (
        'operator token: this database already has an operator; its token is in the admin-token file of the data folder ' +
        'of the replica that created it (or was shown when it was created). Set COORD_ADMIN_TOKEN to give every replica the same one.'
      );
    }
    const [known] = await tx`select 1 from users where token_hash = ${hashToken(readFileSync(file, 'utf8').trim())}`;
    return known
      ? `operator token: ${file}`
      : `operator token: ${file} holds no operator's token for this database (it was written for another one); ` +
          'use an operator token of this database, or set COORD_ADMIN_TOKEN';
  });
}

/** Reads the token file written by `bootstrapAdmin`, if present. */
export function readAdminTokenFile(dataDir: string): string | undefined {
  const file = path.join(dataDir, 'admin-token');
  return existsSync(file) ? readFileSync(file, 'utf8').trim() : undefined;
}
