/**
 * `GET /v1/scopes`: the lists the caller may read, with their progress (scopes.list.ts).
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Config } from '../config.js';
import type { Sql } from '../db/client.js';
import { problemResponses } from '../http/problem.js';
import { listScopes, ScopeSummary } from './scopes.list.js';

export const ScopeList = z.object({ scopes: z.array(ScopeSummary).describe('In scope order'), nextCursor: z.string().nullable() }).meta({ id: 'ScopeList' });

const ListScopesQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100_000).optional().describe('Page size, capped at list_limit (also the default)'),
  cursor: z.string().max(2000).optional().describe('`nextCursor` of the previous page'),
});

/** Registers `GET /v1/scopes`. */
export function scopesRoutes(app: FastifyInstance, deps: { sql: Sql; config: Config }) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.get(
    '/v1/scopes',
    {
      schema: {
        tags: ['todos'],
        operationId: 'scopesList',
        summary: 'List the scopes you may read, with progress',
        description:
          'Every list that has held an item and that the caller may read, in scope order, keyset-paginated (`nextCursor`, null on the ' +
          'last page; `limit` ≤ list_limit, also the default), each with its stored-status counts and whether the caller holds ' +
          'override authority there. Visibility is the single read’s rule, within the caller’s team: users see every scope; a session sees its subtree root’s ' +
          'list (always, even empty) and the scenario, graph and metagit lists it is in. Scopes the caller may not read are never ' +
          'counted or named.',
        querystring: ListScopesQuery,
        response: { 200: ScopeList, ...problemResponses('invalid_cursor') },
      },
    },
    async (req) => {
      const max = deps.config.todo.listLimit;
      return listScopes(deps.sql, req.principal, { limit: Math.min(req.query.limit ?? max, max), cursor: req.query.cursor });
    },
  );
}
