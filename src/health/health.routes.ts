import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { readdirSync } from 'node:fs';
import { z } from 'zod';
import type { Sql } from '../db/client.js';
import { MIGRATIONS_DIR, migrationsApplied } from '../db/migrate.js';
import { problemBody } from '../http/problem.js';

const expectedMigrations = () => readdirSync(MIGRATIONS_DIR).filter((f) => f.endsWith('.sql')).length;

/** `/healthz` (process), `/readyz` (database reachable, migrations applied), `/metrics` (Prometheus text). */
export function healthRoutes(app: FastifyInstance, deps: { sql: Sql; metrics: () => Record<string, number> }) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.get('/healthz', { schema: { tags: ['health'], summary: 'Liveness', response: { 200: z.object({ status: z.literal('ok') }) } } }, async () => ({ status: 'ok' as const }));
  r.get(
    '/readyz',
    { schema: { tags: ['health'], summary: 'Readiness: database reachable and migrated', response: { 200: z.object({ status: z.literal('ready') }), 503: z.any() } } },
    async (_req, reply) => {
      const unavailable = (detail: string) => reply.status(503).type('application/problem+json').send(problemBody('database_unavailable', detail, 503));
      try {
        await deps.sql`select 1`;
      } catch {
        return unavailable('the database is unreachable');
      }
      if (await migrationsApplied(deps.sql, expectedMigrations())) return { status: 'ready' as const };
      return unavailable('migrations not applied yet');
    },
  );
  r.get('/metrics', { schema: { tags: ['health'], summary: 'Prometheus metrics', response: { 200: z.string() } } }, async (_req, reply) => {
    const m = { ...deps.metrics(), process_resident_memory_bytes: process.memoryUsage().rss };
    reply.type('text/plain; version=0.0.4');
    // Prometheus convention: a `_total` is a counter (only ever grows); everything else a gauge.
    return Object.entries(m).map(([k, v]) => `# TYPE ${k} ${k.endsWith('_total') ? 'counter' : 'gauge'}\n${k} ${v}`).join('\n') + '\n';
  });
}
