import { sql } from 'drizzle-orm';
import { check, customType, index, integer, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';

const bytea = customType<{ data: Buffer }>({ dataType: () => 'bytea' });

/**
 * Idempotency keys (IETF draft-ietf-httpapi-idempotency-key-header): one row per
 * (principal, `Idempotency-Key`) a state-changing POST was sent with. Written by the idempotency
 * plugin (src/idempotency/idempotency.plugin.ts): a pending row (`status` null) before the
 * handler runs, the answer (status, and the replayed headers and body sealed) once it has. The
 * key itself is never stored, only its hash; the answer is encrypted under a key derived from it
 * (idempotency.seal.ts), so a dump of this table reveals neither. A row whose `expires_at` has
 * passed (database clock) counts as absent and is purged by the sweep.
 */
export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    /** Who sent it: `user:<id>` or `session:<id>`; keys of different principals never meet. */
    principal: text('principal').notNull(),
    /** sha256 (hex) of a fixed label, the principal and the `Idempotency-Key` (`keyHash`); never the key itself. */
    keyHash: text('key_hash').notNull(),
    /** `METHOD /path` of the first request, for the 409 `idempotency_key_reused` message. */
    request: text('request').notNull(),
    /** sha256 (hex) of method, path with sorted query, and the canonical JSON body (sorted keys). */
    fingerprint: text('fingerprint').notNull(),
    /** The answer's HTTP status; null while the first request is still running (pending). */
    status: integer('status'),
    /**
     * The answer's replayed headers (`content-type`, `etag`, `location`, …) and body, sealed with
     * AES-256-GCM under HKDF-SHA256 of the key (`sealAnswer`): iv (12 bytes) ‖ auth tag (16) ‖
     * ciphertext. Null exactly while `status` is.
     */
    answer: bytea('answer'),
    /** When the pending row was written (database time); also the row's owner token. */
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    /** `created_at` + `COORD_IDEMPOTENCY_TTL`: from then on the key is forgotten. */
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.principal, t.keyHash] }),
    index('idempotency_keys_expires_at_idx').on(t.expiresAt),
    check('idempotency_keys_answer_check', sql`(${t.status} is null) = (${t.answer} is null)`),
  ],
);
