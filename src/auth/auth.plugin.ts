import type { FastifyInstance } from 'fastify';
import type { Sql } from '../db/client.js';
import { DomainError } from '../http/errors.js';
import type { PrincipalCache } from './principal-cache.js';
import { principalForToken } from './tokens.js';

/**
 * Authenticates every `/v1` request from `Authorization: Bearer <token>` before its body is
 * parsed. A missing or unknown token is 401 `unauthorized` with `WWW-Authenticate: Bearer`.
 */
export function registerAuth(app: FastifyInstance, sql: Sql, cache?: PrincipalCache): void {
  app.decorateRequest('principal', null as never);
  app.addHook('onRequest', async (request) => {
    if (!request.url.startsWith('/v1/')) return;
    const header = request.headers.authorization;
    const m = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    const headers = { 'www-authenticate': 'Bearer realm="coord"' };
    if (!m) throw new DomainError('unauthorized', 'send Authorization: Bearer <token>', {}, 401, headers);
    const principal = await principalForToken(sql, m[1], cache);
    if (!principal) throw new DomainError('unauthorized', 'the token is unknown or its session has stopped', {}, 401, headers);
    request.principal = principal;
  });
}
