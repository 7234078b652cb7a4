/** `GET /v1/audit`: who did what, for operators. The rules are in audit.service.ts. */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Config } from '../config.js';
import type { Sql } from '../db/client.js';
import { Actor, Event } from '../events/events.routes.js';
import { problemResponses } from '../http/problem.js';
import { listAudit } from './audit.service.js';

export const AuditEntry = Event.extend({
  topic: z.string().describe('`todo:<scope>`, `audit:tokens`, `audit:sessions`, `audit:agents`, `audit:teams` or `audit:intents`'),
  event: z
    .string()
    .describe(
      'The event name: the seeds’ (added, claimed, done, TaskStarted, …) or token-created, token-rotated, token-revoked, session-created, session-stopped, agent-registered, team-created, operator-created',
    ),
  subjectId: z
    .string()
    .nullable()
    .describe(
      'The object changed: an item (also a Task Graph subtask’s item), scenario, graph, metagit node (`<graph>/<node>`), token, session, Agent, team or operator id',
    ),
}).meta({ id: 'AuditEntry', description: 'One stored change and who made it' });

/** An ISO 8601 instant with an offset, handed on as UTC; years 1–9999 (what Postgres and JavaScript both hold). */
const Instant = z.iso
  .datetime({ offset: true })
  .refine((s) => {
    const year = new Date(s).getUTCFullYear();
    return year >= 1 && year <= 9999;
  }, 'out of range: use an instant between the years 1 and 9999')
  .transform((s) => new Date(s).toISOString());

/** `todo:<scope>` or one of the audit-only topics; anything else matches nothing, so it is refused. */
const Topic = z
  .string()
  .min(6)
  .max(600)
  .regex(
    /^(todo:.+|audit:(tokens|sessions|agents|teams|intents))$/,
    'topic must be todo:<scope>, audit:tokens, audit:sessions, audit:agents, audit:teams or audit:intents',
  );

/** Registers the audit route. */
export function auditRoutes(app: FastifyInstance, deps: { sql: Sql; config: Config }) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const { sql } = deps;

  r.get(
    '/v1/audit',
    {
      schema: {
        tags: ['audit'],
        summary: 'Page through who did what',
        description:
          'Every change Coord writes an event for, newest first, with the principal that made it (kind, id and the name of its token): the events of ' +
          'every topic, plus `audit:tokens` (token-created, token-rotated, token-revoked), `audit:sessions` (session-created, ' +
          'session-stopped), `audit:agents` (agent-registered) and `audit:teams` (team-created, operator-created) and `audit:intents` (intent-created). Filters combine with AND: `actorKind`, `actorId`, `actorToken`, `subjectId` (the object), `topic`, ' +
          '`since` (inclusive) and `until` (exclusive). Pass `nextCursor` back as `cursor` for the next page (null on the last). ' +
          'Kept as long as events are (`COORD_EVENT_RETENTION`). An entry appears once every transaction that began before it has finished. Operators only (a session gets `forbidden`).',
        querystring: z.strictObject({
          actorKind: Actor.shape.kind.optional(),
          actorId: z.string().min(1).max(200).optional().describe('A user or session id, or a system job (`sweep:lease`)'),
          actorToken: z.string().min(1).max(100).optional().describe('A token name'),
          subjectId: z.string().min(1).max(200).optional().describe('An item, scenario, graph, metagit node (`<graph>/<node>`), token, session or Agent id'),
          topic: Topic.optional().describe(
            '`todo:<scope>` (a scenario by name or id; a session’s topic is its root’s), `audit:tokens`, `audit:sessions`, `audit:agents`, `audit:teams`, `audit:intents`',
          ),
          since: Instant.optional().describe('ISO 8601 with offset, e.g. `2026-12-03T09:00:00Z`; inclusive'),
          until: Instant.optional().describe('ISO 8601 with offset; exclusive'),
          limit: z.coerce.number().int().min(1).max(500).default(100),
          cursor: z.string().max(200).optional().describe('`nextCursor` of the previous page'),
        }),
        response: {
          200: z.object({ entries: z.array(AuditEntry), nextCursor: z.string().nullable() }).meta({ id: 'AuditPage' }),
          ...problemResponses('validation_failed', 'forbidden', 'invalid_cursor'),
        },
      },
    },
    async (req) => listAudit(sql, req.principal, req.query),
  );
}
