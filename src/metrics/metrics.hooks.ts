/**
 * Where the app's metrics are counted, from outside the modules they measure: one `onResponse`
 * hook for every request, a `preSerialization` hook on the two claim routes (their outcome is in
 * the answer: `{claimed:false}` or the problem's `code`) and on `done` (whose answer carries a
 * `next` when one was asked for: counted as a `next`), and the pool's and the sweeps' observers. Register before any route, so `onRoute` sees the claim routes.
 */
import type { FastifyInstance, RouteOptions } from 'fastify';
import type { Sql } from '../db/client.js';
import { observeTxStart } from '../db/tx.js';
import { observeSweeps } from './sweeps.health.js';
import type { Metrics } from './metrics.js';

/** The routes whose outcome `coord_claim_requests_total` counts, by their `operation` label. */
const CLAIM_ROUTES: Record<string, 'claim' | 'next'> = {
  '/v1/todos/:id/claim': 'claim',
  '/v1/todos/next': 'next',
};

/** `done`, whose `next` (one round trip per claim cycle) is counted as operation `next`. */
const DONE_ROUTE = '/v1/todos/:id/done';

/** Long-lived streams: counted in `coord_http_requests_total` when they end, kept out of the latency histogram. */
const STREAM_ROUTES = new Set(['/v1/events']);

/**
 * The outcome label of a claim or next answer: `claimed`, `empty` (`{claimed:false}`), or the
 * problem document's `code` (`http_<status>` if it has none).
 */
export function claimOutcome(status: number, payload: unknown): string {
  const body = (payload ?? {}) as { code?: unknown; claimed?: unknown };
  if (status >= 400) return typeof body.code === 'string' ? body.code : `http_${status}`;
  return body.claimed === false ? 'empty' : 'claimed';
}

/** Installs the hooks and observers that feed `metrics`; they are removed when the app closes. */
export function registerMetricsHooks(app: FastifyInstance, sql: Sql, metrics: Metrics): void {
  app.addHook('onResponse', async (req, reply) => {
    const route = req.routeOptions.url ?? 'unmatched';
    const labels = { route, method: req.method, status: String(reply.statusCode) };
    metrics.httpRequests.inc(labels);
    if (!STREAM_ROUTES.has(route)) metrics.httpDuration.observe(labels, reply.elapsedTime / 1000);
  });

  app.addHook('onRoute', (route: RouteOptions) => {
    if (route.method !== 'POST') return;
    const operation = CLAIM_ROUTES[route.url];
    let count: ((req: unknown, reply: { statusCode: number }, payload: unknown) => Promise<unknown>) | undefined;
    if (operation) {
      count = async (_req, reply, payload) => {
        metrics.claimRequests.inc({ operation, outcome: claimOutcome(reply.statusCode, payload) });
        return payload;
      };
    } else if (route.url === DONE_ROUTE) {
      // A completed `done` that asked for `next` answers `{item, next: {claimed, …}}`: that next
      // is a claim attempt like POST /v1/todos/next's. A refused done attempted no claim.
      count = async (_req, reply, payload) => {
        const next = (payload as { next?: unknown } | null)?.next;
        if (reply.statusCode < 400 && next) metrics.claimRequests.inc({ operation: 'next', outcome: claimOutcome(reply.statusCode, next) });
        return payload;
      };
    }
    if (!count) return;
    const existing = route.preSerialization;
    route.preSerialization = [...(Array.isArray(existing) ? existing : existing ? [existing] : []), count];
  });

  observeTxStart(sql, (seconds) => metrics.txStart.observe(seconds));
  const unobserve = observeSweeps(sql, (steps) => {
    for (const s of steps) {
      metrics.sweepRuns.inc({ sweep: s.sweep, result: s.ok ? 'success' : 'failure' });
      metrics.sweepDuration.observe({ sweep: s.sweep }, s.durationMs / 1000);
      if (s.ok) metrics.sweepChanges.inc({ sweep: s.sweep }, s.changed);
    }
  });
  app.addHook('onClose', async () => {
    observeTxStart(sql, undefined);
    unobserve();
  });
}
