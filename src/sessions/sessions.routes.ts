import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Config } from '../config.js';
import type { Sql } from '../db/client.js';
import { problemResponses } from '../http/problem.js';
import { defaultScope } from '../scopes/scopes.js';
import { heartbeatSession, MAX_HEARTBEAT_INTERVAL_MS, MIN_HEARTBEAT_INTERVAL_MS } from './sessions.liveness.js';
import { Session } from './sessions.schemas.js';
import { createSession, getSession, listSessions, stopSession } from './sessions.service.js';

const tags = ['sessions'];
const IdParams = z.object({ id: z.string().max(100) });
const StopResult = z.object({
  session: Session,
  reopened: z.array(z.string()).describe('Items reopened from the claims of this session and of the descendants this stop stopped'),
  stoppedDescendants: z.array(z.string()).describe('The active descendants (any depth) this stop stopped with it, in id order'),
});
const HeartbeatResult = z
  .object({
    sessionId: z.string(),
    lastSeenAt: z.string().describe('Now, on the database clock'),
    heartbeatIntervalMs: z.number().int().optional(),
    autoStopAfter: z.string().optional().describe('With an interval: `lastSeenAt + heartbeatIntervalMs`; silent past it, the next sweep stops the session'),
  })
  .meta({ id: 'SessionHeartbeat' });

