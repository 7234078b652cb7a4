import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { readdirSync } from 'node:fs';
import { z } from 'zod';
import type { Config } from '../config.js';
import type { Sql } from '../db/client.js';
import { MIGRATIONS_DIR, migrationsApplied } from '../db/migrate.js';
import { Problem, problemBody } from '../http/problem.js';
import type { Metrics } from '../metrics/metrics.js';
import { judgeSweeps, readSweepRuns, STALE_AFTER_INTERVALS, SWEEPS } from '../metrics/sweeps.health.js';

const expectedMigrations = () => readdirSync(MIGRATIONS_DIR).filter((f) => f.endsWith('.sql')).length;

export const SweepHealth = z
  .object({
    sweep: z.enum(SWEEPS).describe(`The sweep step, in run order: ${SWEEPS.join(', ')}`),
    lastSuccessAt: z.string().nullable().describe('Database time of its last success on any replica (ISO 8601); null until it first succeeded'),
    durationMs: z.number().nullable().describe('How long that success took, in ms'),
    changed: z
      .number()
      .int()
      .nullable()
      .describe('Rows that success changed: items reopened, subtasks recorded interrupted, items or events deleted, scenarios completed'),
    lastFailureAt: z.string().nullable().describe('Database time of its last failure on any replica; null when it never failed'),
    stale: z.boolean().describe('No success within `staleAfterMs` (a step that never ran is not stale during the first `staleAfterMs` of this replica)'),
  })
  .meta({ id: 'SweepHealth' });

export const ServiceReadiness = z
  .object({
    status: z.enum(['ready', 'degraded']).describe('`degraded`: a sweep is stale; the replica still serves requests, so the answer stays 200'),
    detail: z.string().optional().describe('What is degraded and what to check'),
    sweepIntervalMs: z.number().int().describe('`[todo] sweep_interval` of this replica, in ms'),
    staleAfterMs: z.number().int().describe(`${STALE_AFTER_INTERVALS} × sweepIntervalMs`),
    runsSweeps: z.boolean().describe('Whether this replica runs the sweep job (COORD_SWEEPS); one that does not still depends on another that does'),
    sweeps: z.array(SweepHealth),
  })
  .meta({ id: 'ServiceReadiness' });

/**
 * `/healthz` (liveness: the process answers; no database, no sweeps), `/readyz` (readiness: the
 * database is reachable, a primary (not a standby) and migrated, 503 `database_unavailable` otherwise; plus the fleet's sweep
 * health, `degraded` but still 200 when a sweep is stale), `/metrics` (Prometheus text).
 * All three are exempt from the rate limit.
 */
export function healthRoutes(app: FastifyInstance, deps: { sql: Sql; config: Config; metrics: Metrics; startedAt: number }) {
  const { sql, config, metrics } = deps;
  const r = app.withTypeProvider<ZodTypeProvider>();
  const exempt = { rateLimit: false } as const;
  r.get(
    '/healthz',
    {
      config: exempt,
      schema: { tags: ['health'], operationId: 'healthz', summary: 'Liveness: the process answers', response: { 200: z.object({ status: z.literal('ok') }) } },
    },
    async () => ({ status: 'ok' as const }),
  );
  r.get(
    '/readyz',
    {
      config: exempt,
      schema: {
        tags: ['health'],
        operationId: 'readyz',
        summary: 'Readiness: database reachable and migrated; the fleet’s sweep health',
        description:
          '503 `database_unavailable` when the database is unreachable, is a read-only standby, or is not migrated: take this replica out of the load balancer. ' +
          'Otherwise 200, with `status: degraded` when a sweep step (lease, retention, …) has not succeeded on any replica within ' +
          `${STALE_AFTER_INTERVALS} × sweep_interval. Degraded stays 200 on purpose: every replica reports the same fleet-wide fact, and ` +
          'a 503 would take the whole fleet out of service for a background job; alert on it instead (`coord_sweep_stale` in /metrics).',
        response: { 200: ServiceReadiness, 503: Problem.describe('Problem codes: database_unavailable') },
      },
    },
    async (_req, reply) => {
      const unavailable = (detail: string) =>
        reply
          .status(503)
          .header('retry-after', '1')
          .type('application/problem+json')
          .send(problemBody('database_unavailable', detail, 503));
      try {
        // A server in recovery (a standby, reached before the failover finished) takes no write.
        const [{ standby }] = await sql<{ standby: boolean }[]>`select pg_is_in_recovery() as standby`;
        if (standby) return unavailable('the database server is a read-only standby; no primary reached yet');
      } catch {
        return unavailable('the database is unreachable');
      }
      if (!(await migrationsApplied(sql, expectedMigrations()))) return unavailable('migrations not applied yet');
      let runs;
      try {
        runs = await readSweepRuns(sql);
      } catch {
        return unavailable('the database is unreachable');
      }
      const staleAfterMs = STALE_AFTER_INTERVALS * config.todo.sweepIntervalMs;
      const judged = judgeSweeps(runs, { staleAfterMs, uptimeMs: performance.now() - deps.startedAt, runsSweeps: config.sweeps });
      return {
        status: judged.degraded ? ('degraded' as const) : ('ready' as const),
        ...(judged.detail ? { detail: judged.detail } : {}),
        sweepIntervalMs: config.todo.sweepIntervalMs,
        staleAfterMs,
        runsSweeps: config.sweeps,
        sweeps: judged.sweeps,
      };
    },
  );
  r.get(
    '/metrics',
    {
      config: exempt,
      schema: {
        tags: ['health'],
        operationId: 'metrics',
        summary: 'Prometheus metrics',
        description: 'Prometheus text format; docs/operations.md lists every series.',
        response: { 200: z.string() },
      },
    },
    async (_req, reply) => {
      reply.type(metrics.contentType);
      return metrics.expose();
    },
  );
}
