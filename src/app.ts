/**
 * `buildApp(deps)` registers everything and never listens (docs/architecture.md §D6): the server, the
 * tests, the OpenAPI generator and the benchmarks all build the app this way.
 */
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import { jsonSchemaTransform, jsonSchemaTransformObject, validatorCompiler } from 'fastify-type-provider-zod';
import { adminRoutes } from './admin/admin.routes.js';
import { registerAuth } from './auth/auth.plugin.js';
import { PrincipalCache } from './auth/principal-cache.js';
import type { Config } from './config.js';
import type { Sql } from './db/client.js';
import { EventHub } from './events/events.hub.js';
import { eventsRoutes } from './events/events.routes.js';
import { healthRoutes } from './health/health.routes.js';
import { readWorkFacts } from './health/work.js';
import { clientErrorHandler, expectationFailed, frameworkErrors, refuseUnknownRoutes, registerErrorHandler } from './http/error-handler.js';
import { registerDrain } from './http/drain.js';
import { isDatabaseUnavailable } from './db/unavailable.js';
import { registerIdempotency } from './idempotency/idempotency.plugin.js';
import { registerRateLimit } from './http/rate-limit.js';
import { refuseUnstorableText } from './http/text.js';
import { serializerCompiler } from './http/serialize.js';
import { Metrics } from './metrics/metrics.js';
import { registerMetricsHooks } from './metrics/metrics.hooks.js';
import { uiRoutes } from './ui/ui.routes.js';
import { LastSeenTracker } from './sessions/sessions.liveness.js';
import { sessionsRoutes } from './sessions/sessions.routes.js';
import { groupCommitStats } from './todos/todos.batch.js';
import { todosRoutes } from './todos/todos.routes.js';
import { extraModules, wireModules } from './modules.js';

type OpenApiDoc = {
  paths?: Record<string, Record<string, { responses?: Record<string, { description?: string; content?: Record<string, unknown> }> }>>;
  components?: { schemas?: Record<string, unknown> };
};

/**
 * The components in name order. zod's registry lists them in the order their modules were first
 * imported, which differs between a server and a test process that imported other modules first;
 * the document must not (the committed openapi/openapi.json is compared byte for byte).
 */
