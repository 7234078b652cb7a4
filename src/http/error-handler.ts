import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from 'fastify-type-provider-zod';
import { DomainError, type FieldProblem } from './errors.js';
import { problemBody } from './problem.js';
import { isDatabaseUnavailable } from '../db/unavailable.js';

/** Postgres SQLSTATEs a client's request can run into under load, mapped to 503 `busy` with Retry-After. */
const PG_BUSY = new Set(['55P03', '57014', '53300', '40001', '40P01']);

/**
 * The single error handler: every failure leaves as `application/problem+json` (RFC 9457).
 * Expected failures are logged at `info`/`warn`, bugs at `error`; 5xx details are never leaked.
 */
export function registerErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    if (request.raw.socket?.destroyed && !(err instanceof DomainError)) {
      // The client went away mid-request (a reset while its body was read, say): nobody is left
      // to answer, and the error says nothing about the database. Never logged
      // as "database unavailable", the line operators alert on in a real outage.
      request.log.info({ code: err.code ?? err.message, method: request.method, route: request.routeOptions.url }, 'client aborted the request');
      return reply.hijack();
    }
    reply.type('application/problem+json');
    if (err instanceof DomainError) {
      for (const [k, v] of Object.entries(err.headers)) reply.header(k, v);
      return reply.status(err.status).send(problemBody(err.code, err.message, err.status, err.extra));
    }
    if (hasZodFastifySchemaValidationErrors(err)) {
      const errors: FieldProblem[] = err.validation.map((v) => ({
        path: [
          err.validationContext ?? 'body',
          ...String(v.instancePath ?? '')
            .split('/')
            .filter(Boolean),
        ].join('.'),
        message: v.message ?? 'invalid',
      }));
      const detail = errors.map((e) => `${e.path}: ${e.message}`).join('; ');
      return reply.status(400).send(problemBody('validation_failed', detail, 400, { errors }));
    }
    if (isResponseSerializationError(err)) {
      request.log.error({ err, cause: err.cause }, 'response did not match its schema');
      return reply.status(500).send(problemBody('internal_error', undefined, 500));
    }
    const code = err.code;
    if (code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      return reply.status(413).send(problemBody('payload_too_large', err.message, 413));
    }
    if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      return reply.status(415).send(problemBody('unsupported_media_type', `${err.message}: send the body as JSON with content-type: application/json`, 415));
    }
    if (code === 'FST_ERR_CTP_EMPTY_JSON_BODY' || code === 'FST_ERR_CTP_INVALID_JSON_BODY' || err instanceof SyntaxError) {
      return reply.status(400).send(problemBody('malformed_json', err.message, 400));
    }
    if (code === '22021' || code === '22P05') {
      // Text Postgres cannot store (a NUL character, or bytes invalid in UTF-8): the client's input.
      return reply.status(400).send(problemBody('validation_failed', 'text must not contain NUL (U+0000) characters', 400));
    }
    if (code && /^23/.test(code)) {
      // Integrity constraint: every input a client controls is checked first, so this is a missing
      // check (logged as such), yet still the client's request, refused whole: never a 500.
      const constraint = (err as { constraint_name?: string }).constraint_name;
      request.log.warn({ err }, 'constraint violation reached the error handler');
      return reply
        .status(409)
        .send(
          problemBody(
            'constraint_violation',
            `the change conflicts with stored data${constraint ? ` (${constraint})` : ''}; nothing was written; retry, and report it if it repeats`,
            409,
            constraint ? { constraint } : {},
          ),
        );
    }
    if (code && PG_BUSY.has(code)) {
      request.log.warn({ err }, 'database busy');
      reply.header('retry-after', '1');
      return reply.status(503).send(problemBody('busy', 'the database did not grant a lock in time; retry', 503));
    }
    if (isDatabaseUnavailable(err)) {
      // Logged without the stack: during an outage every request lands here.
      request.log.warn({ code: code ?? err.message }, 'database unavailable');
      reply.header('retry-after', '1');
      return reply
        .status(503)
        .send(
          problemBody(
            'database_unavailable',
            'the database is unreachable; retry after Retry-After seconds. A write cut off while it committed may still have been applied: read before repeating one that is not safe to repeat',
            503,
          ),
        );
    }
    if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
      return reply.status(err.statusCode).send(problemBody('validation_failed', err.message, err.statusCode));
    }
    request.log.error({ err }, 'unhandled error');
    return reply.status(500).send(problemBody('internal_error', undefined, 500));
  });

  app.setNotFoundHandler((request, reply) => {
    reply
      .type('application/problem+json')
      .status(404)
      .send(problemBody('not_found', noRoute(request), 404));
  });
}

const noRoute = (request: FastifyRequest) => `no route ${request.method} ${request.url.split('?')[0]}`;

/**
 * A request no route matches is 404 `not_found` at once, before its body is read:
 * otherwise an unknown method and path with a broken or oversized body answered 400
 * `malformed_json` or 413 from the body parser. Registered after the drain's hook.
 */
export function refuseUnknownRoutes(app: FastifyInstance): void {
  app.addHook('onRequest', async (request) => {
    if (request.is404) throw new DomainError('not_found', noRoute(request), {}, 404);
  });
}

/**
 * Node's answer to an `Expect` header other than `100-continue` is a bare 417 with no body; this
 * one is problem+json `expectation_failed`. Install on the HTTP server's
 * `checkExpectation` event. The request is not read, so the connection is closed.
 */
export function expectationFailed(req: IncomingMessage, res: ServerResponse): void {
  const body = JSON.stringify(
    problemBody(
      'expectation_failed',
      `Coord meets only "Expect: 100-continue", not "Expect: ${req.headers.expect}"; send the request without that header`,
      417,
    ),
  );
  res.writeHead(417, { 'content-type': 'application/problem+json; charset=utf-8', 'content-length': Buffer.byteLength(body), connection: 'close' });
  res.end(body);
}

/**
 * Fastify's `frameworkErrors`: what its router refuses before any route runs (a path with bad
 * percent-encoding, a path parameter over `maxParamLength`) leaves as problem+json too.
 */
export function frameworkErrors(err: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  reply.type('application/problem+json');
  if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    void reply.status(414).send(problemBody('uri_too_long', 'a path segment is longer than 1,000 characters; no Coord id is that long, so check the id', 414));
    return;
  }
  void reply
    .status(400)
    .send(problemBody('malformed_url', 'the request path is not valid percent-encoded UTF-8; encode each path segment with encodeURIComponent', 400));
}

const CLIENT_ERRORS: Record<string, [number, string, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'headers_too_large', 'the request headers exceed 16 KiB; send fewer or shorter headers'],
};

/**
 * Fastify's `clientErrorHandler`: Node's HTTP parser refused the request (headers too large,
 * bytes that are not HTTP). Answers problem+json on the raw socket, then closes it.
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, code, detail] = CLIENT_ERRORS[err.code ?? ''] ?? [
    400,
    'malformed_request',
    'the HTTP parser refused the request; send a well-formed HTTP/1.1 request',
  ];
  const body = JSON.stringify(problemBody(code, detail, status));
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/problem+json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
