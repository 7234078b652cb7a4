/**
 * Whether an error means the database is not there (unreachable, going away, read-only), as
 * opposed to a query that was wrong: the HTTP error handler answers those 503
 * `database_unavailable` with Retry-After, the sweeps and the event hub wait them out, and the
 * start-up explains them.
 *
 * What a query fails with when the database is not there: SQLSTATEs of a server going away or not accepting connections
 * yet (57P01 admin shutdown, 57P02 crash shutdown, 57P03 starting up or shutting down, and all of
 * class 08, connection exception: pgbouncer answers 08P01 when it cannot reach the server),
 * a write reaching a read-only server (25006: a standby, or a primary being demoted: during a
 * failover a connection can land there before the new primary is found; `DATABASE_URL` with
 * `target_session_attrs=primary` then moves to the primary on the next connection),
 * postgres.js's own connection codes, and the socket errors Node reports for the connection.
 */
const DB_UNAVAILABLE = new Set([
  '25006',
  '57P01',
  '57P02',
  '57P03',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * True when `err` says the database is unreachable (see `DB_UNAVAILABLE`), not that a query was
 * wrong. Errors without a code are matched by message: pg (pg-boss's driver) says "Connection
 * terminated unexpectedly" / "Connection terminated due to connection timeout".
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return DB_UNAVAILABLE.has(code) || /^08[0-9A-Z]{3}$/.test(code);
  return /ECONNREFUSED|ECONNRESET|EPIPE|CONNECTION_CLOSED|CONNECTION_ENDED|CONNECTION_DESTROYED|CONNECT_TIMEOUT|Connection terminated/.test(
    String((err as Error | null)?.message ?? ''),
  );
}
