import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import { isDatabaseUnavailable } from './unavailable.js';
import { describeDatabaseUrl } from './client.js';

export const MIGRATIONS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../migrations');

/**
 * Applies the drizzle-kit migrations in `migrations/` under a session advisory lock, so several
 * replicas starting at once migrate exactly once (drizzle's migrator takes no lock of its own:
 * three concurrent runs on a fresh database gave one success and two failures, stack.md #10).
 * Uses its own single connection, closed before returning. `migrationsFolder` is for tests that
 * build a database as an earlier release left it.
 *
 * Throws {@link DatabaseUrlError} when DATABASE_URL leads to no server Coord can use: none
 * answers, the one reached takes no writes (a hot standby, or read-only), or, with several hosts,
 * none answered as a primary. Coord cannot start then, and the message says what to do.
 */
export async function migrateDatabase(url: string, migrationsFolder = MIGRATIONS_DIR): Promise<void> {
  const { hosts, targetSessionAttrs } = describeDatabaseUrl(url);
  if (targetSessionAttrs !== undefined && targetSessionAttrs !== 'primary' && targetSessionAttrs !== 'read-write') {
    throw new DatabaseUrlError(`it sets target_session_attrs=${targetSessionAttrs}, but Coord writes`, 'use target_session_attrs=primary');
  }
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const [server] = await sql<{ standby: boolean; readOnly: string }[]>`
      select pg_is_in_recovery() as standby, current_setting('transaction_read_only') as "readOnly"`.catch((err: { code?: string; message: string }) => {
      // The driver closes a server that does not match target_session_attrs (CONNECTION_DESTROYED,
      // with a garbled host list) and, with several hosts, reports only the last one's error.
      const standby = err.code === 'CONNECTION_DESTROYED' && targetSessionAttrs !== undefined;
      if (hosts.length > 1 && (standby || isDatabaseUnavailable(err))) {
        throw new DatabaseUrlError(
          `none of the ${hosts.length} servers it names answered as a primary (the last one tried ${standby ? 'is a hot standby' : `said: ${err.message}`})`,
          'start Coord again once one of them runs as the primary',
        );
      }
      if (standby) throw new DatabaseUrlError(`the server it names is a hot standby (target_session_attrs=${targetSessionAttrs})`, 'point it at the primary');
      if (isDatabaseUnavailable(err)) {
        throw new DatabaseUrlError(`the server it names could not be reached (${err.message})`, 'check that Postgres runs there, then start Coord again');
      }
      throw new DatabaseUrlError(`the server refused it: ${err.message}`, 'check the user, password and database name in DATABASE_URL');
    });
    if (server.standby || server.readOnly === 'on') {
      throw new DatabaseUrlError(
        server.standby
          ? 'the server it reached is a hot standby, in recovery, and takes no writes'
          : 'the server it reached is read-only (default_transaction_read_only is on)',
        targetSessionAttrs === 'primary'
          ? 'point it at the primary'
          : 'point it at the primary, or name every host with target_session_attrs=primary so the primary is found',
      );
    }
    await sql`select pg_advisory_lock(hashtextextended('coord:migrate', 0))`;
    try {
      await migrate(drizzle(sql), { migrationsFolder });
    } finally {
      await sql`select pg_advisory_unlock(hashtextextended('coord:migrate', 0))`;
    }
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** DATABASE_URL leads to no server Coord can use, so it cannot migrate or serve. */
export class DatabaseUrlError extends Error {
  constructor(what: string, next: string) {
    super(`cannot use the database at DATABASE_URL: ${what}; ${next} (docs/operations.md, high availability)`);
    this.name = 'DatabaseUrlError';
  }
}

/** True when every migration in `migrations/` has been applied (used by `/readyz`). */
export async function migrationsApplied(sql: postgres.Sql, expected: number): Promise<boolean> {
  try {
    const [row] = await sql<{ n: number }[]>`select count(*)::int as n from drizzle.__drizzle_migrations`;
    return row.n >= expected;
  } catch {
    return false;
  }
}
