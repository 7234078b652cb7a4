/**
 * Scenario routes (docs/architecture.md §D7; seed 000 "In scenarios"). Importing this file registers the
 * `scenario:` scope kind (./scenarios.scope.ts), so the todo, export and event routes accept
 * `scenario:<name|id>` whenever the app is built.
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Config } from '../config.js';
import type { Sql } from '../db/client.js';
import { problemResponses } from '../http/problem.js';
import {
  CreateScenarioBody,
  CreatedScenario,
  ListScenariosQuery,
  MemberParams,
  PublishedResult,
  PublishResultBody,
  Scenario,
  ScenarioList,
  ScenarioParams,
  ScenarioStatus,
} from './scenarios.schemas.js';
import { createScenario, getScenario, listScenarios, publishResult, renderStatusText, scenarioStatus, type ScenarioCtx } from './scenarios.service.js';

const tags = ['scenarios'];

/** Registers `POST /v1/scenarios`, `GET /v1/scenarios`, `GET /v1/scenarios/{name}`, `…/status`, `…/members/{member}/result`. */
export function scenariosRoutes(app: FastifyInstance, deps: { sql: Sql; config: Config }) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const ctx = (req: { principal: ScenarioCtx['principal'] }): ScenarioCtx => ({ sql: deps.sql, config: deps.config, principal: req.principal });

  r.post(
    '/v1/scenarios',
    {
      schema: {
        tags,
        operationId: 'scenariosCreate',
        summary: 'Start a scenario',
        description:
          'Creates the scenario, a session for every member without `session` (a child of the orchestrator), one assigned, ownerless ' +
          'seed item per member with a task in `scenario:<id>`, and the member-name dependency edges between seeds, all in one ' +
          'transaction (seed 000 “In scenarios”). Validation follows the seed: unknown member names, duplicates, self references, a ' +
          'dependency on a member without a task, a dependent without a task, and cycles are each their own 422. Callers: a user, or ' +
          'a session that becomes the orchestrator itself. Tokens of created sessions are returned once.',
        body: CreateScenarioBody,
        response: {
          201: CreatedScenario,
          ...problemResponses(
            'forbidden',
            'session_not_found',
            'session_not_active',
            'scenario_name_taken',
            'payload_too_large',
            'malformed_json',
            'scenario_member_unknown',
            'scenario_member_duplicate',
            'scenario_member_self_dependency',
            'scenario_dependency_without_task',
            'scenario_dependent_without_task',
            'scenario_dependency_cycle',
            'title_required',
            'title_too_long',
          ),
        },
      },
    },
    async (req, reply) => {
      const created = await createScenario(ctx(req), req.body);
      reply.status(201);
      return created;
    },
  );

  r.get(
    '/v1/scenarios',
    {
      schema: {
        tags,
        operationId: 'scenariosList',
        summary: 'List the scenarios you may read',
        description:
          'In name order, keyset-paginated (`nextCursor`, null on the last page; `limit` ≤ list_limit, also the default). The same rule ' +
          'as `GET /v1/scenarios/{name}`: users see every scenario, a session those it orchestrates or is a member of. Each is a ' +
          'summary: the record without its members, the member count, scope-wide done/total and derived completion (recorded ' +
          'when it holds, as a read of the scenario does).',
        querystring: ListScenariosQuery,
        response: { 200: ScenarioList, ...problemResponses('invalid_cursor') },
      },
    },
    async (req) => listScenarios(ctx(req), req.query),
  );

  r.get(
    '/v1/scenarios/:name',
    {
      schema: {
        tags,
        operationId: 'scenariosGet',
        summary: 'Get a scenario',
        description:
          'By name or id. Readable by users, the orchestrator and members; anyone else gets the 404 of a scenario that does not ' +
          'exist (existence is not leaked).',
        params: ScenarioParams,
        response: { 200: z.object({ scenario: Scenario }), ...problemResponses('scenario_not_found') },
      },
    },
    async (req) => ({ scenario: await getScenario(ctx(req), req.params.name) }),
  );

  r.get(
    '/v1/scenarios/:name/status',
    {
      schema: {
        tags,
        operationId: 'scenariosStatus',
        summary: 'Scenario status: per-member progress and WAITING ON',
        description:
          'Derived completion (seed 000): a member is tracked when it has assigned items or a required result, and complete when ' +
          'every assigned item is done and its required result is published; `progress` is `done/total` or `—`. `waitingOn` ' +
          '(alias `blockedBy`) names upstream members whose original seed is not done. The scenario is complete when every ' +
          'tracked member is; the first time that holds, `completedAt` is recorded and a `scenario-completed` event is written. ' +
          '`format=text` renders the table (MEMBER, SESSION, DONE/TOTAL, RESULT, WAITING ON).',
        params: ScenarioParams,
        querystring: z.strictObject({ format: z.enum(['json', 'text']).default('json') }),
        response: {
          200: {
            description: 'The status (JSON), or the table as text/plain with `format=text`',
            content: { 'application/json': { schema: ScenarioStatus }, 'text/plain': { schema: z.string() } },
          },
          ...problemResponses('scenario_not_found'),
        },
      },
    },
    async (req, reply) => {
      const status = await scenarioStatus(ctx(req), req.params.name);
      if (req.query.format === 'text') return reply.type('text/plain; charset=utf-8').send(renderStatusText(status));
      return reply.type('application/json; charset=utf-8').send(status);
    },
  );

  r.post(
    '/v1/scenarios/:name/members/:member/result',
    {
      schema: {
        tags,
        operationId: 'scenariosPublishResult',
        summary: 'Publish a member’s result',
        description:
          'Stores (or replaces) the member’s declared result. A member with `requiresResult` completes only once it is published ' +
          '(seed 000). Who: the member’s session, the orchestrator or a user. Writes `result-published`, and records completion ' +
          'in the same transaction when this was the last missing piece.',
        params: MemberParams,
        body: PublishResultBody,
        response: {
          200: PublishedResult,
          ...problemResponses('scenario_not_found', 'scenario_member_not_found', 'forbidden', 'payload_too_large', 'malformed_json'),
        },
      },
    },
    async (req) => publishResult(ctx(req), req.params.name, req.params.member, req.body.result),
  );
}
