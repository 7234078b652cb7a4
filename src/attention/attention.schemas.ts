/** The shapes of `GET /v1/attention` (attention.service.ts), written once. */
import { z } from 'zod';

export const ATTENTION_KINDS = [
  'expired-claim',
  'silent-holder',
  'reserved-for-gone',
  'manual-block',
  'graph-subtask-ended',
  'metagit-node-blocked',
  'scenario-member-waiting',
] as const;

export const AttentionKind = z
  .enum(ATTENTION_KINDS)
  .describe(
    'Why it needs an operator: `expired-claim` (in progress past its lease, nobody took it over yet), `silent-holder` (a session silent past its ' +
      'heartbeat interval that still holds work), `reserved-for-gone` (an unfinished item assigned to a stopped or deleted session: only the ' +
      'list’s override authority may claim it), `manual-block` (blocked by its owner, with the note), `graph-subtask-ended` (a Task Graph v1 subtask FAILED, STOPPED or BLOCKED), ' +
      '`metagit-node-blocked` (a metagit node blocked, with its reason), `scenario-member-waiting` (a member of an unfinished scenario ' +
      'whose task waits on upstream members’ unfinished work: nothing to do on it, the upstream entries say why)',
  );

export const AttentionAction = z
  .object({
    action: z
      .enum(['reopen', 'assign', 'stop', 'resume'])
      .describe('What it does: reopen the item (or the metagit node), reassign it, stop the session, resume the graph subtask'),
    method: z.enum(['POST', 'PUT']),
    path: z.string().describe('The route to call, ids filled in'),
    body: z
      .record(z.string(), z.unknown())
      .optional()
      .describe('The body to send (for `assign`, replace `assignee` with the session to reserve it for, or null)'),
  })
  .meta({ id: 'AttentionAction', description: 'A legitimate next step, as the request that takes it' });

export const AttentionEntry = z
  .object({
    kind: AttentionKind,
    subjectId: z.string().describe('The item (`td-…`) or, for `silent-holder`, the session (`s-…`)'),
    scope: z.string().nullable().describe('The item’s scope; null for `silent-holder`'),
    title: z.string().describe('The item’s title, or the session’s name'),
    session: z
      .object({ id: z.string(), name: z.string().nullable().describe('null when the session row is gone') })
      .nullable()
      .describe('The session concerned: the claim’s owner, the silent session, the session the item is reserved for, the blocker, the subtask’s session'),
    since: z.string().describe('When the condition began (ISO 8601, database clock): the lease deadline, the heartbeat deadline, the block, the outcome'),
    detail: z
      .string()
      .nullable()
      .describe('What else to know: the block note, the subtask’s outcome and reason, how many items a silent session holds, the reserved session’s state'),
    actions: z.array(AttentionAction).describe('The legitimate next steps, as requests an operator may send; empty where a contract recovers by itself'),
  })
  .meta({ id: 'AttentionEntry', description: 'Something stuck, why, and what to do about it' });
export type AttentionEntry = z.output<typeof AttentionEntry>;

export const AttentionQuery = z.strictObject({
  kind: AttentionKind.optional().describe('Only entries of this kind'),
  limit: z.coerce.number().int().min(1).max(100_000).optional().describe('Page size, capped at list_limit (also the default)'),
  cursor: z.string().max(2000).optional().describe('`nextCursor` of the previous page'),
});
export type AttentionQuery = z.output<typeof AttentionQuery>;

export const AttentionPage = z
  .object({ entries: z.array(AttentionEntry).describe('Oldest condition first'), nextCursor: z.string().nullable() })
  .meta({ id: 'AttentionPage' });
