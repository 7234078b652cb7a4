/**
 * Storing bearer tokens: one row per token in `tokens`, the secret kept only as its
 * sha256. Every place that mints a principal (an operator, a session, a scenario's members, a Task
 * Graph dispatch) issues its first token through `insertTokens`, in the transaction that creates
 * the principal.
 */
import type { Actor } from '../auth/actor.js';
import type { Db } from '../db/client.js';
import { noteTopics } from '../db/doorbell.js';
import { appendEvents, auditTopic } from '../events/events.repo.js';
import { TOKEN_REVOKED } from '../events/events.hub.js';
import { hashToken, newId, newToken } from '../lib/ids.js';

/** The name of the token a principal is created with (and of the tokens the 0015 upgrade carried over). */
export const FIRST_TOKEN_NAME = 'default';

export interface NewToken {
  /** Exactly one of `userId` and `sessionId`: the owner. */
  userId?: string;
  sessionId?: string;
  name?: string;
  /** The user or session id that asked for it. */
  createdBy: string;
  /** The secret; a fresh one when omitted. */
  secret?: string;
  /** Lifetime in ms from the database's `now()`; none when omitted. */
  expiresInMs?: number;
}

/**
 * Inserts tokens of principals of team `teamId` in one statement, each recorded in the audit as `token-created` by `actor`, and
 * returns their ids and secrets, in input order.
 */
export async function insertTokens(db: Db, teamId: string, tokens: readonly NewToken[], actor: Actor): Promise<{ id: string; secret: string }[]> {
  if (tokens.length === 0) return [];
  const out = tokens.map((t) => ({ id: newId('tk'), secret: t.secret ?? newToken() }));
  const rows = await db<{ id: string; expires_at: Date | null }[]>`
    insert into tokens (id, user_id, session_id, name, token_hash, created_by, expires_at)
    select u.id, u.user_id, u.session_id, u.name, u.hash, u.created_by,
           case when u.expires_ms is null then null else now() + make_interval(secs => u.expires_ms / 1000.0) end
      from unnest(${out.map((o) => o.id)}::text[], ${tokens.map((t) => t.userId ?? null)}::text[], ${tokens.map((t) => t.sessionId ?? null)}::text[],
                  ${tokens.map((t) => t.name ?? FIRST_TOKEN_NAME)}::text[], ${out.map((o) => hashToken(o.secret))}::text[],
                  ${tokens.map((t) => t.createdBy)}::text[], ${tokens.map((t) => (t.expiresInMs === undefined ? null : String(t.expiresInMs)))}::float8[])
           as u(id, user_id, session_id, name, hash, created_by, expires_ms)
    returning id, expires_at`;
  const expiry = new Map(rows.map((r) => [r.id, r.expires_at?.toISOString() ?? null]));
  await recordTokenEvents(
    db,
    teamId,
    actor,
    'token-created',
    tokens.map((t, i) => ({
      id: out[i].id,
      name: t.name ?? FIRST_TOKEN_NAME,
      principal: t.userId ? { kind: 'user' as const, id: t.userId } : { kind: 'session' as const, id: t.sessionId! },
      expiresAt: expiry.get(out[i].id) ?? null,
    })),
  );
  return out;
}

/** Issues the first token of one new principal (see `insertTokens`) and returns its secret. */
export async function insertFirstToken(db: Db, teamId: string, t: NewToken, actor: Actor): Promise<string> {
  const [r] = await insertTokens(db, teamId, [t], actor);
  return r.secret;
}

/** A token as the audit records it: never the secret. */
export interface TokenFact {
  id: string;
  name: string;
  principal: { kind: 'user' | 'session'; id: string };
  /** ISO 8601, or null: never. */
  expiresAt: string | null;
}

/** The audit's record of token changes made by `actor` to tokens of `teamId`'s principals, in `tx` (topic `audit:tokens`). */
export async function recordTokenEvents(
  tx: Db,
  teamId: string,
  actor: Actor,
  event: 'token-created' | 'token-rotated' | 'token-revoked',
  tokens: readonly TokenFact[],
): Promise<void> {
  await appendEvents(
    tx,
    teamId,
    tokens.map((t) => ({ topic: auditTopic('tokens'), event, subjectId: t.id, payload: { event, ...t } })),
    actor,
  );
}

/**
 * Rings `token-revoked:<id>` for each token after the transaction commits (run it under `withTx`):
 * every replica evicts the token from its principal cache and ends its event streams.
 */
export function noteTokensRevoked(tx: Db, tokenIds: readonly string[]): void {
  if (tokenIds.length)
    noteTopics(
      tx,
      tokenIds.map((id) => TOKEN_REVOKED + id),
    );
}
