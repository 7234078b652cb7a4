import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ConfigError, reloadTodoConfig, type Config } from '../config.js';
import { fail } from '../http/errors.js';
import { problemResponses } from '../http/problem.js';
import { formatDuration } from '../lib/duration.js';
import { isServerAdmin } from '../auth/principal.js';

const ADMIN_ONLY = 'The server administrator only (an operator with role `admin`); other operators and sessions get `forbidden`.';

/**
 * `POST /v1/admin/reload` and `GET /v1/admin/config`: server-wide settings, so the server
 * administrator's only (an operator with role `admin`). Other operators and
 * sessions get 403 `forbidden`.
 */
export function adminRoutes(app: FastifyInstance, deps: { config: Config }) {
  const refusal = (verb: string) =>
    `only the server administrator may ${verb} the configuration (the operator with role admin: the one whose token the server made at its first start, or COORD_ADMIN_TOKEN); ask them`;
  const r = app.withTypeProvider<ZodTypeProvider>();
  const todoView = () => {
    const t = deps.config.todo;
    return {
      emit_events: t.emitEvents,
      claim_lease: formatDuration(t.claimLeaseMs),
      retention: formatDuration(t.retentionMs),
      max_title: t.maxTitle,
      max_note: t.maxNote,
      max_result: t.maxResult,
      list_limit: t.listLimit,
      sweep_interval: formatDuration(t.sweepIntervalMs),
      busy_timeout: formatDuration(t.busyTimeoutMs),
    };
  };
  const TodoView = z.object({
    emit_events: z.string(),
    claim_lease: z.string(),
    retention: z.string(),
    max_title: z.number(),
    max_note: z.number(),
    max_result: z.number(),
    list_limit: z.number(),
    sweep_interval: z.string(),
    busy_timeout: z.string(),
  });
  r.get(
    '/v1/admin/config',
    {
      schema: {
        tags: ['admin'],
        operationId: 'adminConfig',
        summary: 'The running [todo] configuration',
        description: `The server-wide [todo] keys as they run. ${ADMIN_ONLY}`,
        response: { 200: z.object({ todo: TodoView }), ...problemResponses('forbidden') },
      },
    },
    async (req) => {
      if (!isServerAdmin(req.principal)) fail('forbidden', refusal('read'));
      return { todo: todoView() };
    },
  );
  r.post(
    '/v1/admin/reload',
    {
      schema: {
        tags: ['admin'],
        operationId: 'adminReload',
        summary: 'Re-read the reloadable [todo] keys',
        description:
          'Same as SIGHUP: re-reads the config file and COORD_TODO_* and applies claim_lease, retention, max_title, max_note and max_result. ' +
          'list_limit, sweep_interval, busy_timeout and emit_events are restart-only; a changed one is listed in `restartRequired`. ' +
          ADMIN_ONLY,
        response: {
          200: z.object({ applied: z.record(z.string(), z.number()), restartRequired: z.array(z.string()), todo: TodoView }),
          ...problemResponses('forbidden'),
        },
      },
    },
    async (req) => {
      if (!isServerAdmin(req.principal)) fail('forbidden', refusal('reload'));
      try {
        const res = reloadTodoConfig(deps.config);
        return { ...res, todo: todoView() };
      } catch (err) {
        if (err instanceof ConfigError) fail('validation_failed', err.message);
        throw err;
      }
    },
  );
}
