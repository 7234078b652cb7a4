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
 * Throws {@link NoPrimaryError} when it finds no server that takes writes: the one reached is a
 * hot standby or read-only, or, with several hosts, none of them answered as a primary. Coord
 * cannot start then, and the message says what to do.
 */
export async function migrateDatabase(url: string, migrationsFolder = MIGRATIONS_DIR): Promise<void> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  const { hosts, targetSessionAttrs } = describeDatabaseUrl(url);
  try {
    const [server] = await sql<{ standby: boolean; readOnly: string }[]>`
      select pg_is_in_recovery() as standby, current_setting('transaction_read_only') as "readOnly"`.catch((err: Error) => {
      // Several hosts, each refused or closed for not matching target_session_attrs: the driver
      // reports only the last one's error, which names one host and says nothing of the others.
      throw hosts.length > 1 && isDatabaseUnavailable(err)
        ? new NoPrimaryError(`none of the ${hosts.length} servers it names answered as a primary (the last one tried: ${err.message})`, targetSessionAttrs)
        : err;
    });
    if (server.standby || server.readOnly === 'on') {
      throw new NoPrimaryError(
        server.standby ? 'the server it reached is a hot standby, in recovery' : 'the server it reached is read-only (default_transaction_read_only is on)',
        targetSessionAttrs,
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

/** DATABASE_URL leads to no server that takes writes, so Coord cannot migrate or serve. */
export class NoPrimaryError extends Error {
  constructor(what: string, targetSessionAttrs: string | undefined) {
    super(
      `the database at DATABASE_URL takes no writes: ${what}. Point DATABASE_URL at the primary, or name every host ` +
        `${targetSessionAttrs === 'primary' ? 'and start Coord again once one of them is the primary' : 'with target_session_attrs=primary so the primary is found'} ` +
        '(docs/operations.md, high availability)',
    );
    this.name = 'NoPrimaryError';
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
