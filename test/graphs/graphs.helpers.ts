/**
 * Helpers for the Task Graph HTTP tests: the example files the README uses, agent registration,
 * and row counts that prove a call wrote nothing.
 */
import { readFileSync } from 'node:fs';
import type { Sql } from '../../src/db/client.js';
import type { Client } from '../helpers/app.js';

/** A fresh copy of `examples/<name>.json` (the README walkthrough's files). */
export function example(name: 'task-graph' | 'intent-map'): Record<string, any> {
  return JSON.parse(readFileSync(new URL(`../../examples/${name}.json`, import.meta.url), 'utf8'));
}

/** The Agents the examples and fixtures name. */
export const EXAMPLE_AGENTS = ['codex', 'agent-backend', 'agent-frontend', 'agent-docs', 'agy'];

/** Registers each Agent (as a user); an already registered one is fine. */
export async function registerAgents(
  admin: Client,
  ids: string[] = EXAMPLE_AGENTS,
  facts: Record<string, { adapter?: string; command?: string }> = {},
): Promise<void> {
  for (const id of ids) {
    const r = await admin.post('/v1/agents', { id, ...(facts[id] ?? {}) });
    if (r.status !== 201 && r.body?.code !== 'agent_exists') throw new Error(`agent ${id}: ${r.status} ${JSON.stringify(r.body)}`);
  }
}

/** Rows in every table a graph write touches (to prove that a call wrote nothing). */
export async function rowCounts(sql: Sql): Promise<Record<string, number>> {
  const [row] = await sql<Record<string, number>[]>`
    select (select count(*) from graphs)::int as graphs,
           (select count(*) from graph_subtasks)::int as graph_subtasks,
           (select count(*) from todos)::int as todos,
           (select count(*) from todo_dependencies)::int as todo_dependencies,
           (select count(*) from scopes)::int as scopes,
           (select count(*) from events)::int as events,
           (select count(*) from agents)::int as agents`;
  return { ...row };
}

/** A graph document over the given subtasks (all implemented by `codex`). */
export function graphDoc(
  id: string,
  subtasks: Array<{ id: string; dependsOn?: string[]; implementer?: string; title?: string }>,
  maxConcurrency = 2,
): Record<string, any> {
  return {
    schemaVersion: 1,
    parentTask: { id, title: `Graph ${id}`, planner: 'codex', reviewer: 'codex' },
    subtasks: subtasks.map((s) => ({
      id: s.id,
      implementer: s.implementer ?? 'codex',
      spec: `Do ${s.id}.`,
      ...(s.title === undefined ? {} : { title: s.title }),
      ...(s.dependsOn === undefined ? {} : { dependsOn: s.dependsOn }),
    })),
    maxConcurrency,
  };
}

/**
 * Puts a subtask into an execution state by writing the engine rows directly (the planner tests
 * need states without going through dispatch): RUNNING = todo in-progress owned by an active
 * session; SUCCEEDED = done; FAILED/STOPPED/BLOCKED = todo blocked plus the contract outcome and reason.
 */
export async function setSubtaskState(
  sql: Sql,
  graphId: string,
  subtaskId: string,
  state: 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'STOPPED' | 'BLOCKED',
  reason?: string,
): Promise<void> {
  const [row] = await sql<{ todo_id: string }[]>`select todo_id from graph_subtasks where graph_id = ${graphId} and subtask_id = ${subtaskId}`;
  // An active session owns it: a RUNNING subtask whose owner is not an active session reads FAILED (interrupted).
  await sql`insert into sessions (id, name, root_id, created_by)
            values ('s-executor', 's-executor', 's-executor', 'test') on conflict (id) do nothing`;
  const status = state === 'RUNNING' ? 'in-progress' : state === 'SUCCEEDED' ? 'done' : 'blocked';
  await sql`update todos set status = ${status}, owner = 's-executor', revision = revision + 1, updated_at = now() where id = ${row.todo_id}`;
  if (state === 'SUCCEEDED') {
    await sql`update todos set unfinished_deps = unfinished_deps - 1
               where id in (select todo_id from todo_dependencies where dependency_id = ${row.todo_id})`;
  }
  const outcome = state === 'FAILED' || state === 'STOPPED' || state === 'BLOCKED' ? state : null;
  await sql`update graph_subtasks set outcome = ${outcome}, reason = ${reason === undefined ? null : JSON.stringify(reason)}::text::jsonb, updated_at = now()
             where graph_id = ${graphId} and subtask_id = ${subtaskId}`;
}
