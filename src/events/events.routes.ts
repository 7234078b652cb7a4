import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Config } from '../config.js';
import type { Sql } from '../db/client.js';
import { DomainError, fail } from '../http/errors.js';
import { problemResponses } from '../http/problem.js';
import { isDatabaseUnavailable } from '../db/unavailable.js';
import { accessToScope, canonicalScope } from '../scopes/scopes.js';
import type { Metrics } from '../metrics/metrics.js';
import type { EventHub, Subscriber } from './events.hub.js';
import { StreamRecheck } from './events.recheck.js';
import { cursorFor, headCursor, headId, readAfter, resumeIdFor, type Cursor, type EventRow } from './events.repo.js';

export const Actor = z
  .object({
    kind: z.enum(['user', 'session', 'system']).describe('`user` (an operator), `session`, or `system` (Coord’s own sweeps and jobs)'),
    id: z.string().describe('The user or session id, or the system job (`sweep:lease`, `sweep:retention`, `on-session-stopped`, …)'),
    token: z.string().nullable().describe('The name of the token the request used (`default`, `ci`, …); null for `system`'),
  })
  .meta({ id: 'Actor', description: 'Who made a change (the audit)' });

export const Event = z
  .object({
    seq: z.number().int().describe('The event sequence number; the SSE `id:` and the resume cursor'),
    topic: z.string(),
    event: z.string().describe('Seed event name: added, claimed, done, blocked, todo, dependency-blocked, unblocked, updated, assigned, removed, …'),
    at: z.string().describe('Database time of the change (ISO 8601)'),
    actor: Actor.nullable().describe('Who made the change; null for events written before the audit existed'),
    data: z.record(z.string(), z.unknown()).describe('The payload: {event, id, scope, status, owner?, blockedBy?, revision, …}'),
  })
  .meta({ id: 'Event' });

const TopicQuery = z
  .string()
  .min(6)
  .max(600)
  .regex(/^todo:/, 'topic must be todo:<scope>')
  .describe('`todo:<scope>`, e.g. `todo:session:s-…`');

function view(e: EventRow) {
  return { seq: e.id, topic: e.topic, event: e.event, at: e.at, actor: e.actor, data: e.payload };
}

/**
 * An event's SSE frame (`data:` is the payload plus `seq`, `at` and `actor`), encoded once: the hub hands every subscriber of a topic the same row
 * objects, so a topic with 1,000 subscribers serialises each event once instead of 1,000 times
 * (the frame is kept as long as the row is).
 */
const frames = new WeakMap<EventRow, Buffer>();
function frame(e: EventRow): Buffer {
  let f = frames.get(e);
  if (!f) {
    f = Buffer.from(`id: ${e.id}\nevent: ${e.event}\ndata: ${JSON.stringify({ ...e.payload, seq: e.id, at: e.at, actor: e.actor })}\n\n`);
    frames.set(e, f);
  }
  return f;
}

/**
 * A topic may be read by whoever may read its scope; anyone else learns nothing (404). A topic is
 * always the caller's team's. Names are resolved (`todo:scenario:<name>` reads `todo:scenario:<id>`); returns the canonical topic.
 */
async function authorizeTopic(
  sql: Sql,
  req: { principal: import('../auth/principal.js').Principal },
  topic: string,
): Promise<{ teamId: string; topic: string }> {
  const { teamId } = req.principal;
  const scope = await canonicalScope(sql, teamId, topic.slice('todo:'.length));
  const a = scope ? await accessToScope(sql, req.principal, { teamId, scope }) : undefined;
  if (!scope || !a?.inScope) fail('not_found', `topic "${topic}" not found`);
  return { teamId, topic: `todo:${scope}` };
}

/** Why a stream ended (`coord_sse_streams_closed_total`'s `reason`). */
export type StreamEnd = 'client' | 'revoked' | 'expired' | 'slow' | 'stalled' | 'max_age' | 'shutdown' | 'error';

/** Bytes the replica holds for a stream beyond which it is cut off (it resumes with Last-Event-ID). */
const MAX_BEHIND_BYTES = 1024 * 1024;

function parseAfter(raw: string | undefined): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (!/^\d{1,15}$/.test(raw)) fail('invalid_cursor', `"${raw}" is not an event sequence number`);
  return Number(raw);
}

/**
 * `GET /v1/events` (SSE) and `GET /v1/events/log` (JSON page). Both deliver a topic's events in
 * the same order; resuming from a sequence number is gap-free and duplicate-free (events.repo.ts).
 */
