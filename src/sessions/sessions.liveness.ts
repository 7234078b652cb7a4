/**
 * Session liveness: when a session was last seen, the explicit heartbeat, and the
 * sweep step that stops a session silent for longer than its heartbeat interval.
 *
 * `last_seen_at` moves on every authenticated call without costing the call a database round
 * trip: the auth hook notes the session id here, and each replica writes the ids it saw in one
 * statement at most once a second (and once more when it closes). So `lastSeenAt` is accurate to
 * about a second (plus the flush's own run time), on the database clock. That is why a heartbeat
 * interval is at least {@link MIN_HEARTBEAT_INTERVAL_MS}: the flush delay can never make a calling
 * session look silent.
 */
import { STOPPED_OR_UNKNOWN, unauthorized } from '../auth/auth.plugin.js';
import type { Principal } from '../auth/principal.js';
import type { Db, Sql } from '../db/client.js';
import { fail } from '../http/errors.js';

/** Shortest heartbeat interval a session may ask for, in ms (5 s: well above the ~1 s flush). */
export const MIN_HEARTBEAT_INTERVAL_MS = 5000;
/** Longest heartbeat interval, in ms (24 h). Also a CHECK constraint (migration 0012). */
export const MAX_HEARTBEAT_INTERVAL_MS = 86_400_000;
/** How often a replica writes the session ids it saw, at most, in ms. */
export const LAST_SEEN_FLUSH_MS = 1000;

/**
 * A session is alive when it is active and, if it has a heartbeat interval, was seen within it
 * (database clock). A session with an interval that has fallen silent reads `alive: false` while
 * still `active` until the next sweep stops it. SQL over the `sessions` row aliased `s`.
 */
export const ALIVE_SQL = `(s.status = 'active' and (s.heartbeat_interval_ms is null or s.last_seen_at + s.heartbeat_interval_ms * interval '1 millisecond' >= now()))`;

/**
 * Per replica: the session ids seen since the last flush, written as `last_seen_at = now()` in
 * one statement at most every {@link LAST_SEEN_FLUSH_MS}. Rows are locked in id order (as every
 * writer of session rows does, see stopSessionTx), so a flush never deadlocks with a stop or a
 * claim; a failed flush (database down) keeps its ids for the next one.
 */
export class LastSeenTracker {
  private pending = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private lastFlushAt = -Infinity;
  private closed = false;

  constructor(
    private readonly sql: Sql,
    private readonly intervalMs = LAST_SEEN_FLUSH_MS,
    private readonly onError: (err: unknown) => void = () => {},
  ) {}

  /** Notes an authenticated call of session `id` (no I/O). */
  note(id: string): void {
    if (this.closed) return;
    this.pending.add(id);
    this.schedule();
  }

  private schedule(): void {
    if (this.timer || this.flushing || this.pending.size === 0) return;
    const wait = Math.max(0, this.lastFlushAt + this.intervalMs - performance.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, wait);
    this.timer.unref();
  }

  /** Writes the pending ids now (one statement). Resolves when written or failed (never rejects). */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.pending.size === 0) return;
    const ids = [...this.pending].sort();
    this.pending.clear();
    this.lastFlushAt = performance.now();
    this.flushing = (async () => {
      try {
        await this.sql`
          update sessions s set last_seen_at = now()
            from (select id from sessions where id = any(${ids}::text[]) and status = 'active' order by id for no key update) x
           where s.id = x.id`;
      } catch (err) {
        for (const id of ids) this.pending.add(id);
        this.onError(err);
      }
    })();
    try {
      await this.flushing;
    } finally {
      this.flushing = undefined;
      if (!this.closed) this.schedule();
    }
  }

  /** Stops the timer and writes what is pending (shutdown). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.flush();
  }
}

export interface HeartbeatResult {
  sessionId: string;
  /** Now, on the database clock. */
  lastSeenAt: string;
  heartbeatIntervalMs?: number;
  /** lastSeenAt + heartbeatIntervalMs: silent past this, the next sweep stops the session. */
  autoStopAfter?: string;
}

/**
 * `POST /v1/sessions/me/heartbeat`: marks the calling session seen now, at once (one statement;
 * no event). Sessions only: 403 `forbidden` for an operator. 401 `unauthorized` when the session
 * stopped while the call was in flight.
 */
export async function heartbeatSession(db: Db, p: Principal): Promise<HeartbeatResult> {
  if (p.kind !== 'session')
    fail('forbidden', 'only a session heartbeats; this is an operator token (use a session token, or read sessions with GET /v1/sessions)');
  const [row] = await db<{ id: string; last_seen_at: Date; heartbeat_interval_ms: number | null }[]>`
    update sessions set last_seen_at = now() where id = ${p.id} and status = 'active'
    returning id, last_seen_at, heartbeat_interval_ms`;
  if (!row) throw unauthorized(STOPPED_OR_UNKNOWN);
  const out: HeartbeatResult = { sessionId: row.id, lastSeenAt: row.last_seen_at.toISOString() };
  if (row.heartbeat_interval_ms !== null) {
    out.heartbeatIntervalMs = row.heartbeat_interval_ms;
    out.autoStopAfter = new Date(row.last_seen_at.getTime() + row.heartbeat_interval_ms).toISOString();
  }
  return out;
}

/**
 * The active sessions silent for longer than their heartbeat interval (`now() - last_seen_at >
 * heartbeat_interval_ms`, database clock), at most `limit`, in id order.
 */
export async function silentSessions(db: Db, limit: number): Promise<string[]> {
  const rows = await db<{ id: string }[]>`
    select id from sessions s
     where s.status = 'active' and s.heartbeat_interval_ms is not null
       and s.last_seen_at + s.heartbeat_interval_ms * interval '1 millisecond' < now()
     order by id limit ${limit}`;
  return rows.map((r) => r.id);
}

/** The same test on one locked row (the sweep re-checks under the row lock before stopping). */
export const SILENT_SQL = `(s.status = 'active' and s.heartbeat_interval_ms is not null and s.last_seen_at + s.heartbeat_interval_ms * interval '1 millisecond' < now())`;
