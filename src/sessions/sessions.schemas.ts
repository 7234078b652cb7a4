/**
 * Wire shapes of the session routes that the service names too (`SessionView` is the type of
 * `Session`), so each is written once; the routes' request shapes stay in sessions.routes.ts.
 */
import { z } from 'zod';
import { HOLDING_SHOWN } from './sessions.holding.js';

const Holding = z
  .object({
    count: z.number().int().describe('How many in-progress items the session owns (exact)'),
    items: z
      .array(
        z.object({
          id: z.string(),
          scope: z.string(),
          title: z.string(),
          since: z.string().describe('When this claim began (the item went in-progress, or changed owner while in it)'),
        }),
      )
      .describe(`The first ${HOLDING_SHOWN} of them, longest held first`),
  })
  .meta({ id: 'SessionHolding' });

export const Session = z
  .object({
    id: z.string(),
    name: z.string(),
    parentId: z.string().optional(),
    rootId: z.string().describe('Subtree root (seed 000 “Scoping”)'),
    scope: z.string().describe('Default scope: `session:<rootId>`'),
    systemKind: z.string().optional(),
    agentId: z.string().optional().describe('The configured Agent this session acts as (Task Graph v1 implementer or reviewer)'),
    graphId: z.string().optional().describe('A subtask session: the parent task id of the graph whose dispatch created it'),
    subtaskId: z.string().optional().describe('A subtask session: the subtask it was dispatched for'),
    status: z.enum(['active', 'stopped', 'deleted']),
    createdBy: z.string(),
    createdAt: z.string(),
    stoppedAt: z.string().optional(),
    stopReason: z
      .enum(['requested', 'silent', 'ancestor', 'dispatch-ended'])
      .optional()
      .describe(
        'Why it stopped: `requested` (stop or delete), `silent` (auto-stopped after its heartbeat interval), `ancestor` (an ancestor’s stop took its subtree), `dispatch-ended` (a Task Graph dispatch’s session)',
      ),
    revision: z.number().int(),
    lastSeenAt: z
      .string()
      .optional()
      .describe('Its last authenticated call (database clock), accurate to about a second; absent on sessions older than this field'),
    heartbeatIntervalMs: z.number().int().optional().describe('When set: silent (no authenticated call) for longer than this, the sweep stops the session'),
    alive: z
      .boolean()
      .describe(
        '`status` is active and, with a heartbeat interval, `lastSeenAt` is within it (database clock). Active but not alive: silent, stopped by the next sweep',
      ),
    holding: Holding.optional().describe('List and get: its in-progress items (count, and the longest held few)'),
    progress: z
      .object({ done: z.number().int(), total: z.number().int() })
      .optional()
      .describe('`wide=true` only: done/total of the session’s own subtree list, sub-items included'),
    scenarioProgress: z
      .object({ done: z.number().int(), total: z.number().int(), scenarios: z.number().int() })
      .optional()
      .describe('`wide=true`, orchestrators only: done/total over the scenarios it orchestrates (not echoed onto members)'),
  })
  .meta({ id: 'Session' });
