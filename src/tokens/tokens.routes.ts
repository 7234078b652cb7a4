/**
 * `GET /v1/tokens`, `POST /v1/tokens`, `POST /v1/tokens/{id}/rotate`, `DELETE /v1/tokens/{id}`
 * bearer tokens managed without SQL. The rules are in tokens.service.ts.
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Config } from '../config.js';
import type { Sql } from '../db/client.js';
import { problemResponses } from '../http/problem.js';
import { parseDuration } from '../lib/duration.js';
import { createToken, listTokens, MAX_TOKENS_PER_PRINCIPAL, revokeToken, rotateToken } from './tokens.service.js';

const tags = ['tokens'];

/** The longest lifetime a token may be given: 10 years. */
const MAX_EXPIRES_IN_MS = 3650 * 86_400_000;

const Duration = z
  .string()
  .max(40)
  .superRefine((text, ctx) => {
    let ms: number;
    try {
      ms = parseDuration(text);
    } catch (err) {
      return void ctx.addIssue({ code: 'custom', message: (err as Error).message });
    }
    if (ms < 1000 || ms > MAX_EXPIRES_IN_MS) ctx.addIssue({ code: 'custom', message: `"${text}" is out of range: use 1s to 3650d` });
  })
  .describe('A duration such as `30m`, `12h`, `90d` (1s to 3650d), counted from the database clock');

export const Token = z
  .object({
    id: z.string().describe('`tk-…`'),
    name: z.string().describe('Chosen by its owner; unique among the owner’s unrevoked tokens. `default` is the token a principal was created with'),
    principal: z.object({ kind: z.enum(['user', 'session']), id: z.string() }).describe('The owner: an operator or a session'),
    createdAt: z.string().describe('ISO 8601'),
    createdBy: z.string().nullable().describe('The user or session id that created it'),
    rotatedAt: z.string().nullable().describe('Last rotation (new secret, same id), ISO 8601'),
    expiresAt: z.string().nullable().describe('Refused from this instant, by the database clock; null = never'),
    revokedAt: z.string().nullable(),
    state: z
      .enum(['active', 'expired', 'revoked', 'stopped'])
      .describe('By the database clock at the time of the read; `stopped`: its session has stopped, so it no longer authenticates'),
    current: z.boolean().describe('Whether this request was made with this token'),
  })
  .meta({ id: 'Token', description: 'A bearer token, never its secret' });

const TokenWithSecret = z
  .object({ token: Token, secret: z.string().describe('The bearer token itself. Shown only in this response; Coord keeps only its sha256') })
  .meta({ id: 'TokenWithSecret' });

const TokenParams = z.object({ id: z.string().max(100) });

/** Registers the token routes. */
export function tokensRoutes(app: FastifyInstance, deps: { sql: Sql; config: Config }) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const { sql } = deps;

  r.get(
    '/v1/tokens',
    {
      schema: {
        tags,
        operationId: 'tokensList',
        summary: 'List tokens',
        description:
          'Your tokens, newest first: every unrevoked one, and with `includeRevoked=true` also the latest revoked ones. Operators may (within their team) ' +
          'pass `principal` (a user or session id) to list another principal’s, or `principalKind=user` to list every operator’s ' +
          '(at most 1000, e.g. to find operators that earlier COORD_ADMIN_TOKEN values created); sessions may list only their own (`forbidden`). ' +
          'Secrets are never shown.',
        querystring: z.strictObject({
          principal: z.string().min(1).max(100).optional().describe('A user or session id (operators only; `not_found` if it is neither); default: you'),
          principalKind: z.enum(['user']).optional().describe('`user`: every operator’s tokens (operators only; not with `principal`)'),
          includeRevoked: z.enum(['true', 'false']).optional().describe('Also list revoked tokens'),
        }),
        response: { 200: z.object({ tokens: z.array(Token) }).meta({ id: 'TokenList' }), ...problemResponses('validation_failed', 'forbidden', 'not_found') },
      },
    },
    async (req) => ({
      tokens: await listTokens(sql, req.principal, {
        principalId: req.query.principal,
        principalKind: req.query.principalKind,
        includeRevoked: req.query.includeRevoked === 'true',
      }),
    }),
  );

  r.post(
    '/v1/tokens',
    {
      schema: {
        tags,
        operationId: 'tokensCreate',
        summary: 'Create a token',
        description:
          `A new token for you (an operator or a session), with the same authority as the one you called with. \`name\` is unique among ` +
          `your unrevoked tokens (\`token_name_taken\`); you may hold ${MAX_TOKENS_PER_PRINCIPAL} unrevoked tokens (\`token_limit_reached\`). ` +
          'With `expiresIn` it is refused from that long after the database’s `now()`. The secret is in this response only. ' +
          'A session’s tokens all stop working when the session stops.',
        body: z.strictObject({
          name: z
            .string()
            .min(1)
            .max(100)
            .regex(/^[\x21-\x7e]+( [\x21-\x7e]+)*$/, 'printable ASCII words separated by single spaces')
            .describe('e.g. `ci`, `laptop`'),
          expiresIn: Duration.nullish(),
        }),
        response: { 201: TokenWithSecret, ...problemResponses('validation_failed', 'token_name_taken', 'token_limit_reached') },
      },
    },
    async (req, reply) => {
      const b = req.body;
      const out = await createToken(sql, req.principal, { name: b.name, expiresInMs: b.expiresIn ? parseDuration(b.expiresIn) : undefined });
      return reply.code(201).send(out);
    },
  );

  r.post(
    '/v1/tokens/:id/rotate',
    {
      schema: {
        tags,
        operationId: 'tokensRotate',
        summary: 'Rotate a token',
        description:
          'A new secret for one of your own unrevoked tokens (same id and name). The old secret is refused at once on every replica, ' +
          'and event streams opened with it end. `expiresIn` sets a new expiry from the database’s `now()`, `null` removes it, and ' +
          'omitting it keeps the current one (an expired token needs a new one: `invalid_transition`). Another principal’s token is ' +
          '`token_not_found`, operators included: rotating hands out the secret. An expiry for the last operator token without one is `last_operator_token`.',
        params: TokenParams,
        body: z.strictObject({ expiresIn: Duration.nullish() }).nullish(),
        response: { 200: TokenWithSecret, ...problemResponses('validation_failed', 'token_not_found', 'invalid_transition', 'last_operator_token') },
      },
    },
    async (req) => {
      const e = req.body?.expiresIn;
      return rotateToken(sql, req.principal, req.params.id, { expiresInMs: e === undefined ? undefined : e === null ? null : parseDuration(e) });
    },
  );

  r.delete(
    '/v1/tokens/:id',
    {
      schema: {
        tags,
        operationId: 'tokensRevoke',
        summary: 'Revoke a token',
        description:
          'Refused at once on every replica, and event streams opened with it end; the record stays so that what it did stays ' +
          'attributable. Sessions revoke their own tokens, operators anyone’s in their team (another’s is `token_not_found` to a session, another team’s to everyone). ' +
          'Idempotent. A team’s last operator token without an expiry cannot be revoked (`last_operator_token`): create another without `expiresIn` first. ' +
          'A session left without a live token can do nothing more: stop it and register a new one.',
        params: TokenParams,
        response: { 200: Token, ...problemResponses('token_not_found', 'last_operator_token') },
      },
    },
    async (req) => revokeToken(sql, req.principal, req.params.id),
  );
}
