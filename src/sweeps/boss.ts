/**
 * Runs the sweep as a pg-boss job every `[todo] sweep_interval`, once per tick across all replicas.
 *
 * pg-boss cron has one-minute granularity (cron jobs are singletons per minute), so a sub-minute
 * cadence cannot come from cron alone. Instead the queue uses the `stately` policy (at most one
 * job queued and one active, across every replica), and each sweep job, when it finishes, sends
 * the next one with `startAfter = sweep_interval`. A second replica's send while one is queued
 * returns null, so there is one chain, not one per replica. A `* * * * *` cron on the same queue
 * re-seeds the chain if it ever breaks (e.g. every replica was down). The gap between two sweeps
 * is `sweep_interval` plus up to one polling interval (0.5 s), which bounds how late an expired
 * lease is reopened: at most `sweep_interval + 0.5 s` plus the sweep's own run time.
 */
import PgBoss from 'pg-boss';
import type { Config } from '../config.js';
import { openDb, type Sql } from '../db/client.js';
import { isDatabaseUnavailable } from '../db/unavailable.js';
import { runSweep, type SweepResult } from './sweeps.js';

export const SWEEP_QUEUE = 'coord.sweep';

/**
 * How long a sweep job may stay active before pg-boss expires it, in seconds. When the database
 * dies while a sweep runs, pg-boss cannot record the job's end, and the job stays `active`; with
 * the `stately` policy no other sweep job can become active meanwhile, so the chain stalls until
 * the expiry (pg-boss's default: 15 minutes) plus one maintenance pass (30 s here). A sweep takes
 * milliseconds; one that really runs longer is expired and retried while it finishes, which is
 * harmless (two overlapping sweeps change each row once, sweeps.ts).
 */
const SWEEP_EXPIRE_S = 60;

export interface Sweeper {
  stop(): Promise<void>;
  /** Resolves after the next completed sweep (tests and `/v1/admin/sweep`). */
  nextSweep(): Promise<SweepResult>;
}

/**
 * Runs `fn` while holding a session advisory lock on a connection reserved from `sql`, so replicas
 * starting together run pg-boss's start-up one at a time. pg-boss 10 serializes
 * its own schema creation (`contractor.create` under `pg_advisory_xact_lock`, losers' "already
 * exists" ignored) but not `create_queue()`: that function inserts the queue row `on conflict do
 * nothing` and then creates, constrains and attaches the queue's partition. Two replicas creating
 * the same queue at once deadlock: the second's insert holds the queue table's ROW EXCLUSIVE lock
 * while it waits for the first's row, and the first's foreign key needs SHARE ROW EXCLUSIVE on that
 * table (3 replicas starting at once on a fresh database: in 4 rounds of 8 one of them failed with
 * `deadlock detected`).
 * `boss.start()` creates a queue too (the cron `__pgboss__send-it`), so it runs under the lock as
 * well. pg-boss uses its own pool, so a transaction-scoped lock cannot cover it: this is a session
 * lock, released at the end (or when the connection drops).
 */
async function withStartLock<T>(sql: Sql, fn: () => Promise<T>): Promise<T> {
  const conn = await sql.reserve();
  try {
    await conn`select pg_advisory_lock(hashtextextended('coord:pgboss-start', 0))`;
    try {
      return await fn();
    } finally {
      await conn`select pg_advisory_unlock(hashtextextended('coord:pgboss-start', 0))`.catch(() => {});
    }
  } finally {
    conn.release();
  }
}

/**
 * pg-boss's database: a postgres.js pool of its own (4 connections, `coord-boss`) behind pg-boss's
 * `db` adapter, instead of pg-boss's own driver (pg). So pg-boss connects exactly as Coord does:
 * the same URL forms, including several hosts with `target_session_attrs=primary` (pg cannot
 * parse that URL), which after a failover finds the promoted primary by itself; the same connect
 * timeout and reconnect backoff (src/db/client.ts). Parameterless texts (pg-boss's schema
 * migrations, several statements in one `BEGIN … COMMIT`) go by the simple protocol on a reserved
 * connection, as pg sends them.
 */
