/**
 * Body bounds of validate and create (seed 002: 1–256 subtasks, specs ≤ 256 KiB, input ≤ 64 MiB):
 * the contract's largest graph is accepted, larger bodies are 413, and `emit_events = off` still
 * writes the contract's journal event but no todo events.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TASK_GRAPH_MAX_SPEC_BYTES, TASK_GRAPH_MAX_SUBTASKS } from '../../src/graphs/contract/index.js';
import { GRAPH_BODY_LIMIT } from '../../src/graphs/graphs.routes.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { graphDoc, registerAgents, rowCounts } from './graphs.helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ todo: { emitEvents: 'off' } });
  await registerAgents(t.admin);
});
afterAll(async () => t?.close());

/** 256 subtasks, each with a 256 KiB spec (multi-byte characters included) and a 1024-character title. */
function largestGraph(id: string): Record<string, any> {
  const spec = 'é'.repeat(1024) + 'x'.repeat(TASK_GRAPH_MAX_SPEC_BYTES - 2048);
  const ids = Array.from({ length: TASK_GRAPH_MAX_SUBTASKS }, (_, i) => `s${String(i).padStart(3, '0')}`);
  return {
    schemaVersion: 1,
    parentTask: { id, title: 'The largest graph the contract allows', planner: 'codex', reviewer: 'codex', spec },
    subtasks: ids.map((sid, i) => ({
      id: sid,
      title: `${'ü'.repeat(1000)} ${sid}`.slice(0, 1024),
      implementer: 'codex',
      spec,
      dependsOn: i === 0 ? [] : [ids[i - 1]],
    })),
    maxConcurrency: 32,
  };
}

describe('request body bounds', () => {
  it('should accept and create the largest graph the contract allows', async () => {
    const graph = largestGraph('task-largest-1');
    const body = JSON.stringify(graph);
    expect(Buffer.byteLength(body)).toBeGreaterThan(64 * 1024 * 1024);
    expect(Buffer.byteLength(body)).toBeLessThanOrEqual(GRAPH_BODY_LIMIT);
    const validated = await t.admin.post('/v1/graphs/validate', body);
    expect(validated.status).toBe(200);
    const created = await t.admin.post('/v1/graphs', body);
    expect(created.status).toBe(201);
    expect(created.body.graph.subtasks).toHaveLength(256);
    expect(created.body.graph.subtasks[255].spec).toBe(graph.subtasks[255].spec);
    const [row] = await t.sql<{ n: number; bytes: number }[]>`
      select count(*)::int as n, sum(octet_length(spec))::int as bytes from graph_subtasks where graph_id = 'task-largest-1'`;
    expect(row).toEqual({ n: 256, bytes: 256 * TASK_GRAPH_MAX_SPEC_BYTES });
    const titles = await t.sql<{ b: number }[]>`select max(octet_length(title))::int as b from todos where scope = 'graph:task-largest-1'`;
    expect(titles[0].b).toBeLessThanOrEqual(t.config.todo.maxTitle);
  });

  it('should refuse a body over the bound with 413 payload_too_large and write nothing', async () => {
    const before = await rowCounts(t.sql);
    const body = JSON.stringify({ graph: graphDoc('task-too-large-1', [{ id: 'alpha' }]), intentMap: { pad: 'x'.repeat(GRAPH_BODY_LIMIT) } });
    const r = await t.admin.post('/v1/graphs', body);
    expect(r.status).toBe(413);
    expect(r.body.code).toBe('payload_too_large');
    expect(await rowCounts(t.sql)).toEqual(before);
  });

  it('should keep the default body limit on other routes', async () => {
    const r = await t.admin.post('/v1/agents', { id: 'agent-big', command: 'x'.repeat(2 * 1024 * 1024) });
    expect(r.status).toBe(413);
  });
});

describe('emit_events = off', () => {
  it('should write the TASK_GRAPH_CREATED journal event but no todo events', async () => {
    expect((await t.admin.post('/v1/graphs', graphDoc('task-quiet-1', [{ id: 'alpha' }, { id: 'beta' }]))).status).toBe(201);
    const events = await t.sql`select event from events where topic = 'todo:graph:task-quiet-1'`;
    expect(events.map((e) => e.event)).toEqual(['TASK_GRAPH_CREATED']);
    const inspect = await t.admin.get('/v1/graphs/task-quiet-1/inspect');
    expect(inspect.body.events.map((e: any) => e.event)).toEqual(['TASK_GRAPH_CREATED']);
  });
});
