import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import postgres from 'postgres';

/** The postgres.js client every repository uses for hand-written SQL. */
export type Sql = postgres.Sql;
/** A client or a transaction: repository functions accept either. */
export type Db = postgres.Sql | postgres.TransactionSql;

export interface OpenDbOptions {
  /** Pool size. */
  max?: number;
  /** Postgres `lock_timeout` in ms: `[todo] busy_timeout` (seed 000); a contended writer waits this long. */
  lockTimeoutMs?: number;
  applicationName?: string;
}

/**
 * Opens a pool. `lock_timeout` is set per connection so a writer waits for a row lock up to
 * `busy_timeout` and then fails with SQLSTATE 55P03, which the error handler maps to 503 `busy`.
 * int8 values (event ids, counts) are parsed as JS numbers (safe below 2^53).
 */
export function openDb(url: string, opts: OpenDbOptions = {}): Sql {
  return postgres(url, {
    max: opts.max ?? 20,
    onnotice: () => {},
    types: { bigint: postgres.BigInt },
    connection: {
      application_name: opts.applicationName ?? 'coord',
      lock_timeout: Math.max(1, Math.round(opts.lockTimeoutMs ?? 5000)),
    },
    transform: { undefined: null },
  });
}

/**
 * True when the installed postgres.js carries Coord's guard for porsager/postgres#1208 (applied by
 * `scripts/patch-postgres.mjs`, the `postinstall` script). Without it a Postgres restart while a
 * transaction is open crashes the process; the server warns at start-up when it is missing.
 */
export function postgresDriverPatched(): boolean {
  // The CommonJS entry is <pkg>/cjs/src/index.js; the ESM build Coord runs is <pkg>/src.
  const pkg = path.resolve(path.dirname(createRequire(import.meta.url).resolve('postgres')), '../..');
  const file = path.join(pkg, 'src', 'connection.js');
  return existsSync(file) && readFileSync(file, 'utf8').includes('coord patch: porsager/postgres#1208');
}
