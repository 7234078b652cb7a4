/**
 * The event outbox (docs/architecture.md §D4). Events are appended inside the transaction of the change
 * they describe; after the commit the writer rings `NOTIFY coord_events '<topic>'` (doorbell.ts).
 *
 * Ordering and resume. Ids come from a sequence at insert time, so transactions commit out of id
 * order and a reader that trusts `id > cursor` can skip an event forever. Each row also stores
 * its transaction id (`tx`, xid8). A reader delivers only rows below a horizon, in `(tx, id)`
 * order, and the horizon is below every transaction that may still commit an event: then the set
 * below it can never grow again, every later event sorts after everything already delivered, and
 * resume is gap-free and duplicate-free without serialising writers. The cursor is the last
 * delivered event's id (looked up to its `(tx, id)` position).
 *
 * The horizon ({@link HORIZON}) waits only for event writers, not for every transaction of the
 * cluster (a write transaction of another database, or one of this database that
 * touches no event, used to hold every reader back until it ended). An event writer is a
 * transaction that holds a lock on this database's `events` table, and it takes that lock before
 * its transaction id exists: a statement that inserts into `events` locks the table before it
 * writes anything, a transaction of `withTx` locks it first (`declareEventWriter`, src/db/event-writer.ts), and the
 * claim functions lock it first (migrations/0019). So a transaction that already has an id and
 * holds no such lock can never write an event under that id, and readers pass over it.
 */
import type { EmitEvents } from '../config.js';
import type { Db } from '../db/client.js';
import type { Actor } from '../auth/actor.js';
import { noteTopics } from '../db/doorbell.js';
import { assertEventWriter } from '../db/event-writer.js';

export interface EventInput {
  topic: string;
  event: string;
  subjectId?: string | null;
  payload: Record<string, unknown>;
}

export interface EventRow {
  /** The event's sequence number: the SSE `id:` and the cursor. */
  id: number;
  topic: string;
  event: string;
  subjectId: string | null;
  payload: Record<string, unknown>;
  /** Database time of the writing statement, ISO 8601. */
  at: string;
  /** Who made the change (the audit); null on events written before migrations/0016. */
  actor: Actor | null;
  /** Internal ordering key (the writing transaction); not exposed. */
  tx: string;
}

/** An `events` row as read by {@link EVENT_COLUMNS}. */
export type StoredEvent = {
  id: number;
  topic: string;
  event: string;
  subject_id: string | null;
  payload: Record<string, unknown>;
  created_at: Date;
  tx: string;
  actor_kind: Actor['kind'] | null;
  actor_id: string | null;
  actor_token: string | null;
};

/** The columns {@link toEventRow} reads, over alias `e`. */
export const EVENT_COLUMNS = 'e.id, e.topic, e.event, e.subject_id, e.payload, e.created_at, e.tx::text as tx, e.actor_kind, e.actor_id, e.actor_token';

/** Whether a scope's changes are written as events under `[todo] emit_events` (seed 000 "Events"). */
export function emitsFor(scope: string, mode: EmitEvents): boolean {
  if (mode === 'all') return true;
  if (mode === 'off') return false;
  return scope.startsWith('scenario:');
}

/** The topic of a scope's events: `todo:<scope>` (seed 000). */
export const topicOf = (scope: string) => `todo:${scope}`;

/**
 * The topics of changes that belong to no scope, kept for the audit only (no stream
 * serves them): `audit:tokens` (token-created, token-rotated, token-revoked), `audit:sessions`
 * (session-created, session-stopped), `audit:agents` (agent-registered) and `audit:teams`
 * (team-created, operator-created).
 */
export const auditTopic = (kind: 'tokens' | 'sessions' | 'agents' | 'teams' | 'intents') => `audit:${kind}`;

/**
 * The doorbell's and the hub's name for one team's topic: a topic names a stream within
 * a team, so two teams' `todo:graph:task-release` are two streams. Team ids never hold a space.
 */
export const streamKey = (teamId: string, topic: string) => `${teamId} ${topic}`;

/** The team and topic of a {@link streamKey}. */
export function parseStreamKey(key: string): { teamId: string; topic: string } | undefined {
  const i = key.indexOf(' ');
  return i > 0 ? { teamId: key.slice(0, i), topic: key.slice(i + 1) } : undefined;
}

