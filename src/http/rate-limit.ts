/**
 * Rate limits per bearer token, with @fastify/rate-limit's in-memory store: each
 * replica counts on its own, so a fleet of N replicas behind a balancer that spreads a token's
 * requests lets that token make up to N × `COORD_RATE_LIMIT` per window. A Postgres-backed count
 * would add a write to every request (the claim cycle is two statements), so it is not used.
 *
 * - Key: sha256 of the token, once the auth hook has accepted it (the limiter runs after it, as a
 *   route-level `onRequest` hook); a request to a route without authentication (`/docs`,
 *   `/openapi.json`) is keyed by its client address. A request whose token is refused gets its
 *   401 before this limiter runs; failed authentication has its own limit ({@link AuthFailures}).
 * - Exempt: routes with `config: { rateLimit: false }` (`/healthz`, `/readyz`, `/metrics`).
 * - An SSE stream is one request: it counts once, when it opens, however long it stays open.
 * - Over the limit: 429 `rate_limited` problem+json with `Retry-After` (seconds until the window
 *   resets) and `retryAfterSeconds`, `limit`, `windowSeconds` members.
 */
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { hashToken } from '../lib/ids.js';
import type { Config } from '../config.js';
import { DomainError } from './errors.js';

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** The limiter's key: `token:<sha256>` for an authenticated request, `ip:<address>` otherwise. */
export function rateLimitKey(req: FastifyRequest): string {
  const token = req.principal ? BEARER.exec(req.headers.authorization ?? '')?.[1] : undefined;
  return token ? `token:${hashToken(token)}` : `ip:${req.ip}`;
}

/**
 * Failed authentication per client address: the auth hook asks {@link retryAfter}
 * before it asks the database about a token it does not know, and {@link fail} counts each token
 * refused. Past `COORD_AUTH_FAILURE_LIMIT` failures in a window, an address's unknown tokens are
 * refused with 429 `rate_limited` until the window ends, without a database round trip; tokens
 * the replica already knows (the principal cache) still pass. The address is the socket's, or
 * `X-Forwarded-For`'s behind a proxy named in `COORD_TRUST_PROXY` (Fastify's `request.ip`).
 */
export interface AuthFailures {
  /** Seconds until `req`'s address may be asked about again, when it is over the limit; else undefined. */
  retryAfter(req: FastifyRequest): Promise<number | undefined>;
  /** Counts one failed authentication of `req`'s address. */
  fail(req: FastifyRequest): Promise<void>;
  /** The 429 for an address over the limit, `seconds` before it may try again. */
  refusal(seconds: number): DomainError;
}

/** The 429 `rate_limited` problem: `who` made more than `limit` `what` in `windowSeconds`; retry in `seconds`. */
function rateLimited(who: string, what: string, limit: number, windowSeconds: number, seconds: number, setting: string): DomainError {
  return new DomainError(
    'rate_limited',
    `${who} made more than ${limit} ${what} in ${windowSeconds} s on this replica; wait ${seconds} s (Retry-After) and retry. ` +
      `Nothing was done. The limit is ${setting}.`,
    { retryAfterSeconds: seconds, limit, windowSeconds },
    429,
    { 'retry-after': String(seconds) },
  );
}

/**
 * Registers @fastify/rate-limit: per token on every route added after it when `config.rateLimit`
 * > 0 (must be awaited before any route is added), and returns the failed-authentication limit
 * when `config.authFailureLimit` > 0 (each with its own in-memory counts).
 */
export async function registerRateLimit(app: FastifyInstance, config: Config): Promise<AuthFailures | undefined> {
  const windowSeconds = Math.round(config.rateLimitWindowMs / 1000);
  await app.register(rateLimit, {
    global: config.rateLimit > 0,
    max: Math.max(config.rateLimit, 1),
    timeWindow: config.rateLimitWindowMs,
    keyGenerator: rateLimitKey,
    errorResponseBuilder: (req, ctx) =>
      rateLimited(
        req.principal ? 'this token' : 'this client address',
        'requests',
        ctx.max,
        windowSeconds,
        Math.max(1, Math.ceil(ctx.ttl / 1000)),
        'COORD_RATE_LIMIT requests per COORD_RATE_LIMIT_WINDOW, per token and replica',
      ),
  });
  if (config.authFailureLimit <= 0) return undefined;
  const limit = config.authFailureLimit;
  const failWindowSeconds = Math.round(config.authFailureWindowMs / 1000);
  const counter = app.createRateLimit({ max: limit, timeWindow: config.authFailureWindowMs, keyGenerator: (req) => `auth-failures:${req.ip}` });
  return {
    async retryAfter(req) {
      const status = await counter(req, { increment: false });
      return !status.isAllowed && status.isExceeded ? Math.max(1, status.ttlInSeconds) : undefined;
    },
    async fail(req) {
      await counter(req);
    },
    refusal: (seconds) =>
      rateLimited(
        'this client address',
        'failed authentications',
        limit,
        failWindowSeconds,
        seconds,
        'COORD_AUTH_FAILURE_LIMIT refused tokens per COORD_AUTH_FAILURE_WINDOW, per client address and replica',
      ),
  };
}
