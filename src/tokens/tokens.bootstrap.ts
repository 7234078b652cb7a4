/**
 * Operators made outside the API: the administrator and its token file at first start-up
 * (`bootstrapAdmin`), `COORD_ADMIN_TOKEN`, and `createUser` for tests and tools.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Db, Sql } from '../db/client.js';
import { lockXact } from '../db/locks.js';
import { DEFAULT_TEAM } from '../db/schema/teams.js';
import { withTx } from '../db/tx.js';
import { systemActor } from '../auth/actor.js';
import { TOKEN_REVOKED } from '../events/events.hub.js';
import { hashToken, newId, newToken } from '../lib/ids.js';
import { insertFirstToken, insertTokens, recordTokenEvents } from './tokens.repo.js';

/** Operators and COORD_ADMIN_TOKEN's tokens made at start-up, as the audit records them: Coord's start-up acting. */
const BOOTSTRAP = systemActor('bootstrap');

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
  writeFileSync(tmp, `${token}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
}

/**
 * First-start bootstrap (docs/architecture.md §D2), safe when several replicas start at once on one
 * database: everything runs in one transaction under one advisory lock, so the
 * replicas take turns and the later ones find the work done. Returns a line for the start-up
 * log; throws only on database errors.
 *
 * - With `COORD_ADMIN_TOKEN` (explicit, never an extra operator per value): the value
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
  const fact = (id: string, expiresAt: Date | null) => ({
    id,
    name: ENV_TOKEN_NAME,
    principal: { kind: 'user' as const, id: first.id },
    expiresAt: expiresAt?.toISOString() ?? null,
  });
  await recordTokenEvents(
    tx,
    DEFAULT_TEAM,
    BOOTSTRAP,
    'token-revoked',
    replaced.map((r) => fact(r.id, r.expires_at)),
  );
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