/** Session routes and `GET /v1/me` (docs/architecture.md §D7). */
export function sessionsRoutes(app: FastifyInstance, deps: { sql: Sql; config: Config }) {
  const { sql, config } = deps;
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.post(
    '/v1/sessions',
    {
      schema: {
        tags,
        operationId: 'sessionsCreate',
        summary: 'Register a session',
        description:
          'A user registers a root session or a child of any session; a session registers children of itself ' +
          '(`parentId` defaults to the caller). The token is returned once and stored hashed. With `heartbeatIntervalMs`, a session ' +
          'silent for longer than that is stopped automatically.',
        body: z
          .strictObject({
            name: z.string().max(200).optional(),
            parentId: z.string().max(100).optional(),
            systemKind: z.string().min(1).max(50).optional().describe('Users only, e.g. `orchestrator`: children of a system session anchor to themselves'),
            agentId: z
              .string()
              .max(64)
              .optional()
              .describe(
                'Bind the session to a registered Agent: it may then claim and act on that Agent’s graph subtasks. A session may bind a child only to its own Agent.',
              ),
            heartbeatIntervalMs: z
              .number()
              .int()
              .min(MIN_HEARTBEAT_INTERVAL_MS)
              .max(MAX_HEARTBEAT_INTERVAL_MS)
              .nullish()
              .describe(
                `Auto-stop, in ms (${MIN_HEARTBEAT_INTERVAL_MS}–${MAX_HEARTBEAT_INTERVAL_MS}): with no authenticated call for longer than this, the sweep stops the session (and its subtree) as POST /v1/sessions/{id}/stop would. ` +
                  'Any call counts; an idle agent calls POST /v1/sessions/me/heartbeat. Absent or null: never auto-stopped.',
              ),
          })
          .nullish(),
        response: {
          201: z.object({ session: Session, token: z.string().describe('Bearer token; shown once') }),
          ...problemResponses('forbidden', 'session_not_found', 'session_not_active', 'agent_not_registered'),
        },
      },
    },
    async (req, reply) => {
      reply.status(201);
      return createSession(sql, req.principal, req.body ?? {});
    },
  );

  r.get(
    '/v1/sessions',
    {
      schema: {
        tags,
        operationId: 'sessionsList',
        summary: 'List sessions',
        description:
          'Users see every session of their team; a session sees its own subtree. Keyset-paginated. Each session says whether it is `alive`, ' +
          'when it was last seen and what it holds. `wide=true` adds done/total progress ' +
          '(seed 000 “In gr list”): the session’s own subtree count, and on an orchestrator the scenario-wide total.',
        querystring: z.strictObject({
          status: z.enum(['active', 'stopped', 'deleted']).optional(),
          alive: z.enum(['true', 'false']).optional().describe('Only sessions that are (`true`) or are not (`false`) alive; see `Session.alive`'),
          limit: z.coerce.number().int().min(1).max(1000).default(100),
          cursor: z.string().max(200).optional(),
          wide: z.enum(['true', 'false']).optional().describe('Add `progress` (and `scenarioProgress` on orchestrators); off by default'),
        }),
        response: { 200: z.object({ sessions: z.array(Session), nextCursor: z.string().nullable() }), ...problemResponses('invalid_cursor') },
      },
    },
    async (req) =>
      listSessions(sql, req.principal, {
        ...req.query,
        wide: req.query.wide === 'true',
        alive: req.query.alive === undefined ? undefined : req.query.alive === 'true',
        leaseMs: config.todo.claimLeaseMs,
      }),
  );

  // `me`, not `{id}`: liveness is the session's own word; another caller beating for it would
  // keep a dead agent alive. Registered before `/v1/sessions/:id/…`; static segments win anyway.
  r.post(
    '/v1/sessions/me/heartbeat',
    {
      schema: {
        tags,
        operationId: 'sessionsHeartbeat',
        summary: 'Heartbeat: I am alive',
        description:
          'Marks the calling session seen now, at once (no event). Any authenticated call does so too, within about a second; ' +
          'an idle agent whose session has a heartbeat interval calls this to stay alive. Sessions only.',
        body: z.strictObject({}).nullish(),
        response: { 200: HeartbeatResult, ...problemResponses('forbidden') },
      },
    },
    async (req) => heartbeatSession(sql, req.principal),
  );

  r.get(
    '/v1/sessions/:id',
    {
      schema: {
        tags,
        operationId: 'sessionsGet',
        summary: 'Get a session',
        params: IdParams,
        response: { 200: z.object({ session: Session }), ...problemResponses('session_not_found') },
      },
    },
    async (req) => ({ session: await getSession(sql, req.principal, req.params.id, config.todo.claimLeaseMs) }),
  );

  for (const [method, path, mode, operationId, summary] of [
    ['post', '/v1/sessions/:id/stop', 'stopped', 'sessionsStop', 'Stop a session'],
    ['delete', '/v1/sessions/:id', 'deleted', 'sessionsDelete', 'Soft-delete a session'],
  ] as const) {
    r.route({
      method: method.toUpperCase() as 'POST' | 'DELETE',
      url: path,
      schema: {
        tags,
        operationId,
        summary,
        description:
          'Its token stops working and its in-progress items reopen in the same transaction (seed 000 “Reclaiming stranded work”), ' +
          'and so do its active descendants’ (stopped, never deleted: `stoppedDescendants`). A Task Graph dispatch’s session among them is ' +
          'stopped and its graph records the dispatch interrupted. A user, the session itself or an ancestor may do it. Idempotent.',
        params: IdParams,
        ...(method === 'post' ? { body: z.strictObject({}).nullish() } : {}),
        response: { 200: StopResult, ...problemResponses('session_not_found', 'forbidden') },
      },
      handler: async (req) => stopSession(sql, config, req.principal, (req.params as { id: string }).id, mode),
    });
  }

  r.get(
    '/v1/me',
    {
      schema: {
        tags,
        operationId: 'me',
        summary: 'Who am I',
        response: {
          200: z.object({
            kind: z.enum(['user', 'session']),
            id: z.string(),
            name: z.string(),
            teamId: z.string().describe('Your team (`tm-…`): a session’s is its creator’s. GET /v1/teams/{id} reads it (operators)'),
            role: z.enum(['operator', 'admin']).optional().describe('Users only: `admin` is the server administrator (creates teams), `operator` otherwise'),
            scope: z.string().optional().describe('Default scope (sessions only)'),
            session: Session.optional(),
            token: z.object({ id: z.string(), name: z.string() }).optional().describe('The token this request was made with (manage it under /v1/tokens)'),
          }),
          ...problemResponses(),
        },
      },
    },
    async (req) => {
      const p = req.principal;
      const token = p.token && { id: p.token.id, name: p.token.name };
      if (p.kind === 'user') return { kind: 'user' as const, id: p.id, name: p.name, teamId: p.teamId, role: p.role, token };
      return {
        kind: 'session' as const,
        id: p.id,
        name: p.name,
        teamId: p.teamId,
        scope: defaultScope(p),
        session: await getSession(sql, p, p.id, config.todo.claimLeaseMs),
        token,
      };
    },
  );
}