/**
 * Appends events to `teamId`'s topics in the caller's transaction, in array order (one round trip), each recording
 * `actor` as the one who made the change (the audit).
 */
export async function appendEvents(tx: Db, teamId: string, events: EventInput[], actor: Actor): Promise<void> {
  if (events.length === 0) return;
  assertEventWriter(tx);
  noteTopics(tx, new Set(events.map((e) => streamKey(teamId, e.topic))));
  await tx`
    insert into events (team_id, topic, event, subject_id, payload, actor_kind, actor_id, actor_token)
    select ${teamId}, u.topic, u.event, u.subject_id, u.payload::jsonb, ${actor.kind}, ${actor.id}, ${actor.token}::text from unnest(
      ${events.map((e) => e.topic)}::text[],
      ${events.map((e) => e.event)}::text[],
      ${events.map((e) => e.subjectId ?? null)}::text[],
      ${events.map((e) => JSON.stringify(e.payload))}::text[]) as u(topic, event, subject_id, payload)`;
}

/**
 * Appends events that may belong to several teams (a sweep's pass, a stop's reopened items), each
 * to its own team's topic, grouped by team in first-seen order (one round trip per team).
 */
export async function appendTeamEvents(tx: Db, events: (EventInput & { teamId: string })[], actor: Actor): Promise<void> {
  const byTeam = new Map<string, EventInput[]>();
  for (const { teamId, ...e } of events) {
    let list = byTeam.get(teamId);
    if (!list) byTeam.set(teamId, (list = []));
    list.push(e);
  }
  for (const [teamId, list] of byTeam) await appendEvents(tx, teamId, list, actor);
}

/**
 * The horizon of the current statement, as a scalar SQL expression (xid8): every event that can
 * still become visible has `tx >= horizon`. It is the oldest transaction of the statement's
 * snapshot that was still running when the snapshot was taken, passing over bystanders: those
 * that, after the snapshot, hold no lock on this database's `events` table (so never write an
 * event under the id they hold; see the file comment) and are still in progress. With none left,
 * the snapshot's `xmax`. `pg_locks` is read once, so both questions are asked of one reading; the
 * reading takes the fast-path locks (where an `events` lock usually is) before the main table
 * (where transaction ids are), so a writer that committed in between would look like a
 * bystander: the final `pg_xact_status`, evaluated on rows of that reading and so after it, sees
 * it has ended. A transaction of the snapshot that ended before the reading still counts too: it
 * may have committed events this snapshot cannot see.
 */
export const HORIZON = `(
  with locks as materialized (
         select virtualtransaction as vxid, locktype, database, relation, transactionid, mode, granted from pg_locks),
       unregistered as materialized (
         select x.x from pg_snapshot_xip(pg_current_snapshot()) x(x)
           join locks l on l.locktype = 'transactionid' and l.mode = 'ExclusiveLock' and l.granted and l.transactionid = x.x::xid
          where not exists (select 1 from locks w
                             where w.vxid = l.vxid and w.locktype = 'relation' and w.relation = 'events'::regclass
                               and w.database = (select oid from pg_database where datname = current_database()))),
       bystanders as materialized (
         select u.x from unregistered u where pg_xact_status(u.x) = 'in progress')
  select coalesce(min(x.x), pg_snapshot_xmax(pg_current_snapshot()))
    from pg_snapshot_xip(pg_current_snapshot()) x(x)
   where x.x not in (select b.x from bystanders b))`;

/** A reader's position: the `(tx, id)` of the last delivered event. */
export interface Cursor {
  tx: string;
  id: number;
}

/** The position before everything retained. */
export const START: Cursor = { tx: '0', id: 0 };

/** An event as Coord hands it on. */
export function toEventRow(r: StoredEvent): EventRow {
  const actor = r.actor_kind && r.actor_id ? { kind: r.actor_kind, id: r.actor_id, token: r.actor_token } : null;
  return {
    id: Number(r.id),
    topic: r.topic,
    event: r.event,
    subjectId: r.subject_id,
    payload: r.payload,
    at: r.created_at.toISOString(),
    actor,
    tx: String(r.tx),
  };
}

