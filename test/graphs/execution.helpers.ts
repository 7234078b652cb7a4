/**
 * A simulated runner for the Task Graph execution tests: what the CLI's runner does on an agent's
 * machine, minus git. It holds the dispatch tokens the coordinator hands out and reports
 * completion evidence, failures and observations through the public HTTP API.
 */
import { randomBytes } from 'node:crypto';
import { Client, type TestApp } from '../helpers/app.js';

/** A fresh full commit id (40 hex digits). */
export const commit = () => randomBytes(20).toString('hex');

/** A graph document: `subtasks` as `id: [deps]`, one implementer for all unless `implementers` says otherwise. */
export function graphOf(id: string, subtasks: Record<string, string[]>, maxConcurrency: number, implementers: Record<string, string> = {}) {
  return {
    schemaVersion: 1,
    parentTask: { id, title: `Graph ${id}`, planner: 'codex', reviewer: 'reviewer' },
    subtasks: Object.entries(subtasks).map(([sid, deps]) => ({ id: sid, implementer: implementers[sid] ?? 'codex', spec: `Do ${sid}.`, dependsOn: deps })),
    maxConcurrency,
  };
}

/** An Intent Map giving each subtask `src/<id>/**` unless `intents` says otherwise. */
export function intentMapOf(id: string, subtaskIds: string[], policy: 'observe' | 'warn' | 'strict', intents: Record<string, string[]> = {}) {
  return {
    schemaVersion: 1,
    parentTaskId: id,
    scopePolicy: policy,
    subtasks: subtaskIds.map((sid) => ({ id: sid, writeIntent: intents[sid] ?? [`src/${sid}/**`] })),
  };
}

export interface Dispatch {
  subtaskId: string;
  attempt: number;
  session: { id: string; token: string };
  worktree: { path: string; branch: string; ref: string; baseCommit: string };
}

/** Completion evidence for `paths` (modified files) at a new commit. */
export function evidence(base: string, paths: string[], extra: Record<string, unknown> = {}) {
  return {
    graphBaseCommit: base,
    implementationCommit: commit(),
    committedChanges: paths.map((path) => ({ status: 'M', path })),
    dirtyChanges: [],
    dirtyWorktreeAvailable: true,
    ...extra,
  };
}

/** The graph's lifecycle events (`TASK_GRAPH_*`) after `after`, from the event log. */
export async function lifecycle(c: Client, id: string, after = 0): Promise<{ seq: number; event: string; data: any }[]> {
  const r = await c.get(`/v1/events/log?topic=${encodeURIComponent(`todo:graph:${id}`)}&after=${after}&limit=1000`);
  if (r.status !== 200) throw new Error(`events: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.events.filter((e: any) => e.event.startsWith('TASK_GRAPH_')).map((e: any) => ({ seq: e.id ?? e.seq, event: e.event, data: e.data }));
}

/** The newest event sequence on the graph's topic (a cursor for {@link lifecycle}). */
export async function cursor(c: Client, id: string): Promise<number> {
  const events = await lifecycle(c, id);
  return events.length ? events[events.length - 1].seq : 0;
}

/** `state` of every subtask of the record, as `{id: state}`. */
export function states(graph: { subtasks: { subtaskId: string; state: string }[] }): Record<string, string> {
  return Object.fromEntries(graph.subtasks.map((s) => [s.subtaskId, s.state]));
}

/** The client of a dispatch's own session (the implementer's COORD_TOKEN). */
export const implementer = (t: TestApp, d: Dispatch) => new Client(t.base, d.session.token);

/** Registers the Agents the execution tests name. */
export async function registerExecutionAgents(t: TestApp): Promise<void> {
  for (const id of ['codex', 'reviewer', 'agent-a', 'agent-b']) {
    const r = await t.admin.post('/v1/agents', { id });
    if (r.status !== 201 && r.body?.code !== 'agent_exists') throw new Error(`agent ${id}: ${r.status}`);
  }
}

/** A root session bound to `agentId` (a worker for that Agent). */
export async function agentSession(t: TestApp, agentId: string): Promise<{ id: string; client: Client }> {
  const r = await t.admin.post('/v1/sessions', { name: `worker-${agentId}`, agentId });
  if (r.status !== 201) throw new Error(`agent session: ${r.status} ${JSON.stringify(r.body)}`);
  return { id: r.body.session.id, client: new Client(t.base, r.body.token) };
}
