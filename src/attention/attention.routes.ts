/** `GET /v1/attention`: what is stuck in the caller's team and what to do about it (attention.service.ts). */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Config } from '../config.js';
import type { Sql } from '../db/client.js';
import { problemResponses } from '../http/problem.js';
import { AttentionPage, AttentionQuery } from './attention.schemas.js';
import { listAttention } from './attention.service.js';

/** Registers `GET /v1/attention`. */
export function attentionRoutes(app: FastifyInstance, deps: { sql: Sql; config: Config }) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.get(
    '/v1/attention',
    {
      schema: {
        tags: ['todos'],
        operationId: 'attentionList',
        summary: 'List what is stuck, why, and the next step',
        description:
          'The work of the caller’s team that needs an operator, oldest condition first: claims past their lease nobody took over ' +
          '(`expired-claim`), sessions silent past their heartbeat interval that still hold work (`silent-holder`), unfinished items ' +
          'reserved for a stopped or deleted session (`reserved-for-gone`), items their owner blocked, with the note (`manual-block`), ' +
          'Task Graph v1 subtasks FAILED, STOPPED or BLOCKED (`graph-subtask-ended`), blocked metagit nodes (`metagit-node-blocked`) and members of ' +
          'unfinished scenarios waiting on upstream work (`scenario-member-waiting`). Each entry names the session concerned and ' +
          'lists the requests that resolve it (`actions`). `kind` filters; keyset-paginated (`nextCursor`, null on the last page; ' +
          '`limit` ≤ list_limit, also the default). Operators only (a session gets `forbidden`).',
        querystring: AttentionQuery,
        response: { 200: AttentionPage, ...problemResponses('validation_failed', 'forbidden', 'invalid_cursor') },
      },
    },
    async (req) => listAttention(deps.sql, req.principal, req.query, { leaseMs: deps.config.todo.claimLeaseMs, listLimit: deps.config.todo.listLimit }),
  );
}