export function bossDb(databaseUrl: string, config: Config): { db: { executeSql(text: string, values?: unknown[]): Promise<{ rows: unknown[] }> }; sql: Sql } {
  const sql = openDb(databaseUrl, {
    max: 4,
    applicationName: 'coord-boss',
    connectTimeoutMs: config.dbConnectTimeoutMs,
    lockTimeoutMs: config.todo.busyTimeoutMs,
    jsonTextAsIs: true,
  });
  return {
    sql,
    db: {
      async executeSql(text, values) {
        if (values?.length) return { rows: await sql.unsafe(text, values as never[]) };
        // A parameterless text may be a whole `BEGIN … COMMIT`, which postgres.js runs only on a
        // connection of its own.
        const conn = await sql.reserve();
        try {
          const rows = await conn.unsafe(text).simple();
          return { rows: Array.isArray(rows) ? rows : [] };
        } finally {
          conn.release();
        }
      },
    },
  };
}

/**
 * Starts pg-boss (schema `pgboss`, on its own pool: bossDb) and the sweep chain. Safe when several
 * replicas start at once. Rejects when the database refuses pg-boss's start-up (the server then
 * exits with the message).
 */
export async function startSweeper(
  databaseUrl: string,
  sql: Sql,
  config: Config,
  log: { info: (o: object, m: string) => void; warn: (o: object, m: string) => void; error: (o: object, m: string) => void },
): Promise<Sweeper> {
  // maintenanceIntervalSeconds: how often pg-boss expires jobs that outlived SWEEP_EXPIRE_S (below).
  const own = bossDb(databaseUrl, config);
  const options = { db: own.db, schema: 'pgboss', maintenanceIntervalSeconds: 30 };
  const boss = new PgBoss(options as PgBoss.ConstructorOptions);
  let stopping = false;
  // While stopping, the database going away under pg-boss's pool (57P01) is expected, not an error.
  // A terminal's Ctrl-C also reaches the embedded Postgres (same process group), which may end
  // pg-boss's connections before Coord has stopped it: a warning, not an error dump.
  boss.on('error', (err) => {
    const code = (err as { code?: string }).code;
    if (stopping && code === '57P01') return;
    if (code === '57P01') return log.warn({ code, message: err.message }, 'pg-boss connection terminated by the database');
    // During a database outage every poll fails: one line each, without the stack.
    if (isDatabaseUnavailable(err)) return log.warn({ code: code ?? err.message }, 'pg-boss: database unavailable; it retries at its next poll');
    log.error({ err }, 'pg-boss error');
  });
  await withStartLock(sql, async () => {
    await boss.start();
    await boss.createQueue(SWEEP_QUEUE, { name: SWEEP_QUEUE, policy: 'stately', expireInSeconds: SWEEP_EXPIRE_S });
    // Queues created before the expiry was set keep pg-boss's 15 minutes otherwise.
    await boss.updateQueue(SWEEP_QUEUE, { name: SWEEP_QUEUE, policy: 'stately', expireInSeconds: SWEEP_EXPIRE_S });
  });
  const waiters: ((r: SweepResult) => void)[] = [];
  const everyS = config.todo.sweepIntervalMs / 1000;
  await boss.work(SWEEP_QUEUE, { pollingIntervalSeconds: 0.5, batchSize: 1 }, async () => {
    try {
      // A failed step is recorded in sweep_runs (/readyz reports it); the log says why.
      const r = await runSweep(sql, config).catch((err) => {
        log.error({ err }, 'sweep failed');
        throw err;
      });
      if (r.sessionsStopped || r.leaseReopened || r.retained || r.eventsDeleted) {
        log.info({ sessionsStopped: r.sessionsStopped, leaseReopened: r.leaseReopened, retained: r.retained, eventsDeleted: r.eventsDeleted }, 'sweep');
      }
      for (const w of waiters.splice(0)) w(r);
    } finally {
      await boss.send(SWEEP_QUEUE, {}, { startAfter: everyS }).catch(() => null);
    }
  });
  await boss.schedule(SWEEP_QUEUE, '* * * * *');
  await boss.send(SWEEP_QUEUE, {});
  return {
    stop: async () => {
      stopping = true;
      await boss.stop({ graceful: true, timeout: 5000, wait: true });
      await own.sql.end({ timeout: 5 }).catch(() => {});
    },
    nextSweep: () => new Promise((resolve) => waiters.push(resolve)),
  };
}