export function eventsRoutes(app: FastifyInstance, deps: { sql: Sql; hub: EventHub; config: Config; metrics?: Metrics; seen?: (sessionId: string) => void }) {
  const { sql, hub, config, metrics } = deps;
  const open = new Set<(why: StreamEnd) => void>();
  /** Open streams per team (COORD_MAX_STREAMS_PER_TEAM). */
  const openByTeam = new Map<string, number>();
  const r = app.withTypeProvider<ZodTypeProvider>();
  // Every open stream's token and scope access, re-checked in one pass per heartbeat interval.
  const recheck = new StreamRecheck(sql, config.sseHeartbeatMs, (err) =>
    isDatabaseUnavailable(err)
      ? app.log.warn('event stream re-check: database unavailable; streams kept open')
      : app.log.error({ err }, 'event stream re-check failed'),
  );

  app.addHook('preClose', async () => {
    for (const end of [...open]) end('shutdown');
    recheck.stop();
  });

  r.get(
    '/v1/events',
    {
      schema: {
        tags: ['events'],
        operationId: 'eventsFollow',
        summary: 'Follow a topic as Server-Sent Events',
        description:
          'Streams `todo:<scope>` events as SSE: `id:` is the event sequence, `event:` its name, `data:` its JSON payload with `seq`, `at` and `actor` (who made the change, `{kind, id, token}`; null before the audit existed). ' +
          'Resume with the `Last-Event-ID` header (or `after=`); `after=0` replays everything retained. Without either, ' +
          'the stream starts at the head. The `Coord-Resume-After` response header names the sequence number the stream starts after: a client ' +
          'that drops before its first event resumes from it (as `Last-Event-ID`) with no gap. A cursor that is no longer retained gets one `resync` event (re-read state, then ' +
          'continue). Heartbeat comments every 15 s by default; `retry: 2000` is sent first. Authorisation is the scope read rule; ' +
          'a topic the caller may not read is 404. Over the replica’s stream cap, or its cap per team: 503 `too_many_streams`. ' +
          'The replica ends a stream after COORD_SSE_MAX_AGE (10 min by default), when its reader falls more than 1 MiB behind, or when ' +
          'nothing of it could be written for a whole heartbeat interval; resume with `Last-Event-ID`.',
        querystring: z.object({ topic: TopicQuery, after: z.string().optional().describe('Resume after this sequence number') }),
        headers: z.looseObject({ 'last-event-id': z.string().optional() }),
        response: {
          200: z.string().describe('text/event-stream'),
          ...problemResponses('not_found', 'invalid_cursor', 'too_many_streams'),
        },
      },
    },
    async (req, reply) => {
      const { teamId, topic } = await authorizeTopic(sql, req, req.query.topic);
      const afterId = parseAfter(req.headers['last-event-id'] ?? req.query.after);
      let cursor: Cursor | undefined = afterId === undefined ? await headCursor(sql) : await cursorFor(sql, teamId, topic, afterId);
      const resync = cursor === undefined;
      if (!cursor) cursor = await headCursor(sql);
      const resumeAfter = afterId !== undefined && !resync ? afterId : await resumeIdFor(sql, teamId, topic, cursor);
      // The cap is checked after the last await, so the check and `open.add` below run in one
      // synchronous step: simultaneous opens cannot all pass it.
      if (open.size >= config.maxStreams) {
        throw new DomainError('too_many_streams', `this replica serves at most ${config.maxStreams} streams; retry later`, {}, 503, { 'retry-after': '5' });
      }
      const teamCap = Math.min(config.maxStreamsPerTeam, config.maxStreams);
      if ((openByTeam.get(teamId) ?? 0) >= teamCap) {
        throw new DomainError(
          'too_many_streams',
          `your team holds ${teamCap} streams on this replica, the most one team may; close streams you no longer follow, or retry later`,
          {},
          503,
          { 'retry-after': '5' },
        );
      }

      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
        'coord-resume-after': String(resumeAfter),
      });
      res.write(`retry: 2000\n: topic ${topic}\n\n`);
      if (resync) {
        res.write(
          `event: resync\ndata: ${JSON.stringify({ event: 'resync', topic, after: afterId, reason: 'cursor not retained; re-read state, then continue from here' })}\n\n`,
        );
      }
      let closed = false;
      let leave: (() => void) | undefined;
      // A stopped session's streams end when the stop's doorbell rings (every replica); the
      // replica's re-check pass (events.recheck.ts) is the backstop for a lost ring or a lost access.
      const token = /^Bearer\s+(\S+)/i.exec(req.headers.authorization ?? '')?.[1] ?? '';
      // A reader that stopped reading: once the socket's buffers are full, what the
      // replica writes waits in `writableLength`. If none of it went out during a whole heartbeat
      // interval, the stream is stalled. (A stopped process whose host still acknowledges TCP fills
      // those buffers only with traffic; on an idle topic COORD_SSE_MAX_AGE bounds it.)
      const socket = res.socket!;
      const sent = () => socket.bytesWritten - socket.writableLength;
      let sentAtLastBeat = sent();
      const heartbeat = setInterval(() => {
        if (socket.writableLength > 0 && sent() === sentAtLastBeat) return end('stalled');
        sentAtLastBeat = sent();
        res.write(': heartbeat\n\n');
        // An open stream is a live session (liveness: lastSeenAt moves on each stream heartbeat).
        if (req.principal.kind === 'session') deps.seen?.(req.principal.id);
      }, config.sseHeartbeatMs);
      // Jittered by up to a tenth, so streams opened together (after a restart) do not all reconnect together.
      const maxAge = config.sseMaxAgeMs > 0 ? setTimeout(() => end('max_age'), config.sseMaxAgeMs * (0.9 + Math.random() * 0.1)) : undefined;
      let untrack: (() => void) | undefined;
      let unwatch: (() => void) | undefined;
      const end = (why: StreamEnd) => {
        if (closed) return;
        closed = true;
        clearInterval(heartbeat);
        clearTimeout(maxAge);
        unwatch?.();
        untrack?.();
        leave?.();
        open.delete(end);
        const n = (openByTeam.get(teamId) ?? 1) - 1;
        if (n > 0) openByTeam.set(teamId, n);
        else openByTeam.delete(teamId);
        metrics?.sseClosed.inc({ reason: why });
        // A reader that is not reading would never take the rest: drop the connection and what waits for it.
        if (why === 'stalled' || why === 'slow') socket.destroy();
        else {
          if (why === 'max_age') res.write(': max age reached; resume with Last-Event-ID\n\n');
          res.end();
        }
      };
      open.add(end);
      openByTeam.set(teamId, (openByTeam.get(teamId) ?? 0) + 1);
      unwatch = recheck.watch(token, { teamId, scope: topic.slice('todo:'.length) }, () => end('revoked'));
      metrics?.sseOpened.inc();
      res.on('close', () => end('client'));
      const untrackSession = req.principal.kind === 'session' ? hub.trackSessionStream(req.principal.id, () => end('revoked')) : undefined;
      const used = req.principal.token;
      const untrackToken = used ? hub.trackTokenStream(used.id, () => end('revoked')) : undefined;
      // A token that expires ends its streams then (by the database clock, as measured at lookup).
      const expiry = used?.expiresAtMono === undefined ? undefined : setTimeout(() => end('expired'), Math.max(0, used.expiresAtMono - performance.now()));
      untrack = () => {
        untrackSession?.();
        untrackToken?.();
        clearTimeout(expiry);
      };
      const sub: Subscriber = {
        cursor,
        deliver(events) {
          if (closed) return false;
          res.write(events.length === 1 ? frame(events[0]) : Buffer.concat(events.map(frame)));
          metrics?.sseDelivered.inc(events.length);
          const last = events[events.length - 1];
          sub.cursor = { tx: last.tx, id: last.id };
          // A consumer more than 1 MiB behind is cut off; it resumes with Last-Event-ID.
          if (res.writableLength > MAX_BEHIND_BYTES) {
            queueMicrotask(() => end('slow'));
            return false;
          }
          return true;
        },
      };
      try {
        leave = await hub.catchUp(teamId, topic, sub, () => !closed);
        if (closed) leave?.();
      } catch (err) {
        req.log.error({ err }, 'event stream failed');
        end('error');
      }
    },
  );

  r.get(
    '/v1/events/log',
    {
      schema: {
        tags: ['events'],
        operationId: 'eventsLog',
        summary: 'Read a page of a topic’s events',
        description:
          'The same events as the SSE stream, as JSON, for clients that poll. Pass the last `seq` you saw as `after` ' +
          '(`0` = from the oldest retained). `nextAfter` is the cursor for the next call. `resync: true` means the cursor ' +
          'is no longer retained: re-read state and continue from `nextAfter`. `subjectId` keeps only the events about one ' +
          'object of the topic (an item, or a graph or scenario id): the history of one item without reading its whole scope; ' +
          'the cursor stays a sequence number of the topic. Same access rule as without it (the topic’s scope).',
        querystring: z.object({
          topic: TopicQuery,
          after: z.string().optional().describe('Sequence number to read after; default 0'),
          limit: z.coerce.number().int().min(1).max(1000).default(100),
          subjectId: z.string().min(1).max(200).optional().describe('Only events about this item, graph or scenario id'),
        }),
        response: {
          200: z.object({ events: z.array(Event), nextAfter: z.number().int(), resync: z.boolean() }),
          ...problemResponses('not_found', 'invalid_cursor'),
        },
      },
    },
    async (req) => {
      const { limit } = req.query;
      const { teamId, topic } = await authorizeTopic(sql, req, req.query.topic);
      const afterId = parseAfter(req.query.after) ?? 0;
      const cursor = await cursorFor(sql, teamId, topic, afterId);
      if (!cursor) return { events: [], nextAfter: await headId(sql, teamId, topic), resync: true };
      const { events } = await readAfter(sql, teamId, topic, cursor, limit, req.query.subjectId);
      const last = events[events.length - 1];
      return { events: events.map(view), nextAfter: last ? last.id : afterId, resync: false };
    },
  );

  return { openStreams: () => open.size };
}
