/**
 * The `idempotency_keys` statements (table: src/db/schema/idempotency.ts). Every time comparison uses the
 * database clock (`now()`), so replicas with skewed clocks agree on what has expired. Rows are
 * found by the key's hash and hold the answer sealed (idempotency.seal.ts); nothing here sees the
 * raw key or the answer in the clear.
 */
import type { Sql } from '../db/client.js';

/** A finished answer as stored: its status in the clear, headers and body sealed (`sealAnswer`). */
export interface StoredAnswer {
  status: number;
  sealed: Buffer;
}

/** The outcome of {@link beginKey}. */
export type Begin =
  /** No live row had the key: a pending row is now this request's (`createdAt`, as exact text — a Date would drop the microseconds — is its owner token). */
  | { state: 'owned'; createdAt: string }
  /** A live row has the key: its fingerprint, its first request, and its answer when finished. */
  | { state: 'existing'; fingerprint: string; request: string; answer: StoredAnswer | null; expiresAt: Date };

/** The key of a row: who sent it and the hash of the header's value (`keyHash`). */
export interface KeyRef {
  principal: string;
  keyHash: string;
}

/**
 * Claims `ref` for a request in one statement: inserts a pending row (or takes over an expired
 * one), else returns the live row. Retries twice if the live row vanished between the insert's
 * conflict and the read (its owner released it); after that, the caller answers "in progress".
 */
export async function beginKey(sql: Sql, ref: KeyRef, request: string, fingerprint: string, ttlMs: number): Promise<Begin | null> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const rows = await sql<
      {
        state: 'owned' | 'existing';
        created_at: string;
        fingerprint: string | null;
        request: string | null;
        status: number | null;
        answer: Buffer | null;
        expires_at: Date | null;
      }[]
    >`
      with ins as (
        insert into idempotency_keys as k (principal, key_hash, request, fingerprint, expires_at)
        values (${ref.principal}, ${ref.keyHash}, ${request}, ${fingerprint}, now() + make_interval(secs => ${ttlMs}::float8 / 1000))
        on conflict (principal, key_hash) do update
          set request = excluded.request, fingerprint = excluded.fingerprint, status = null, answer = null,
              created_at = now(), expires_at = excluded.expires_at
          where k.expires_at <= now()
        returning k.created_at::text as created_at)
      select 'owned' as state, created_at, null::text as fingerprint, null::text as request, null::int as status, null::bytea as answer, null::timestamptz as expires_at from ins
      union all
      select 'existing', k.created_at::text, k.fingerprint, k.request, k.status, k.answer, k.expires_at from idempotency_keys k
       where k.principal = ${ref.principal} and k.key_hash = ${ref.keyHash} and k.expires_at > now() and not exists (select 1 from ins)`;
    const r = rows[0];
    if (!r) continue;
    if (r.state === 'owned') return { state: 'owned', createdAt: r.created_at };
    return {
      state: 'existing',
      fingerprint: r.fingerprint!,
      request: r.request!,
      expiresAt: r.expires_at!,
      answer: r.status === null ? null : { status: r.status, sealed: r.answer ?? Buffer.alloc(0) },
    };
  }
  return null;
}

/** Stores the answer on the pending row this request owns (a no-op if it no longer owns it). */
export async function finishKey(sql: Sql, ref: KeyRef, createdAt: string, answer: StoredAnswer): Promise<void> {
  await sql`
    update idempotency_keys set status = ${answer.status}, answer = ${answer.sealed}
     where principal = ${ref.principal} and key_hash = ${ref.keyHash} and created_at = ${createdAt}::text::timestamptz and status is null`;
}

/** Deletes the pending row this request owns, so a retry runs afresh (a no-op if it no longer owns it). */
export async function releaseKey(sql: Sql, ref: KeyRef, createdAt: string): Promise<void> {
  await sql`delete from idempotency_keys where principal = ${ref.principal} and key_hash = ${ref.keyHash} and created_at = ${createdAt}::text::timestamptz and status is null`;
}

const PURGE_BATCH = 1000;

/** The sweep step `idempotency-keys`: deletes expired rows in batches of 1,000; returns how many. */
export async function purgeExpiredKeys(sql: Sql): Promise<number> {
  let total = 0;
  for (;;) {
    const rows = await sql`
      delete from idempotency_keys where ctid = any(array(
        select ctid from idempotency_keys where expires_at <= now() limit ${PURGE_BATCH} for update skip locked))
      returning 1`;
    total += rows.length;
    if (rows.length < PURGE_BATCH) return total;
  }
}