/**
 * Events of `topic` after `cursor` whose transactions have all finished, in delivery order; with
 * `subjectId`, only those about that object (the `events_subject_tx_id_idx` index).
 * `held` is true when newer rows of the topic are visible but still behind a running
 * transaction (the caller should look again shortly).
 */
export async function readAfter(
  db: Db,
  teamId: string,
  topic: string,
  cursor: Cursor,
  limit: number,
  subjectId?: string,
): Promise<{ events: EventRow[]; horizon: string; held: boolean }> {
  const rows = await db<(StoredEvent & { horizon: string })[]>`
    with h as (select ${db.unsafe(HORIZON)} as x)
    select ${db.unsafe(EVENT_COLUMNS)}, h.x::text as horizon
      from events e, h
     where e.team_id = ${teamId} and e.topic = ${topic}
       ${subjectId !== undefined ? db`and e.subject_id = ${subjectId}` : db``}
       and (e.tx, e.id) > (${cursor.tx}::xid8, ${cursor.id}::bigint)
       and e.tx < h.x
     order by e.tx, e.id
     limit ${limit}`;
  if (rows.length > 0) {
    return { events: rows.map(toEventRow), horizon: rows[0].horizon, held: false };
  }
  const [probe] = await db<{ horizon: string; held: boolean }[]>`
    with h as (select ${db.unsafe(HORIZON)} as x)
    select h.x::text as horizon,
           exists (select 1 from events e where e.team_id = ${teamId} and e.topic = ${topic} and (e.tx, e.id) > (${cursor.tx}::xid8, ${cursor.id}::bigint)) as held
      from h`;
  return { events: [], horizon: probe.horizon, held: probe.held };
}

/**
 * Turns a client's resume id (SSE `Last-Event-ID` or `after=`) into a cursor.
 * `0` means "from the oldest retained event". An id that is not (or no longer) in the topic
 * returns `undefined`: the caller sends `resync` and continues from the head.
 */
export async function cursorFor(db: Db, teamId: string, topic: string, afterId: number): Promise<Cursor | undefined> {
  if (afterId === 0) return START;
  const [row] = await db<{ tx: string }[]>`select tx::text as tx from events where id = ${afterId} and team_id = ${teamId} and topic = ${topic}`;
  return row ? { tx: row.tx, id: afterId } : undefined;
}

/** The head: a cursor after every finished event, so a new subscriber sees only what comes next. */
export async function headCursor(db: Db): Promise<Cursor> {
  const [row] = await db<{ x: string }[]>`select ${db.unsafe(HORIZON)}::text as x`;
  // No event below x can still appear; (x, 0) sorts before any event of a transaction >= x.
  return { tx: row.x, id: 0 };
}

/**
 * The id to resume after so that a reader continues exactly from `cursor`: the topic's newest
 * event that sorts before it (0 when none, which resumes from the oldest retained event; nothing
 * of the topic sorts before the cursor then, so it is the same point). A stream that starts at the
 * head hands this to its client (`Coord-Resume-After`), so even a client that has seen no event
 * yet resumes without a gap.
 */
export async function resumeIdFor(db: Db, teamId: string, topic: string, cursor: Cursor): Promise<number> {
  const [row] = await db<{ id: number }[]>`
    select id from events
     where team_id = ${teamId} and topic = ${topic} and (tx, id) < (${cursor.tx}::xid8, ${cursor.id}::bigint)
     order by tx desc, id desc limit 1`;
  return row ? Number(row.id) : 0;
}

/** Deletes events older than `retentionMs` (called by the sweep). Returns how many. */
export async function deleteOldEvents(db: Db, retentionMs: number): Promise<number> {
  if (retentionMs <= 0) return 0;
  const rows = await db`delete from events where created_at < now() - make_interval(secs => ${retentionMs / 1000}) returning 1`;
  return rows.length;
}

/** The sequence number of the newest finished event of a topic (0 when none): the head as an id. */
export async function headId(db: Db, teamId: string, topic: string): Promise<number> {
  const [row] = await db<{ id: number }[]>`
    select id from events
     where team_id = ${teamId} and topic = ${topic} and tx < pg_snapshot_xmin(pg_current_snapshot())
     order by tx desc, id desc limit 1`;
  return row ? Number(row.id) : 0;
}
