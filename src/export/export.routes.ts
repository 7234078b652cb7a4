import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Config } from '../config.js';
import type { Sql } from '../db/client.js';
import { problemResponses } from '../http/problem.js';
import { resolveScope } from '../scopes/scopes.js';
import { TodoItem } from '../todos/todos.schemas.js';
import { exportChunks, exportFileName } from './export.service.js';

/** `GET /v1/scopes/{scope}/export` (docs/architecture.md §D7; seed 000 "Remove / export"). */
export function exportRoutes(app: FastifyInstance, deps: { sql: Sql; config: Config }) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.get(
    '/v1/scopes/:scope/export',
    {
      schema: {
        tags: ['todos'],
        operationId: 'todosExport',
        summary: 'Export a whole scope as Markdown or JSON',
        description:
          'Streams every item of the scope in position order, paging internally, so the export is complete however large the scope ' +
          '(never capped by `list_limit`). `markdown` (default): `# Todo export: <scope>`, then `- [x]`/`- [ ]` lines with the title ' +
          'and an italic parenthetical (status, `owner …`, `tags a,b`, `blocked by x,y`), sub-items indented two spaces, a done item’s result on the next line (`  Result: …`, one line), ' +
          '`_(no items)_` when empty. `json`: an indented array of the same item objects `GET /v1/todos` returns. The caller must be ' +
          'in the scope (a scope it is not in is the 404 of one that does not exist); `scope` is `session:<id>`, `scenario:<name|id>` or `graph:<id>` (URL-encode `:` as `%3A` if your client needs to).',
        params: z.object({ scope: z.string().min(3).max(300) }),
        querystring: z.strictObject({ format: z.enum(['markdown', 'json']).default('markdown') }),
        response: {
          200: {
            description: 'The export, streamed (`Content-Disposition` names the seed’s file name)',
            content: { 'text/markdown': { schema: z.string() }, 'application/json': { schema: z.array(TodoItem) } },
          },
          ...problemResponses('invalid_scope', 'scope_not_found'),
        },
      },
    },
    async (req, reply) => {
      const access = await resolveScope(deps.sql, req.principal, req.params.scope);
      const format = req.query.format;
      const body = Readable.from(exportChunks(deps.sql, access, format, deps.config.todo.claimLeaseMs));
      // A stream bypasses the response serializer; the typed reply only knows the schema's shapes.
      return (reply as FastifyReply)
        .type(format === 'markdown' ? 'text/markdown; charset=utf-8' : 'application/json; charset=utf-8')
        .header('content-disposition', `inline; filename="${exportFileName(access.scope, format)}"`)
        .header('cache-control', 'no-store')
        .send(body);
    },
  );
}
