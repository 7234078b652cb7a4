/**
 * The audit: who did what, read from the event outbox. Every change Coord stores writes
 * its events in the change's own transaction (src/events/events.repo.ts), and every event records
 * its actor (src/auth/actor.ts, migrations/0016), so the events of an object are its history of
 * who changed it: items, graphs and subtasks, metagit graphs and nodes, scenarios (topics
 * `todo:<scope>`), and tokens, sessions and Agents (topics `audit:tokens`, `audit:sessions`,
 * `audit:agents`, which no stream serves).
 *
 * Pages run newest first in delivery order, `(tx, id)` descending, over finished transactions
 * only (`tx` below the snapshot's xmin), so paging back never skips a row that commits later: such
 * a row sorts after the first page's start. Retention is the event retention
 * (COORD_EVENT_RETENTION); events written before migrations/0016 have no actor (`actor: null`).
 */
import type { Actor } from '../auth/actor.js';
import type { Principal } from '../auth/principal.js';
import type { Sql } from '../db/client.js';
import { decodeCursor, encodeCursor } from '../http/cursor.js';
import { fail } from '../http/errors.js';
import { EVENT_COLUMNS, HORIZON, toEventRow, type StoredEvent } from '../events/events.repo.js';
import { canonicalScope } from '../scopes/scopes.js';
import type { z } from 'zod';
import type { AuditQuerySchema } from './audit.schemas.js';

/**
 * What `GET /v1/audit` filters by; every filter given must hold (AND): the output of
 * `AuditQuerySchema` (audit.schemas.ts; `since`/`until` arrive as UTC ISO 8601, `limit` defaulted).
 * A `topic` scope is resolved as the event routes do (`todo:scenario:<name>` reads
 * `todo:scenario:<id>`, `todo:session:<child>` its root's topic).
 */
export type AuditQuery = z.output<typeof AuditQuerySchema>;

export interface AuditEntry {
  /** The event's sequence number (as `seq` in the event log). */
  seq: number;
  /** Database time of the change, ISO 8601. */
  at: string;
  topic: string;
  event: string;
  subjectId: string | null;
  /** Who made the change; null for events written before the audit existed. */
  actor: Actor | null;
  /** The event payload. */
  data: Record<string, unknown>;
}

/** A cursor part: a non-negative int8 in canonical decimal (no sign, no leading zero). */
const INT8 = /^(0|[1-9]\d{0,18})$/;
const INT8_MAX = 9223372036854775807n;

/**
 * One page of the audit of the caller's team, newest first, with `nextCursor` (null on the last page). Operators only:
 * a session gets 403 `forbidden`. Errors: 400 `invalid_cursor`.
 */
export async function listAudit(sql: Sql, p: Principal, q: AuditQuery): Promise<{ entries: AuditEntry[]; nextCursor: string | null }> {
  if (p.kind !== 'user') fail('forbidden', 'the audit is for operators; a session reads its scope’s events with GET /v1/events/log');
  const after = q.cursor === undefined ? undefined : (decodeCursor(q.cursor, [INT8, INT8]) as [string, string]);
  if (after?.some((part) => BigInt(part) > INT8_MAX)) fail('invalid_cursor', 'cursor is not one this server issued; start again without it');
  const topic = q.topic?.startsWith('todo:') ? `todo:${(await canonicalScope(sql, p.teamId, q.topic.slice(5))) ?? q.topic.slice(5)}` : q.topic;
  const rows = await sql<StoredEvent[]>`
    select ${sql.unsafe(EVENT_COLUMNS)}
      from events e
     where e.team_id = ${p.teamId} and e.tx < ${sql.unsafe(HORIZON)}
       ${q.actorKind !== undefined ? sql`and e.actor_kind = ${q.actorKind}` : sql``}
       ${q.actorId !== undefined ? sql`and e.actor_id = ${q.actorId}` : sql``}
       ${q.actorToken !== undefined ? sql`and e.actor_token = ${q.actorToken}` : sql``}
       ${q.subjectId !== undefined ? sql`and e.subject_id = ${q.subjectId}` : sql``}
       ${topic !== undefined ? sql`and e.topic = ${topic}` : sql``}
       ${q.since !== undefined ? sql`and e.created_at >= ${q.since}::timestamptz` : sql``}
       ${q.until !== undefined ? sql`and e.created_at < ${q.until}::timestamptz` : sql``}
       ${after ? sql`and (e.tx, e.id) < (${after[0]}::xid8, ${after[1]}::bigint)` : sql``}
     order by e.tx desc, e.id desc
     limit ${q.limit + 1}`;
  const page = rows.slice(0, q.limit);
  const last = page[page.length - 1];
  return {
    entries: page.map(toEntry),
    nextCursor: rows.length > q.limit && last ? encodeCursor([last.tx, String(last.id)]) : null,
  };
}

function toEntry(r: StoredEvent): AuditEntry {
  const e = toEventRow(r);
  return { seq: e.id, at: e.at, topic: e.topic, event: e.event, subjectId: e.subjectId, actor: e.actor, data: e.payload };
}
