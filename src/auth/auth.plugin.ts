import type { FastifyInstance } from 'fastify';
import type { Sql } from '../db/client.js';
import { DomainError } from '../http/errors.js';
import type { AuthFailures } from '../http/rate-limit.js';
import type { PrincipalCache } from './principal-cache.js';
import { hashToken } from '../lib/ids.js';
import { principalForToken } from './principals.repo.js';

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
 * the same route in other forms (`/%76%31/me`, `http://host/v1/me`).
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
 *
 * Refusals are cheap: a token the replica knows (`cache`) costs no statement; one
 * the database refused lately is refused again from `cache`; and an address over the
 * failed-authentication limit (`failures`) gets 429 `rate_limited` for any token this replica has
 * not accepted in the last {@link KNOWN_TOKEN_MS}, without a database round trip, held back
 * {@link REFUSAL_HOLD_MS} before it is sent: a client that ignores `Retry-After` and sends again at
 * once gets one answer a second per connection, so a flood stops costing the replica CPU that its
 * other clients need. Each token the database refused counts against its address (a refusal
 * served from the cache costs nothing and does not).
 */
/** How long a token this replica accepted is exempt from the failed-authentication limit: a day. */
export const KNOWN_TOKEN_MS = 86_400_000;

/** How long a 429 of the failed-authentication limit is held before it is sent, at most (ms). */
export const REFUSAL_HOLD_MS = 1000;

/** Why authentication refused a request (`coord_auth_refusals_total`'s `reason`). */
export type RefusalReason = 'missing' | 'database' | 'cached' | 'rate_limited';

export interface AuthOptions {
  sql: Sql;
  /** Token → principal cache, which also keeps refusals (principal-cache.ts). */
  cache?: PrincipalCache;
  /** Where each authenticated session call is noted. */
  seen?: SeenSink;
  /** The failed-authentication limit per client address (rate-limit.ts); undefined: none. */
  failures?: AuthFailures;
  /** Told of every refusal, with its reason (the metrics). */
  onRefusal?: (reason: RefusalReason) => void;
}

export function registerAuth(app: FastifyInstance, { sql, cache, seen, failures, onRefusal }: AuthOptions): void {
  app.decorateRequest('principal', null as never);
  app.addHook('onRequest', async (request) => {
    if (!routeNeedsPrincipal(request.routeOptions.url)) return;
    const header = request.headers.authorization;
    const m = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (!m) {
      onRefusal?.('missing');
      throw unauthorized('send Authorization: Bearer <token>');
    }
    const hash = hashToken(m[1]);
    let principal = cache?.get(hash);
    if (!principal) {
      const wait = failures && !cache?.acceptedWithin(hash, KNOWN_TOKEN_MS) ? await failures.retryAfter(request) : undefined;
      if (wait !== undefined) {
        onRefusal?.('rate_limited');
        await new Promise((r) => setTimeout(r, Math.min(wait * 1000, REFUSAL_HOLD_MS)));
        throw failures!.refusal(wait);
      }
      const cached = cache?.isRefused(hash) ?? false;
      principal = await principalForToken(sql, m[1], cache);
      if (!principal) {
        onRefusal?.(cached ? 'cached' : 'database');
        // Only a lookup counts: a client repeating one bad token costs one per refusal-cache lifetime.
        if (!cached) await failures?.fail(request);
        throw unauthorized(STOPPED_OR_UNKNOWN);
      }
    }
    request.principal = principal;
    if (principal.kind === 'session') seen?.note(principal.id);
  });
}
