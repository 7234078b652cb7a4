import { z } from 'zod';
import { TodoStatus } from '../todos/todos.schemas.js';
import { ID_LIKE, NAME_PATTERN } from './scenarios.plan.js';

const Name = (what: string) =>
  z
    .string()
    .regex(NAME_PATTERN, `${what} must be 1–100 letters, digits, ".", "_" or "-", starting with a letter or digit`)
    .refine((s) => !ID_LIKE.test(s), `${what} must not look like a scenario id (sc- + 16 hex)`);

export const MemberInputSchema = z
  .strictObject({
    name: Name('a member name').describe('Unique in the scenario; other members’ `dependsOn` use it'),
    session: z
      .string()
      .max(100)
      .optional()
      .describe('An existing session: a shared member. Absent: a session is created for the member (its token is returned once)'),
    task: z.string().max(4096).optional().describe('Title of the member’s seed item (trimmed, ≤ max_title bytes). Absent: a prompt-only member without a seed'),
    dependsOn: z.array(z.string().max(100)).max(500).optional().describe('Member names whose seeds this member’s seed waits for'),
    requiresResult: z.boolean().optional().describe('The member completes only after publishing a result'),
  })
  .meta({ id: 'NewScenarioMember' });

export const CreateScenarioBody = z
  .strictObject({
    name: Name('the scenario name'),
    orchestrator: z
      .string()
      .max(100)
      .optional()
      .describe('An existing session. Default: the calling session; for a user, a new `orchestrator` system session (token returned once)'),
    members: z.array(MemberInputSchema).min(1).max(500),
  })
  .meta({ id: 'CreateScenario' });

export const ScenarioMember = z
  .object({
    name: z.string(),
    sessionId: z.string(),
    shared: z.boolean().describe('An existing session granted access (true) or one created for the scenario (false)'),
    task: z.string().optional(),
    dependsOn: z.array(z.string()),
    requiresResult: z.boolean(),
    seedId: z.string().optional().describe('The original seed item; member-name dependencies keep pointing at it after a reassignment'),
    result: z.unknown().optional(),
    resultAt: z.string().optional(),
  })
  .meta({ id: 'ScenarioMember' });

export const Scenario = z
  .object({
    id: z.string().describe('`sc-` + 16 hex'),
    name: z.string(),
    scope: z.string().describe('`scenario:<id>`; events on topic `todo:scenario:<id>`'),
    orchestratorId: z.string(),
    createdBy: z.string(),
    createdAt: z.string(),
    completedAt: z.string().optional().describe('When derived completion first held'),
    revision: z.number().int(),
    members: z.array(ScenarioMember),
  })
  .meta({ id: 'Scenario' });

export const ScenarioSummary = z
  .object({
    id: z.string().describe('`sc-` + 16 hex'),
    name: z.string(),
    scope: z.string().describe('`scenario:<id>`'),
    orchestratorId: z.string(),
    createdBy: z.string(),
    createdAt: z.string(),
    completedAt: z.string().optional().describe('When derived completion first held'),
    revision: z.number().int(),
    members: z.number().int().describe('How many members it has (`GET /v1/scenarios/{name}` lists them)'),
    done: z.number().int().describe('Done items in the whole scope, sub-items included'),
    total: z.number().int().describe('Items in the whole scope'),
    complete: z.boolean().describe('Derived completion now (as `…/status`): at least one tracked member, and every tracked member complete'),
  })
  .meta({ id: 'ScenarioSummary', description: 'A scenario as `GET /v1/scenarios` lists it: the record without its members, with derived progress' });

export const ListScenariosQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100_000).optional().describe('Page size, capped at list_limit (also the default)'),
  cursor: z.string().max(2000).optional().describe('`nextCursor` of the previous page'),
});

export const ScenarioList = z
  .object({ scenarios: z.array(ScenarioSummary).describe('In name order'), nextCursor: z.string().nullable() })
  .meta({ id: 'ScenarioList' });

export const CreatedScenario = z
  .object({
    scenario: Scenario,
    orchestratorToken: z.string().optional().describe('Bearer token of the orchestrator session created for the scenario; shown once'),
    tokens: z.record(z.string(), z.string()).describe('Bearer tokens of the sessions created for members, by member name; shown once'),
  })
  .meta({ id: 'CreatedScenario' });

export const MemberStatus = z
  .object({
    name: z.string(),
    sessionId: z.string(),
    shared: z.boolean(),
    tracked: z.boolean().describe('Has assigned items in the scope or a required result'),
    done: z.number().int(),
    total: z.number().int().describe('Items in the scope assigned to the member’s session, sub-items included'),
    progress: z.string().describe('`done/total`, or `—` for no tracked work'),
    requiresResult: z.boolean(),
    resultPublished: z.boolean(),
    complete: z.boolean(),
    waitingOn: z.array(z.string()).describe('WAITING ON: upstream members whose original seed is not done'),
    blockedBy: z.array(z.string()).describe('The seed’s JSON name for WAITING ON'),
    seedId: z.string().optional(),
    seedStatus: TodoStatus.optional().describe('Effective status of the original seed'),
    blockNote: z.string().optional().describe('The original seed’s note when its owner blocked it (`seedStatus` blocked by a block, not a dependency)'),
  })
  .meta({ id: 'ScenarioMemberStatus' });

export const ScenarioStatus = z
  .object({
    scenario: z.object({ id: z.string(), name: z.string(), scope: z.string(), orchestratorId: z.string(), completedAt: z.string().optional() }),
    complete: z.boolean().describe('At least one tracked member, and every tracked member complete'),
    done: z.number().int().describe('Done items in the whole scope'),
    total: z.number().int().describe('Items in the whole scope, sub-items included'),
    members: z.array(MemberStatus),
  })
  .meta({ id: 'ScenarioStatus' });

export const ScenarioParams = z.object({ name: z.string().max(200).describe('Scenario name or id') });
export const MemberParams = ScenarioParams.extend({ member: z.string().max(200) });

export const PublishResultBody = z
  .strictObject({ result: z.unknown().describe('Any JSON value') })
  .refine((b) => b.result !== undefined, { message: 'result is required', path: ['result'] })
  .meta({ id: 'PublishResult' });

export const PublishedResult = z.object({ member: ScenarioMember, scenarioComplete: z.boolean() }).meta({ id: 'PublishedResult' });
