/**
 * `client.graphs` and `client.agents` against a listening server (Task Graph v1, seed 002):
 * every method once, and the contract's typed refusals (`TaskGraphInvalid` with its stage,
 * `TaskStateConflict`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, NotFound, TaskGraphInvalid, TaskStateConflict, type CoordClient, type CoordError } from '@coord/sdk';
import { startTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
let admin: CoordClient;
beforeAll(async () => {
  t = await startTestApp();
  admin = createClient({ baseUrl: t.base, token: t.admin.token });
  for (const id of ['codex', 'agent-backend', 'agent-frontend']) await admin.agents.register({ id, adapter: 'codex' });
});
afterAll(async () => t?.close());

const graph = (id: string) => ({
  schemaVersion: 1 as const,
  parentTask: { id, title: 'Build the slice', planner: 'codex', reviewer: 'codex' },
  subtasks: [
    { id: 'backend', implementer: 'agent-backend', spec: 'Implement the backend.', dependsOn: [] },
    { id: 'frontend', implementer: 'agent-frontend', spec: 'Implement the frontend.', dependsOn: ['backend'] },
  ],
  maxConcurrency: 2,
});

async function caught(p: Promise<unknown>): Promise<CoordError> {
  try {
    await p;
  } catch (err) {
    return err as CoordError;
  }
  throw new Error('expected the call to fail');
}

describe('client.agents and client.graphs', () => {
  it('should list the registered agents', async () => {
    const agents = await admin.agents.listAll();
    expect(agents.map((a) => a.id)).toEqual(['agent-backend', 'agent-frontend', 'codex']);
    expect((await admin.agents.list({ limit: 1 })).nextCursor).toBeTruthy();
  });

  it('should validate, create, list, get, inspect and plan a graph', async () => {
    const v = await admin.graphs.validate(graph('task-sdk-one'));
    expect(v).toMatchObject({ ok: true, validation: { sideEffects: false } });
    expect(v.facts.subtasks.map((s) => s.subtaskId)).toEqual(['backend', 'frontend']);
    const created = await admin.graphs.create({ graph: graph('task-sdk-one') });
    expect(created.graph).toMatchObject({ id: 'task-sdk-one', scope: 'graph:task-sdk-one' });
    expect(created.graph.frontier.ready).toEqual(['backend']);
    expect((await admin.graphs.listAll()).map((g) => g.id)).toContain('task-sdk-one');
    expect((await admin.graphs.list({ limit: 1 })).graphs).toHaveLength(1);
    expect((await admin.graphs.get('task-sdk-one')).subtasks.map((s) => s.state)).toEqual(['READY', 'WAITING']);
    expect((await admin.graphs.inspect('task-sdk-one')).events.map((e) => e.event)).toContain('TASK_GRAPH_CREATED');
    const plan = await admin.graphs.plan('task-sdk-one');
    expect(plan.wave.selected).toEqual(['backend']);
    expect(plan.decisions.map((d) => d.subtaskId)).toEqual(['backend', 'frontend']);
  });

  it('should raise TaskGraphInvalid with its stage, TaskStateConflict for a duplicate id, NotFound for an unknown graph', async () => {
    const bad = { ...graph('task-sdk-bad'), schemaVersion: 2 };
    const invalid = await caught(admin.graphs.validate(bad as never));
    expect(invalid).toBeInstanceOf(TaskGraphInvalid);
    expect(invalid.status).toBe(400);
    expect((invalid as TaskGraphInvalid).stage).toBe('graph-validation');
    expect(invalid.detail).toContain('schemaVersion');
    await admin.graphs.create(graph('task-sdk-dup'));
    const dup = await caught(admin.graphs.create(graph('task-sdk-dup')));
    expect(dup).toBeInstanceOf(TaskStateConflict);
    expect(dup.code).toBe('TASK_STATE_CONFLICT');
    expect(await caught(admin.graphs.get('task-nope'))).toBeInstanceOf(NotFound);
  });
});
