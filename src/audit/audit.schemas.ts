/**
 * The query of `GET /v1/audit`, written once: the route validates with it and the service takes its
 * output (`AuditQuery` in audit.service.ts).
 */
import { z } from 'zod';
import { Actor } from '../events/events.routes.js';

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

/** What `GET /v1/audit` filters by; every filter given must hold (AND). */
export const AuditQuerySchema = z.strictObject({
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
});
