/**
 * Safe retries with `Idempotency-Key` (IETF draft-ietf-httpapi-idempotency-key-header).
 * One set of hooks for every state-changing `POST /v1/...` route, present and future; a read-only
 * POST opts out with `config: { idempotency: false }` (`POST /v1/graphs/validate`).
 *
 * A request without the header is untouched. With it:
 *
 * 1. `preValidation` (after authentication, before the body schema): the key must be 1–255
 *    printable ASCII characters (bare, or the draft's quoted form), else 400
 *    `invalid_idempotency_key`. The fingerprint is taken from the body as sent: sha256 of the
 *    method, the path with sorted query and the canonical JSON body (idempotency.fingerprint.ts).
 *    The raw key is used here only to derive two values (idempotency.seal.ts) and then dropped:
 *    the row's lookup hash (sha256 of a label, the principal and the key) and the answer's
 *    encryption key (HKDF-SHA256 of the key, another label, the principal).
 * 2. `preHandler` (after validation, just before the handler): one statement inserts a pending
 *    row for (principal, key hash), or finds the live one (idempotency.repo.ts `beginKey`):
 *    - new (or the old one expired, by the database clock): this request owns it and runs;
 *    - finished with the same fingerprint: the stored answer is opened with the key from this
 *      request and replayed (status, body, `content-type`, `etag`, `location`, … and
 *      `Idempotent-Replayed: true`); nothing runs. If it does not open (the row was altered),
 *      409 `idempotency_key_reused`: the key cannot be used again, nothing runs;
 *    - a different fingerprint (another body, method or path), finished or not: 409
 *      `idempotency_key_reused` (the draft says 422; Coord answers 409, like every conflict);
 *    - pending with the same fingerprint: 409 `idempotency_key_in_progress`, `Retry-After: 1`.
 * 3. `onSend` (before the answer leaves, so a client that saw any answer finds it stored): the
 *    owner stores the status, and the headers and body sealed with AES-256-GCM; except answers a retry may change and that wrote
 *    nothing — 429 and every 5xx (`busy`, `database_unavailable`, `shutting_down`, a bug) — for
 *    which it deletes the pending row, so the retry runs again. Every other answer is final:
 *    201/200, and 4xx refusals (404, 409 `already_claimed`, 422 …), replayed as they were.
 *
 * Errors before step 2 (401 from authentication, 429 from the rate limit, 503 from a draining
 * replica, 400/413/415 from parsing and validation) write no row, so nothing is remembered.
 *
 * What the database holds: never the key, and never an answer in the clear — an answer can hold a
 * secret (`POST /v1/sessions` returns the session's one-time token), and the answer is stored
 * encrypted under a key only the client holds. A dump of `idempotency_keys` shows who sent a
 * request, its method and path, a fingerprint, the status and timestamps.
 *
 * Where the guarantee ends (docs/architecture.md "Safe retries"): if the replica dies (or its
 * database connection does, for good) between the handler's commit and step 3, the pending row
 * stays. Every retry with that key then gets 409 `idempotency_key_in_progress` (with the key's
 * `expiresAt`) until the key expires; no retry runs the request again, so no duplicate is
 * created, and the client learns the outcome by reading the state (`GET`). A store or release that
 * fails because the database is briefly unreachable is retried in the background for about a
 * minute before the row is left as it is.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { z } from 'zod';
import type { Config } from '../config.js';
import type { Sql } from '../db/client.js';
import { DomainError, ERROR_CATALOGUE, type ErrorCode } from '../http/errors.js';
import { Problem } from '../http/problem.js';
import { parseIdempotencyKey, requestFingerprint } from './idempotency.fingerprint.js';
import { beginKey, finishKey, releaseKey, type KeyRef } from './idempotency.repo.js';
import { answerKey, keyHash, openAnswer, sealAnswer, type SealContext } from './idempotency.seal.js';

/** The request header, lower-case as Node delivers it. */
export const IDEMPOTENCY_HEADER = 'idempotency-key';
/** The header every replayed answer carries. */
export const REPLAYED_HEADER = 'idempotent-replayed';

/** The answer headers stored with it and replayed (the body's own headers and the resource's). */
const REPLAYED_HEADERS = ['content-type', 'etag', 'location', 'content-location', 'link', 'last-modified', 'cache-control', 'content-disposition'];

/** The codes this layer adds to every route it applies to. */
const CODES: ErrorCode[] = ['invalid_idempotency_key', 'idempotency_key_reused', 'idempotency_key_in_progress'];

/** The header's schema, shared by every route it applies to (OpenAPI documentation; the check is step 1). */
export const IdempotencyKeyHeader = z
  .string()
  .optional()
  .describe(
    'Optional. A client-chosen key (1–255 printable ASCII characters; a random UUID per logical call is ideal) that makes this POST safe to retry: ' +
      'a repeat with the same key and the same request replays the first answer (`Idempotent-Replayed: true`) and writes nothing. ' +
      'Keys are per caller and kept for COORD_IDEMPOTENCY_TTL (default 24 h). See docs/reference/http-api.md “Safe retries”.',
  );