function sortedComponents<T extends OpenApiDoc>(doc: T): T {
  const schemas = doc.components?.schemas;
  if (schemas) doc.components!.schemas = Object.fromEntries(Object.entries(schemas).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return doc;
}

/**
 * Only the components the operations reach, each under its plain name. The zod provider writes every
 * registered schema twice, as read (`X`) and as written (`XInput`, defaults still optional); a
 * request body names the second, a response the first. The unreached twin is dropped, and a written
 * shape whose read twin is dropped takes the plain name, so `AddTodo` is the body `POST /v1/todos`
 * takes. A schema both read and written keeps both.
 */
function reachableComponents<T extends OpenApiDoc>(doc: T): T {
  const schemas = doc.components?.schemas;
  if (!schemas) return doc;
  const refs = (node: unknown): string[] => {
    const text = JSON.stringify(node);
    return [...text.matchAll(/"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1]);
  };
  const reached = new Set<string>();
  const queue = refs(doc.paths);
  while (queue.length > 0) {
    const name = queue.pop()!;
    if (reached.has(name) || !(name in schemas)) continue;
    reached.add(name);
    queue.push(...refs(schemas[name]));
  }
  const renames = new Map<string, string>();
  for (const name of reached) {
    const plain = name.endsWith('Input') ? name.slice(0, -'Input'.length) : '';
    if (plain && plain in schemas && !reached.has(plain)) renames.set(name, plain);
  }
  const kept = Object.fromEntries([...reached].map((name) => [renames.get(name) ?? name, schemas[name]]));
  const renamed = (node: unknown): unknown =>
    JSON.parse(JSON.stringify(node), (key, value) => {
      if (key !== '$ref' || typeof value !== 'string') return value;
      const name = value.slice('#/components/schemas/'.length);
      return renames.has(name) ? `#/components/schemas/${renames.get(name)}` : value;
    });
  doc.paths = renamed(doc.paths) as T['paths'];
  doc.components!.schemas = renamed(kept) as Record<string, unknown>;
  return doc;
}

/**
 * Error responses are `application/problem+json` (RFC 9457), and each lists its codes in
 * `x-problem-codes` so tools (and the catalogue test) can read them.
 */
function problemContentTypes<T extends OpenApiDoc>(doc: T): T {
  for (const methods of Object.values(doc.paths ?? {})) {
    for (const op of Object.values(methods)) {
      for (const [status, res] of Object.entries(op.responses ?? {})) {
        if (Number(status) === 200 && res.description === 'text/event-stream' && res.content?.['application/json']) {
          res.content = { 'text/event-stream': { schema: { type: 'string' } } };
          continue;
        }
        if (Number(status) < 400 || !res.content?.['application/json']) continue;
        res.content = { 'application/problem+json': res.content['application/json'] };
        const m = /^Problem codes: (.*)$/.exec(res.description ?? '');
        if (m) (res as Record<string, unknown>)['x-problem-codes'] = m[1].split(', ');
      }
    }
  }
  return doc;
}

export interface AppDeps {
  sql: Sql;
  /** Live configuration: reload replaces `config.todo` in place. */
  config: Config;
  /** Build routes only (OpenAPI generation): no LISTEN connection, no background work. */
  documentOnly?: boolean;
  /** Event-hub backstop poll interval in ms (tests shorten it). */
  eventPollMs?: number;
  /** Where the log lines go (default stdout); tests read them. */
  logStream?: { write(line: string): void };
}

export const API_VERSION = '0.1.0';

/** Fastify's `trustProxy` for COORD_TRUST_PROXY: a list of addresses, or the nearest `hops` proxies. */
function trustedProxies(v: string[] | number): string[] | ((address: string, hop: number) => boolean) {
  return typeof v === 'number' ? (_address, hop) => hop < v : v;
}

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { sql, config } = deps;
  // Scope kinds and session-stop hooks of the domain modules (src/modules.ts).
  wireModules();
  const app = Fastify({
    logger: config.logLevel === 'silent' ? false : { level: config.logLevel, ...(deps.logStream ? { stream: deps.logStream } : {}) },
    bodyLimit: config.bodyLimit,
    // `request.ip` reads X-Forwarded-For only from these proxies (COORD_TRUST_PROXY); else the socket's address.
    ...(config.trustProxy !== undefined ? { trustProxy: trustedProxies(config.trustProxy) } : {}),
    // Long ids reach the handlers (and get a problem+json 404) instead of Fastify's own 414 text.
    routerOptions: { maxParamLength: 1000 },
    // Close drains (src/http/drain.ts): in-flight requests finish, idle sockets close, and the
    // drain closes whatever is left (e.g. undici's spare idle socket, stack.md #12) at the end.
    forceCloseConnections: 'idle',
    // The drain answers requests during close itself, as problem+json `shutting_down`.
    return503OnClosing: false,
    // What the router and Node's HTTP parser refuse leaves as problem+json too.
    frameworkErrors,
    clientErrorHandler,
    // Per-request access logs cost the hot path; errors are still logged by the error handler.
    logController: new LogController({ disableRequestLogging: true }),
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerErrorHandler(app);
  registerDrain(app, config.drainTimeoutMs); // first hooks of all: see drain.ts
  refuseUnknownRoutes(app);
  app.server.on('checkExpectation', expectationFailed);
  refuseUnstorableText(app);
  // JSON only: a text/plain body is 415, not a string that fails validation.
  app.removeContentTypeParser('text/plain');

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Coord',
        version: API_VERSION,
        description:
          'A coordination service for fleets of AI coding agents: durable todo lists with atomic claims, dependency DAGs, ' +
          'leases, scenarios, Task Graph v1 and SSE events, on Postgres. Errors are RFC 9457 problem+json with a stable `code`.',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
      // Relative: the document is served by the server it describes; a client sets its own base URL.
      servers: [{ url: '/', description: 'The Coord server that serves this document' }],
      // Every tag an operation uses, declared once with what it groups.
      tags: [
        { name: 'sessions', description: 'Agent sessions: create (the token shown once), heartbeat, stop, delete; liveness and holdings' },
        { name: 'todos', description: 'Todo items (seed 000): add, list, claim, next, done, block, reopen, dependencies, scopes, attention' },
        { name: 'events', description: 'Server-Sent Events per topic, resumable, and the event log' },
        { name: 'tokens', description: 'Bearer tokens: list, create, rotate, revoke' },
        { name: 'teams', description: 'Teams and their operators' },
        { name: 'audit', description: 'Who did what: every stored change with its actor' },
        { name: 'scenarios', description: 'Scenarios (seed 000): members, derived completion, results' },
        { name: 'agents', description: 'The Agents a Task Graph v1 graph may name' },
        { name: 'graphs', description: 'Task Graph v1 (seed 002): validate, create, status, plan' },
        { name: 'graph execution', description: 'Task Graph v1 execution: run, claim, complete, recover, integrate, review' },
        { name: 'metagit task graphs', description: 'Metagit intents and task graphs (seed 001, RFC-0008)' },
        { name: 'admin', description: 'Server configuration (the server administrator)' },
        { name: 'health', description: 'Liveness, readiness and metrics' },
      ],
    },
    transform: jsonSchemaTransform,
    transformObject: (input) => sortedComponents(reachableComponents(problemContentTypes(jsonSchemaTransformObject(input) as OpenApiDoc))),
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  // Before the routes: the limiter attaches itself to each route added after it.
  const authFailures = await registerRateLimit(app, config);
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  const startedAt = performance.now();
  const hub = new EventHub(sql, deps.eventPollMs ?? 1000, (err) =>
    // During a database outage every poll fails: one line each, without the stack.
    isDatabaseUnavailable(err)
      ? app.log.warn({ code: (err as { code?: string }).code }, 'event hub: database unavailable; polling on')
      : app.log.error({ err }, 'event hub read failed'),
  );
  let openStreams = () => 0;
  const metrics = new Metrics({
    sql,
    openStreams: () => openStreams(),
    topics: () => hub.topicCount,
    listenCount: () => hub.listenCount,
    groupCommit: () => groupCommitStats(sql),
    poolMax: config.dbPoolMax,
    sweepIntervalMs: config.todo.sweepIntervalMs,
    runsSweeps: config.sweeps,
    startedAt,
    work: () => readWorkFacts(sql, config.todo.claimLeaseMs),
  });
  // Before any route: the hooks find the claim routes as they are added.
  registerMetricsHooks(app, sql, metrics);
  const principals = new PrincipalCache(config.principalCacheMs);
  hub.onSessionStopped((id) => principals.evictSession(id));
  hub.onTokenRevoked((id) => principals.evictToken(id));
  // lastSeenAt: each replica batches the sessions it saw into one write a second (sessions.liveness.ts).
  const lastSeen = new LastSeenTracker(sql, undefined, (err) =>
    isDatabaseUnavailable(err)
      ? app.log.warn({ code: (err as { code?: string }).code }, 'last-seen flush: database unavailable; kept for the next one')
      : app.log.error({ err }, 'last-seen flush failed'),
  );
  registerAuth(app, {
    sql,
    cache: principals,
    seen: deps.documentOnly ? undefined : lastSeen,
    failures: authFailures,
    onRefusal: (reason) => metrics.authRefusals.inc({ reason }),
  });
  // After authentication (keys are per principal), before any route (it documents them as added).
  registerIdempotency(app, sql, config);
  const events = eventsRoutes(app, { sql, hub, config, metrics, seen: deps.documentOnly ? undefined : (id) => lastSeen.note(id) });
  openStreams = events.openStreams;
  sessionsRoutes(app, { sql, config });
  todosRoutes(app, { sql, config, hub, seen: deps.documentOnly ? undefined : (id) => lastSeen.note(id) });
  adminRoutes(app, { config });
  for (const m of extraModules) await m(app, { sql, config });
  healthRoutes(app, { sql, config, metrics, startedAt });
  await uiRoutes(app);

  if (!deps.documentOnly) {
    app.addHook('onReady', async () => hub.start());
    app.addHook('onClose', async () => hub.stop());
    // After the drain (in-flight requests have finished): write the last seen ids before the pool closes.
    app.addHook('onClose', async () => lastSeen.close());
  }
  app.decorate('coord', { hub, openStreams: events.openStreams });
  return app;
}

declare module 'fastify' {
  interface FastifyInstance {
    coord: { hub: EventHub; openStreams: () => number };
  }
}
