/**
 * metagit intents (seed 001 "Intent"; docs/seeds/metagit.md): create, read and list.
 */
import type { z } from 'zod';
import type { CreateTaskIntent } from './metagit.schemas.js';
import type postgres from 'postgres';
import { withTx } from '../db/tx.js';
import { appendEvents, auditTopic } from '../events/events.repo.js';
import { DomainError, fail } from '../http/errors.js';
import { decodeCursor, encodeCursor } from '../http/cursor.js';
import { newId } from '../lib/ids.js';
import type { Ctx } from '../todos/todos.context.js';
import type { Principal } from '../auth/principal.js';
import { SLUG_ID } from './metagit.outline.js';
import { actorOf } from '../auth/actor.js';

export const bytes = (s: string) => Buffer.byteLength(s, 'utf8');

/** What creating an intent takes: the body of `POST /v1/intents` (`CreateMetagitIntent`). */
export type IntentInput = z.output<typeof CreateTaskIntent>;

interface IntentRow {
  id: string;
  title: string;
  goal: string;
  acceptance: string[];
  project: string | null;
  repos: string[];
  objective_id: string | null;
  handoff_id: string | null;
  created_by: string;
  created_at: Date;
  updated_at: Date;
}

const toIntent = (r: IntentRow) => ({
  intentId: r.id,
  title: r.title,
  goal: r.goal,
  acceptance: r.acceptance,
  project: r.project,
  repos: r.repos,
  objectiveId: r.objective_id,
  handoffId: r.handoff_id,
  createdBy: r.created_by,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
});

export type IntentView = ReturnType<typeof toIntent>;

export function checkIntent(input: IntentInput): { title: string; goal: string } {
  const title = input.title.trim();
  const goal = input.goal.trim();
  if (!title || !goal) {
    const errors = [
      ...(title ? [] : [{ path: 'body.title', message: 'must not be empty' }]),
      ...(goal ? [] : [{ path: 'body.goal', message: 'must not be empty' }]),
    ];
    fail('validation_failed', 'title and goal must be non-empty (after trimming)', { errors });
  }
  return { title, goal };
}

export async function insertIntent(ctx: Ctx, db: postgres.Sql | postgres.TransactionSql, id: string, input: IntentInput): Promise<IntentRow> {
  const { title, goal } = checkIntent(input);
  const [row] = await db<IntentRow[]>`
    insert into metagit_intents (id, title, goal, acceptance, project, repos, objective_id, handoff_id, created_by, team_id)
    values (${id}, ${title}, ${goal}, ${JSON.stringify(input.acceptance ?? [])}::text::jsonb, ${input.project ?? null},
            ${JSON.stringify(input.repos ?? [])}::text::jsonb, ${input.objectiveId ?? null}, ${input.handoffId ?? null}, ${ctx.principal.id},
            ${ctx.principal.teamId})
    on conflict (team_id, id) do nothing
    returning *`;
  if (!row) throw new DomainError('intent_exists', `intent "${id}" already exists; use it, or pick another intentId`, { intentId: id });
  // The audit's record: intents have no topic of their own, so no stream serves it.
  const payload = { event: 'intent-created', id, title: row.title };
  await appendEvents(db, ctx.principal.teamId, [{ topic: auditTopic('intents'), event: 'intent-created', subjectId: id, payload }], actorOf(ctx.principal));
  return row;
}

/** `POST /v1/intents`: a TaskIntent (RFC §2.1). Id: `intentId` (slug pattern) or `intent-<random>`. 409 intent_exists. */
export async function createIntent(ctx: Ctx, input: IntentInput): Promise<IntentView> {
  const id = input.intentId ?? `intent-${newId('td').slice(3, 15)}`;
  return toIntent(await withTx(ctx.sql, (tx) => insertIntent(ctx, tx, id, input)));
}

/**
 * SQL: the intents `p` may see (alias `i`), only ever of its own team: users all of
 * them; sessions those created in their subtree.
 */
function intentVisible(db: postgres.Sql, p: Principal) {
  if (p.kind === 'user') return db`i.team_id = ${p.teamId}`;
  if (p.graphId !== null) return db`false`;
  return db`i.team_id = ${p.teamId} and exists (select 1 from sessions cs where cs.id = i.created_by and cs.root_id = ${p.rootId})`;
}

/** `GET /v1/intents/{id}`: users, and sessions of the subtree that created it; anyone else 404. */
export async function getIntent(ctx: Ctx, id: string): Promise<IntentView> {
  const [row] = SLUG_ID.test(id)
    ? await ctx.sql<IntentRow[]>`select i.* from metagit_intents i where i.id = ${id} and ${intentVisible(ctx.sql, ctx.principal)}`
    : [];
  if (!row) fail('intent_not_found', `intent not found: ${id.slice(0, 128)}`);
  return toIntent(row);
}

/** `GET /v1/intents`: the intents the caller may see, by id, keyset-paginated (page ≤ list_limit). */
export async function listIntents(ctx: Ctx, input: { limit?: number; cursor?: string }) {
  const limit = Math.min(input.limit ?? ctx.config.todo.listLimit, ctx.config.todo.listLimit);
  const after = input.cursor !== undefined ? (decodeCursor(input.cursor, [SLUG_ID])[0] as string) : undefined;
  const rows = await ctx.sql<IntentRow[]>`
    select i.* from metagit_intents i where ${intentVisible(ctx.sql, ctx.principal)}
       and ${after !== undefined ? ctx.sql`i.id collate "C" > ${after}` : ctx.sql`true`} order by i.id collate "C" limit ${limit + 1}`;
  const more = rows.length > limit;
  const page = more ? rows.slice(0, limit) : rows;
  return { intents: page.map(toIntent), nextCursor: more ? encodeCursor([page[page.length - 1].id]) : null };
}