declare module 'fastify' {
  interface FastifyContextConfig {
    /** `false` on a POST that changes nothing (e.g. a validation): the header is ignored there. */
    idempotency?: boolean;
  }
  interface FastifyRequest {
    /** Set when the request carries a valid `Idempotency-Key` on a route this layer covers. */
    idempotency: IdempotencyState | null;
  }
}

interface IdempotencyState {
  ref: KeyRef;
  /** The answer's AES-256-GCM key, derived from the raw key (which is not kept). */
  secret: Buffer;
  request: string;
  fingerprint: string;
  /** `new` until step 2; `owned` while this request holds the pending row; `replayed`; `settled`. */
  phase: 'new' | 'owned' | 'replayed' | 'settled';
  createdAt?: string;
}

function covers(method: string | string[], url: string, config: { idempotency?: boolean } | undefined): boolean {
  return (method === 'POST' || (Array.isArray(method) && method.includes('POST'))) && url.startsWith('/v1/') && config?.idempotency !== false;
}

/**
 * Says that this request's answer did nothing a retry could repeat (e.g. `next` answering
 * `{claimed:false}`): its key is released instead of storing the answer, so a retry with the same
 * key runs again (and may claim what has appeared since) rather than replaying "nothing".
 */
export function answerWroteNothing(req: FastifyRequest): void {
  const state = req.idempotency as { wroteNothing?: boolean } | null;
  if (state) state.wroteNothing = true;
}

/** Whether an answer with this status is final (stored and replayed) or released for a retry. */
export function isFinalStatus(status: number): boolean {
  return status < 500 && status !== 429 && status !== 408;
}

/** Adds `codes` to a route's `response` problem entries (the `Problem codes: …` descriptions). */
function addProblemCodes(response: Record<string | number, unknown>, codes: ErrorCode[]): void {
  for (const code of codes) {
    const status = ERROR_CATALOGUE[code].status;
    const existing = (response[status] ?? response[String(status)]) as z.ZodType | undefined;
    const m = /^Problem codes: (.*)$/.exec(existing?.description ?? '');
    if (existing && (!m || !(existing instanceof z.ZodType))) continue; // not a problem entry: leave it alone
    const listed = m ? m[1].split(', ') : [];
    delete response[String(status)];
    // The route's own problem shape (e.g. TASK_GRAPH_INVALID's) is kept; only the code list grows.
    response[status] = (existing ?? Problem).describe(`Problem codes: ${[...new Set([...listed, code])].sort().join(', ')}`);
  }
}

/** Documents the header and the codes on a covered route (mutates the route's schema before compilation). */
function documentRoute(route: RouteOptions): void {
  const schema = route.schema as { headers?: unknown; response?: Record<string | number, unknown> } | undefined;
  if (!schema) return;
  const headers = schema.headers;
  if (headers instanceof z.ZodObject) schema.headers = headers.extend({ [IDEMPOTENCY_HEADER]: IdempotencyKeyHeader });
  else if (headers === undefined) schema.headers = z.looseObject({ [IDEMPOTENCY_HEADER]: IdempotencyKeyHeader });
  if (schema.response) addProblemCodes(schema.response, CODES);
}

/**
 * Runs `fn` now and, if it fails, again at 0.5, 1, 2, 4, 8, 16 and 30 s (about a minute in all)
 * until it succeeds or the app closes; then gives up, logging once. Resolves after the first try.
 */
async function persist(app: FastifyInstance, timers: Set<NodeJS.Timeout>, what: string, fn: () => Promise<void>): Promise<void> {
  const delays = [500, 1000, 2000, 4000, 8000, 16_000, 30_000];
  const retry = (i: number, err: unknown) => {
    if (i >= delays.length) {
      app.log.warn({ err: (err as Error)?.message }, `idempotency: could not ${what}; the key stays pending until it expires`);
      return;
    }
    const timer = setTimeout(() => {
      timers.delete(timer);
      fn().catch((e) => retry(i + 1, e));
    }, delays[i]);
    timer.unref();
    timers.add(timer);
  };
  try {
    await fn();
  } catch (err) {
    retry(0, err);
  }
}

function replay(reply: FastifyReply, answer: { status: number; headers: Record<string, string>; body: Buffer }): FastifyReply {
  reply.code(answer.status);
  for (const [k, v] of Object.entries(answer.headers)) reply.header(k, v);
  reply.header(REPLAYED_HEADER, 'true');
  return reply.send(answer.body);
}

/**
 * Registers the idempotency hooks on `app`. Call it before any route is added (the `onRoute`
 * hook documents the routes as they come) and after authentication (the key is per principal).
 */
