/**
 * Rate limits per bearer token (issue 18), with @fastify/rate-limit's in-memory store: each
 * replica counts on its own, so a fleet of N replicas behind a balancer that spreads a token's
 * requests lets that token make up to N × `COORD_RATE_LIMIT` per window. A Postgres-backed count
 * would add a write to every request (the claim cycle is two statements), so it is not used.
 *
 * - Key: sha256 of the token, once the auth hook has accepted it (the limiter runs after it, as a
 *   route-level `onRequest` hook); a request to a route without authentication (`/docs`,
 *   `/openapi.json`) is keyed by its client address. A request whose token is refused gets its
 *   401 before the limiter runs: failed authentication is not rate limited here.
 * - Exempt: routes with `config: { rateLimit: false }` (`/healthz`, `/readyz`, `/metrics`).
 * - An SSE stream is one request: it counts once, when it opens, however long it stays open.
 * - Over the limit: 429 `rate_limited` problem+json with `Retry-After` (seconds until the window
 *   resets) and `retryAfterSeconds`, `limit`, `windowSeconds` members.
 */
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { hashToken } from '../auth/tokens.js';
import type { Config } from '../config.js';
import { DomainError } from './errors.js';

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** The limiter's key: `token:<sha256>` for an authenticated request, `ip:<address>` otherwise. */
export function rateLimitKey(req: FastifyRequest): string {
  const token = req.principal ? BEARER.exec(req.headers.authorization ?? '')?.[1] : undefined;
  return token ? `token:${hashToken(token)}` : `ip:${req.ip}`;
}

/**
 * Registers the limiter when `config.rateLimit` > 0 (a no-op otherwise). Must be awaited before
 * any route is added: it attaches itself to the routes added after it.
 */
export async function registerRateLimit(app: FastifyInstance, config: Config): Promise<void> {
  if (config.rateLimit <= 0) return;
  const windowSeconds = Math.round(config.rateLimitWindowMs / 1000);
  await app.register(rateLimit, {
    max: config.rateLimit,
    timeWindow: config.rateLimitWindowMs,
    keyGenerator: rateLimitKey,
    errorResponseBuilder: (req, ctx) => {
      const seconds = Math.max(1, Math.ceil(ctx.ttl / 1000));
      const who = req.principal ? 'this token' : 'this client address';
      return new DomainError(
        'rate_limited',
        `${who} made more than ${ctx.max} requests in ${windowSeconds} s on this replica; wait ${seconds} s (Retry-After) and retry. ` +
          'Nothing was done. The limit is COORD_RATE_LIMIT requests per COORD_RATE_LIMIT_WINDOW, per token and replica.',
        { retryAfterSeconds: seconds, limit: ctx.max, windowSeconds },
        429,
        { 'retry-after': String(seconds) },
      );
    },
  });
}
