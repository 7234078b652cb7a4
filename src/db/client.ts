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
  /** Most time opening one connection may take, in ms (default 5000): `COORD_DB_CONNECT_TIMEOUT`. */
  connectTimeoutMs?: number;
  /**
   * A string bound to a `json`/`jsonb` parameter is JSON text already, sent as it is (pg's rule,
   * which pg-boss relies on: it binds `JSON.stringify(jobs)`); by default postgres.js encodes it
   * again, as a JSON string.
   */
  jsonTextAsIs?: boolean;
}

/**
 * Delay before a connection of the pool tries to reconnect, in seconds, given how many
 * connection failures in a row the pool has seen. postgres.js's default grows to 10–20 s
 * (`min(3^n / 100, 20)` with jitter) and the counter only resets on a successful connect, so
 * after a few seconds of outage every query that needs a new connection waited that long first:
 * requests hung for tens of seconds, during the outage and after it, while `/readyz` (on a
 * connection already back) said 200. Capped at 1 s here: during an outage a request
 * gets its 503 within about a second, and after it the pool is whole again within a second. The
 * cost is at most one connection attempt per pool slot per second against a database that is
 * down, which refuses it at once.
 */
export function reconnectBackoff(failures: number): number {
  return Math.min(0.05 * 2 ** failures, 1) * (0.5 + Math.random() / 2);
}

/**
 * Opens a pool. `lock_timeout` is set per connection so a writer waits for a row lock up to
 * `busy_timeout` and then fails with SQLSTATE 55P03, which the error handler maps to 503 `busy`.
 * int8 values (event ids, counts) are parsed as JS numbers (safe below 2^53).
 *
 * When the database goes away, queries fail with connection errors (ECONNREFUSED, 57P01,
 * CONNECTION_CLOSED, CONNECT_TIMEOUT, …) that the error handler answers as 503
 * `database_unavailable`; the pool reconnects by itself (`reconnectBackoff`), each attempt bounded
 * by `connectTimeoutMs`, so no restart is needed. Idle connections are kept (`idle_timeout` off):
 * a restart of Postgres closes them all, and postgres.js notices at once; `max_lifetime` keeps
 * postgres.js's default (30–60 min, random), which also recycles them.
 */
export function openDb(url: string, opts: OpenDbOptions = {}): Sql {
  return postgres(url, {
    max: opts.max ?? 20,
    connect_timeout: (opts.connectTimeoutMs ?? 5000) / 1000,
    backoff: reconnectBackoff,
    onnotice: () => {},
    types: {
      bigint: postgres.BigInt,
      ...(opts.jsonTextAsIs
        ? {
            json: { to: 114, from: [114], serialize: asJsonText, parse: JSON.parse },
            jsonb: { to: 3802, from: [3802], serialize: asJsonText, parse: JSON.parse },
          }
        : {}),
    },
    connection: {
      application_name: opts.applicationName ?? 'coord',
      lock_timeout: Math.max(1, Math.round(opts.lockTimeoutMs ?? 5000)),
    },
    transform: { undefined: null },
  });
}

/**
 * The hosts a postgres URL names (`postgres://user@h1:5432,h2:5432/db`: several for a failover
 * pair) and its `target_session_attrs`, read from the text: WHATWG `URL` refuses several hosts.
 */
export function describeDatabaseUrl(url: string): { hosts: string[]; targetSessionAttrs: string | undefined } {
  const authority = /^[a-z]+:\/\/(?:[^@/?]*@)?([^/?]*)/i.exec(url)?.[1] ?? '';
  const attrs = /[?&]target_session_attrs=([^&#]*)/.exec(url)?.[1];
  return { hosts: authority.split(',').filter(Boolean), targetSessionAttrs: attrs === undefined ? undefined : decodeURIComponent(attrs) };
}

/**
 * A warning for a URL naming several hosts without `target_session_attrs=primary`, or undefined:
 * with `read-write` (judged by `default_transaction_read_only`, off on a hot standby) or nothing,
 * connections can stay on a standby, where every write is refused (docs/operations.md, high availability).
 */
export function multiHostWarning(url: string): string | undefined {
  const { hosts, targetSessionAttrs } = describeDatabaseUrl(url);
  if (hosts.length < 2 || targetSessionAttrs === 'primary') return undefined;
  return (
    `DATABASE_URL names ${hosts.length} hosts with ${targetSessionAttrs ? `target_session_attrs=${targetSessionAttrs}` : 'no target_session_attrs'}: ` +
    'connections can land on a hot standby, where every write is refused; use target_session_attrs=primary (docs/operations.md, high availability)'
  );
}

/** A `json` parameter's text: a string as it is (already JSON), anything else serialised. */
const asJsonText = (x: unknown) => (typeof x === 'string' ? x : JSON.stringify(x));

/** The marker of each edit `patches/postgres+3.4.9.patch` makes (patches/README.md says why). */
const DRIVER_PATCH_MARKERS = [
  'porsager/postgres#1208 (nextWrite)',
  'porsager/postgres#1208 (closed)',
  'porsager/postgres#1208 (closed-pending)',
  'porsager/postgres#1223 (closed-error)',
  'porsager/postgres#1223 (fetch-types)',
  'porsager/postgres#1174 (closed-retries)',
  'porsager/postgres#1174 (backoff)',
];

/**
 * True when the installed postgres.js carries Coord's guards (applied by
 * `patches/postgres+3.4.9.patch`, applied by patch-package as the `postinstall` script). Without
 * them a Postgres restart while a transaction is open crashes the process (porsager/postgres#1208),
 * after a connection is ended a multi-host pool can stay on a hot standby (#1223), and with no
 * primary up its queries hang instead of failing (#1174); the server warns at start-up when one is missing.
 */
export function postgresDriverPatched(): boolean {
  // The CommonJS entry is <pkg>/cjs/src/index.js; the ESM build Coord runs is <pkg>/src.
  const pkg = path.resolve(path.dirname(createRequire(import.meta.url).resolve('postgres')), '../..');
  const file = path.join(pkg, 'src', 'connection.js');
  if (!existsSync(file)) return false;
  const text = readFileSync(file, 'utf8');
  return DRIVER_PATCH_MARKERS.every((marker) => text.includes(`coord patch: ${marker}`));
}
