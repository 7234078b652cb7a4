/**
 * The passing of time, written into the database instead of slept through: each helper
 * moves one row's clock column `ms` into the past, as if that much time had gone by for it alone,
 * so lease, liveness and retention tests run the sweep right after and hold at any machine load.
 * The sweeps compare these columns with the database's `now()`, so nothing else needs to move.
 */
import type { Sql } from '../../src/db/client.js';

const back = (ms: number) => `${ms / 1000} seconds`;

/** An item's last progress (claim, heartbeat, edit by its owner): its claim lease runs out `ms` sooner. */
export async function ageClaim(sql: Sql, itemId: string, ms: number): Promise<void> {
  await sql`update todos set progress_at = progress_at - ${back(ms)}::interval where id = ${itemId} and progress_at is not null`;
}

/** An item's last change: done items become due for retention `ms` sooner. */
export async function ageItem(sql: Sql, itemId: string, ms: number): Promise<void> {
  await sql`update todos set updated_at = updated_at - ${back(ms)}::interval where id = ${itemId}`;
}

/** A session's last call: it reads as silent for `ms` longer (liveness, auto-stop). */
export async function ageSession(sql: Sql, sessionId: string, ms: number): Promise<void> {
  await sql`update sessions set last_seen_at = last_seen_at - ${back(ms)}::interval where id = ${sessionId}`;
}
