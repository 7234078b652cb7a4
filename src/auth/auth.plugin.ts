import type { FastifyInstance } from 'fastify';
import type { Sql } from '../db/client.js';
import { DomainError } from '../http/errors.js';
import type { PrincipalCache } from './principal-cache.js';
import { principalForToken } from './tokens.js';

/** Where the auth hook reports each authenticated session call (sessions.liveness.ts batches them into `last_seen_at`). */
export interface SeenSink {
  note(sessionId: string): void;
}

/** The message of a 401 for a token that is unknown, revoked or expired, or whose session has stopped. */
export const STOPPED_OR_UNKNOWN = 'the token is unknown, revoked or expired, or its session has stopped; authenticate with a live token';

/**
 * 401 `unauthorized` with `WWW-Authenticate: Bearer`: no token, an unknown one, or the token of a
 * session that has stopped (also when the stop lands while the request is in flight).
 */
export function unauthorized(message: string): DomainError {
  return new DomainError('unauthorized', message, {}, 401, { 'www-authenticate': 'Bearer realm="coord"' });
}

/**
 * Whether the route registered as `routeUrl` (the matched route's own path, as `routeOptions.url`
 * gives it; undefined when no route matched) needs a principal: every `/v1/…` route and `/mcp`.
 * Decided from the route the router chose, never from the request's raw target, which can name
 * the same route in other forms (`/%76%31/me`, `http://host/v1/me`; issue 34 #1).
 */
export function routeNeedsPrincipal(routeUrl: string | undefined): boolean {
  return routeUrl !== undefined && (routeUrl.startsWith('/v1/') || routeUrl === '/mcp');
}

/**
 * Authenticates every request routed to a `/v1` route or `/mcp` (`routeNeedsPrincipal`) from
 * `Authorization: Bearer <token>` before its body is parsed. A missing or unknown token is 401
 * `unauthorized` with `WWW-Authenticate: Bearer`, so no such route's handler runs without a
 * principal. A request no route matches is left to the 404 handler. Every authenticated session
 * call is noted in `seen` (no I/O on the request's path).
 */
export function registerAuth(app: FastifyInstance, sql: Sql, cache?: PrincipalCache, seen?: SeenSink): void {
  app.decorateRequest('principal', null as never);
  app.addHook('onRequest', async (request) => {
    if (!routeNeedsPrincipal(request.routeOptions.url)) return;
    const header = request.headers.authorization;
    const m = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (!m) throw unauthorized('send Authorization: Bearer <token>');
    const principal = await principalForToken(sql, m[1], cache);
    if (!principal) throw unauthorized(STOPPED_OR_UNKNOWN);
    request.principal = principal;
    if (principal.kind === 'session') seen?.note(principal.id);
  });
}
