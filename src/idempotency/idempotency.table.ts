import { customType, index, integer, jsonb, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';

const bytea = customType<{ data: Buffer }>({ dataType: () => 'bytea' });

/**
 * Idempotency keys (issue 19; IETF draft-ietf-httpapi-idempotency-key-header): one row per
 * (principal, `Idempotency-Key`) a state-changing POST was sent with. Written by the idempotency
 * plugin (src/idempotency/idempotency.plugin.ts): a pending row (`status` null) before the
 * handler runs, the answer (status, replayed headers, body bytes) once it has. A row whose
 * `expires_at` has passed (database clock) counts as absent and is purged by the sweep.
 */
export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    /** Who sent it: `user:<id>` or `session:<id>`; keys of different principals never meet. */
    principal: text('principal').notNull(),
    /** The `Idempotency-Key` header as sent: 1–255 printable ASCII characters. */
    key: text('key').notNull(),
    /** `METHOD /path` of the first request, for the 409 `idempotency_key_reused` message. */
    request: text('request').notNull(),
    /** sha256 (hex) of method, path with sorted query, and the canonical JSON body (sorted keys). */
    fingerprint: text('fingerprint').notNull(),
    /** The answer's HTTP status; null while the first request is still running (pending). */
    status: integer('status'),
    /** The answer's replayed headers (`content-type`, `etag`, `location`, …), lower-case names. */
    headers: jsonb('headers').$type<Record<string, string>>(),
    /** The answer's body, byte for byte. */
    body: bytea('body'),
    /** When the pending row was written (database time); also the row's owner token. */
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    /** `created_at` + `COORD_IDEMPOTENCY_TTL`: from then on the key is forgotten. */
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.principal, t.key] }), index('idempotency_keys_expires_at_idx').on(t.expiresAt)],
);
