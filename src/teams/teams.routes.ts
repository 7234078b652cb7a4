/**
 * `POST /v1/teams`, `GET /v1/teams`, `GET /v1/teams/{id}`, `POST /v1/teams/{id}/operators`
 * teams and their operators, managed without SQL. The rules are in teams.service.ts.
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Config } from '../config.js';
import type { Sql } from '../db/client.js';
import { problemResponses } from '../http/problem.js';
import { Token } from '../tokens/tokens.routes.js';
import { addOperator, createTeam, getTeam, listTeams } from './teams.service.js';

const tags = ['teams'];

/** Team names: the pattern of scenario names (src/scenarios/scenarios.plan.ts), so they sit in a shell line or a URL as they are. */
const TeamName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/, 'a team name is 1–100 letters, digits, ".", "_" or "-", starting with a letter or digit')
  .describe('Unique on the server, e.g. `platform`');

/** Operator names: the pattern of token names (printable ASCII words). */
const OperatorName = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[\x21-\x7e]+( [\x21-\x7e]+)*$/, 'printable ASCII words separated by single spaces')
  .describe('e.g. `alice`; need not be unique');

const teamShape = {
  id: z.string().describe('`tm-…`; the server administrator’s team is `tm-default`'),
  name: z.string(),
  createdAt: z.string().describe('ISO 8601'),
  createdBy: z.string().describe('The user id of the administrator that created it (`bootstrap` for `tm-default`)'),
  operatorCount: z.number().int(),
};

export const Team = z.object(teamShape).meta({ id: 'Team', description: 'A team: its operators, sessions and everything they make belong to it' });

export const TeamOperator = z
  .object({
    id: z.string().describe('`u-…`'),
    name: z.string(),
    teamId: z.string(),
    role: z.enum(['operator', 'admin']).describe('`admin`: the server administrator (creates teams); `operator` otherwise'),
    createdAt: z.string().describe('ISO 8601'),
  })
  .meta({ id: 'TeamOperator', description: 'An operator of a team (never its tokens)' });

const TeamDetail = z
  .object({ ...teamShape, operators: z.array(TeamOperator).describe('Oldest first') })
  .meta({ id: 'TeamDetail', description: 'A team with its operators' });

const secret = z.string().describe('The operator’s `default` bearer token. Shown only in this response; Coord keeps only its sha256');

const OperatorWithSecret = z
  .object({ operator: TeamOperator, token: Token, secret })
  .meta({ id: 'OperatorWithSecret', description: 'A new operator with its first token (`default`) and that token’s secret, shown once' });

const CreatedTeam = z
  .object({ team: Team, operator: TeamOperator, token: Token, secret })
  .meta({ id: 'CreatedTeam', description: 'A new team, its first operator, and that operator’s first token (`default`) with its secret, shown once' });

const TeamParams = z.object({ id: z.string().max(100) });

const SESSIONS = 'Sessions get `forbidden`.';

/** Registers the team routes. */
export function teamsRoutes(app: FastifyInstance, deps: { sql: Sql; config: Config }) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const { sql } = deps;

  r.post(
    '/v1/teams',
    {
      schema: {
        tags,
        operationId: 'teamsCreate',
        summary: 'Create a team',
        description:
          'A new team (`tm-…`) with its first operator (role `operator`) and that operator’s `default` token, all in one transaction. ' +
          'Answers 201 `{team, operator, token, secret}`; the secret is in this response only: hand it to the team’s operator, who can ' +
          'add more operators (POST /v1/teams/{id}/operators) and make more tokens. Team names are unique on the server (`team_name_taken`). ' +
          'The server administrator only (an operator with role `admin`: the one the first start or COORD_ADMIN_TOKEN made); other operators and sessions get `forbidden`.',
        body: z.strictObject({
          name: TeamName,
          operator: z.strictObject({ name: OperatorName }).describe('The team’s first operator'),
        }),
        response: { 201: CreatedTeam, ...problemResponses('validation_failed', 'forbidden', 'team_name_taken') },
      },
    },
    async (req, reply) => reply.code(201).send(await createTeam(sql, req.principal, req.body)),
  );

  r.get(
    '/v1/teams',
    {
      schema: {
        tags,
        operationId: 'teamsList',
        summary: 'List teams',
        description:
          'The teams you may see, oldest first, each with its number of operators: every team for the server administrator, your own for any other operator. ' +
          SESSIONS,
        response: { 200: z.object({ teams: z.array(Team) }).meta({ id: 'TeamList' }), ...problemResponses('forbidden') },
      },
    },
    async (req) => ({ teams: await listTeams(sql, req.principal) }),
  );

  r.get(
    '/v1/teams/:id',
    {
      schema: {
        tags,
        operationId: 'teamsGet',
        summary: 'Read a team',
        description:
          'One team with its operators (id, name, role, createdAt; never a token). The server administrator reads any team, an operator its own; ' +
          `another team’s id is \`not_found\`, exactly as an id that does not exist. ${SESSIONS}`,
        params: TeamParams,
        response: { 200: TeamDetail, ...problemResponses('forbidden', 'not_found') },
      },
    },
    async (req) => getTeam(sql, req.principal, req.params.id),
  );

  r.post(
    '/v1/teams/:id/operators',
    {
      schema: {
        tags,
        operationId: 'teamsAddOperator',
        summary: 'Add an operator to a team',
        description:
          'A new operator (role `operator`) of the team, with its `default` token: 201 `{operator, token, secret}`, the secret in this response only. ' +
          'The server administrator adds to any team, an operator to its own; another team’s id is `not_found`, exactly as an id that does not exist. ' +
          SESSIONS,
        params: TeamParams,
        body: z.strictObject({ name: OperatorName }),
        response: { 201: OperatorWithSecret, ...problemResponses('validation_failed', 'forbidden', 'not_found') },
      },
    },
    async (req, reply) => reply.code(201).send(await addOperator(sql, req.principal, req.params.id, req.body)),
  );
}