export function registerIdempotency(app: FastifyInstance, sql: Sql, config: Config): void {
  app.decorateRequest('idempotency', null);
  const timers = new Set<NodeJS.Timeout>();

  app.addHook('onRoute', (route) => {
    if (covers(route.method, route.url, route.config as { idempotency?: boolean } | undefined)) documentRoute(route);
  });

  app.addHook('preValidation', async (req: FastifyRequest) => {
    const header = req.headers[IDEMPOTENCY_HEADER];
    if (header === undefined || !req.principal || !covers(req.method, req.routeOptions.url ?? '', req.routeOptions.config)) return;
    const key = parseIdempotencyKey(Array.isArray(header) ? header.join(', ') : header);
    if (key === null) {
      throw new DomainError(
        'invalid_idempotency_key',
        'Idempotency-Key must be 1–255 printable ASCII characters (e.g. a UUID), bare or as a quoted string; nothing was done. Send a valid key, or none.',
        { errors: [{ path: 'headers.idempotency-key', message: 'must be 1–255 printable ASCII characters' }] },
      );
    }
    const path = req.url;
    const principal = `${req.principal.kind}:${req.principal.id}`;
    req.idempotency = {
      ref: { principal, keyHash: keyHash(principal, key) },
      secret: answerKey(principal, key),
      request: `${req.method} ${path.split('?')[0]}`,
      fingerprint: requestFingerprint(req.method, path, req.body),
      phase: 'new',
    };
  });

  app.addHook('preHandler', async (req, reply) => {
    const state = req.idempotency;
    if (state?.phase !== 'new') return;
    const found = await beginKey(sql, state.ref, state.request, state.fingerprint, config.idempotencyTtlMs);
    if (found?.state === 'owned') {
      state.phase = 'owned';
      state.createdAt = found.createdAt;
      return;
    }
    if (found && found.fingerprint !== state.fingerprint) {
      throw new DomainError(
        'idempotency_key_reused',
        `this Idempotency-Key was first used for a different request (${found.request}, or the same route with another body); nothing was done. ` +
          'Use a new key for a new request; resend the first request unchanged to get its answer.',
        { firstRequest: found.request, expiresAt: found.expiresAt.toISOString() },
      );
    }
    if (!found?.answer) {
      throw new DomainError(
        'idempotency_key_in_progress',
        'the first request with this Idempotency-Key has not answered yet; nothing was done. Retry after Retry-After seconds to get its answer. ' +
          'If this persists, the replica that ran it stopped before it could record the answer: read the state (GET) to learn whether it took effect; the key is forgotten at expiresAt.',
        found ? { expiresAt: found.expiresAt.toISOString() } : {},
        409,
        { 'retry-after': '1' },
      );
    }
    const context: SealContext = { keyHash: state.ref.keyHash, status: found.answer.status, fingerprint: found.fingerprint, request: found.request };
    const opened = openAnswer(state.secret, context, found.answer.sealed);
    if (!opened) {
      // The hash matched, so only an altered row (or a sha256 collision) gets here. Not a 500, and not
      // "absent" (running the request again could do it twice): the key is spent.
      throw new DomainError(
        'idempotency_key_reused',
        `the answer stored under this Idempotency-Key (first used for ${found.request}) could not be decrypted with it, so it cannot be replayed; nothing was done. ` +
          'Read the state (GET) to learn whether the first request took effect; use a new key for a new request.',
        { firstRequest: found.request, expiresAt: found.expiresAt.toISOString() },
      );
    }
    state.phase = 'replayed';
    return replay(reply, { status: found.answer.status, ...opened });
  });

  app.addHook('onSend', async (req, reply, payload) => {
    const state = req.idempotency;
    if (state?.phase !== 'owned') return payload;
    state.phase = 'settled';
    const createdAt = state.createdAt!;
    const body = typeof payload === 'string' ? Buffer.from(payload) : Buffer.isBuffer(payload) ? payload : null;
    if (body && isFinalStatus(reply.statusCode) && !(state as { wroteNothing?: boolean }).wroteNothing) {
      const headers: Record<string, string> = {};
      for (const name of REPLAYED_HEADERS) {
        const v = reply.getHeader(name);
        if (v !== undefined) headers[name] = Array.isArray(v) ? v.join(', ') : String(v);
      }
      const status = reply.statusCode;
      const context: SealContext = { keyHash: state.ref.keyHash, status, fingerprint: state.fingerprint, request: state.request };
      const answer = { status, sealed: sealAnswer(state.secret, context, headers, body) };
      await persist(app, timers, 'store an answer', () => finishKey(sql, state.ref, createdAt, answer));
    } else {
      // Not final (or a streamed body that cannot be replayed): let a retry run again.
      await persist(app, timers, 'release a key', () => releaseKey(sql, state.ref, createdAt));
    }
    return payload;
  });

  app.addHook('onClose', async () => {
    for (const t of timers) clearTimeout(t);
    timers.clear();
  });
}
