/** `GET /v1/audit`: who did what, for operators. The rules are in audit.service.ts. */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Config } from '../config.js';
import type { Sql } from '../db/client.js';
import { Event } from '../events/events.routes.js';
import { problemResponses } from '../http/problem.js';
import { AuditQuerySchema } from './audit.schemas.js';
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

/** Registers the audit route. */
export function auditRoutes(app: FastifyInstance, deps: { sql: Sql; config: Config }) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const { sql } = deps;

  r.get(
    '/v1/audit',
    {
      schema: {
        tags: ['audit'],
        operationId: 'auditList',
        summary: 'Page through who did what',
        description:
          'Every change Coord writes an event for, newest first, with the principal that made it (kind, id and the name of its token): the events of ' +
          'every topic, plus `audit:tokens` (token-created, token-rotated, token-revoked), `audit:sessions` (session-created, ' +
          'session-stopped), `audit:agents` (agent-registered) and `audit:teams` (team-created, operator-created) and `audit:intents` (intent-created). Filters combine with AND: `actorKind`, `actorId`, `actorToken`, `subjectId` (the object), `topic`, ' +
          '`since` (inclusive) and `until` (exclusive). Pass `nextCursor` back as `cursor` for the next page (null on the last). ' +
          'Kept as long as events are (`COORD_EVENT_RETENTION`). An entry appears once every transaction that began before it has finished. Operators only (a session gets `forbidden`).',
        querystring: AuditQuerySchema,
        response: {
          200: z.object({ entries: z.array(AuditEntry), nextCursor: z.string().nullable() }).meta({ id: 'AuditPage' }),
          ...problemResponses('validation_failed', 'forbidden', 'invalid_cursor'),
        },
      },
    },
    async (req) => listAudit(sql, req.principal, req.query),
  );
}
