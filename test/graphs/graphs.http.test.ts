/**
 * Task Graph v1 over HTTP and Postgres: agents registry, validate, create, status, inspect, list
 * and the todo views of scope `graph:<id>` (seed 002; docs/seeds/task-graph-v1.md §1–§4, §14 persistence).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateIntentMap, validateTaskGraph } from '../../src/graphs/contract/index.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { example, graphDoc, registerAgents, rowCounts, setSubtaskState, EXAMPLE_AGENTS } from './graphs.helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
  await registerAgents(t.admin, EXAMPLE_AGENTS, { 'agent-backend': { adapter: 'codex-cli', command: 'codex exec' } });
});
afterAll(async () => t?.close());

let seq = 0;
/** A unique parent Task id per test. */
const taskId = (stem: string) => `task-${stem}-${++seq}`;

describe('agents registry', () => {
  it('should register an Agent with adapter and command facts', async () => {
    const r = await t.admin.post('/v1/agents', { id: 'agent-registry-1', adapter: 'antigravity-cli', command: 'agy run' });
    expect(r.status).toBe(201);
    expect(r.body.agent).toMatchObject({ id: 'agent-registry-1', adapter: 'antigravity-cli', command: 'agy run' });
    expect(r.body.agent.createdBy).toMatch(/^u-/);
  });

  it('should refuse a second registration of the same id with agent_exists', async () => {
    await t.admin.post('/v1/agents', { id: 'agent-twice' });
    const r = await t.admin.post('/v1/agents', { id: 'agent-twice', adapter: 'other' });
    expect(r.status).toBe(409);
    expect(r.body.code).toBe('agent_exists');
  });

  it('should refuse malformed, padded and device-name ids with validation_failed', async () => {
    for (const id of ['Bad.Agent', ' codex', 'codex ', 'con', 'lpt1', '', 'a'.repeat(65), '1abc']) {
      const r = await t.admin.post('/v1/agents', { id });
      expect(r.status, id).toBe(400);
      expect(r.body.code).toBe('validation_failed');
    }
  });

  it('should refuse registration by a session with forbidden', async () => {
    const s = await t.session();
    const r = await s.client.post('/v1/agents', { id: 'agent-by-session' });
    expect(r.status).toBe(403);
    expect(r.body.code).toBe('forbidden');
  });

  it('should list Agents in byte order with a keyset cursor', async () => {
    const s = await t.session();
    const all = (await s.client.get('/v1/agents')).body.agents.map((a: any) => a.id);
    expect(all).toEqual([...all].sort());
    expect(all).toEqual(expect.arrayContaining(EXAMPLE_AGENTS));
    const first = await s.client.get('/v1/agents?limit=2');
    expect(first.body.agents).toHaveLength(2);
    const second = await s.client.get(`/v1/agents?limit=2&cursor=${first.body.nextCursor}`);
    expect(second.body.agents.map((a: any) => a.id)).toEqual(all.slice(2, 4));
    expect((await s.client.get('/v1/agents?cursor=nonsense')).body.code).toBe('invalid_cursor');
  });
});

describe('validate (seed 002 "Validation boundary")', () => {
  it('should return the normalised facts with sideEffects false and write nothing', async () => {
    const before = await rowCounts(t.sql);
    const r = await t.admin.post('/v1/graphs/validate', { graph: example('task-graph'), intentMap: example('intent-map') });
    expect(r.status).toBe(200);
    expect(r.body.ok).toBe(true);
    expect(r.body.validation).toEqual({ sideEffects: false });
    expect(r.body.facts.parent).toEqual({
      kind: 'parent-task',
      taskId: 'task-product-slice',
      planner: 'codex',
      reviewer: 'codex',
      state: 'CREATED',
      status: 'CREATED',
      maxConcurrency: 2,
    });
    expect(r.body.facts.subtasks.map((s: any) => [s.subtaskId, s.implementer, s.state, s.dependsOn])).toEqual([
      ['backend', 'agent-backend', 'PENDING', []],
      ['docs', 'agent-docs', 'PENDING', ['backend']],
      ['frontend', 'agent-frontend', 'PENDING', ['backend']],
    ]);
    expect(r.body.intentMap.subtasks).toEqual([
      { id: 'backend', writeIntent: ['src/server/**'] },
      { id: 'docs', writeIntent: [] },
      { id: 'frontend', writeIntent: ['src/web/components/**', 'src/web/index.ts'] },
    ]);
    expect(r.body.intentCoverage.subtasks.map((s: any) => s.coverage)).toEqual(['declared', 'explicit-empty', 'declared']);
    expect(await rowCounts(t.sql)).toEqual(before);
  });

  it('should accept a bare Task Graph document as the body', async () => {
    const r = await t.admin.post('/v1/graphs/validate', example('task-graph'));
    expect(r.status).toBe(200);
    expect(r.body.intentMap).toBeNull();
    expect(r.body.intentCoverage.available).toBe(false);
  });

  it('should answer TASK_GRAPH_INVALID with the contract error members when the graph is invalid', async () => {
    const graph = example('task-graph');
    graph.subtasks[1].dependsOn = ['absent'];
    const r = await t.admin.post('/v1/graphs/validate', { graph });
    expect(r.status).toBe(400);
    expect(r.headers.get('content-type')).toContain('application/problem+json');
    expect(r.body).toMatchObject({
      type: 'https://coord.dev/problems/TASK_GRAPH_INVALID',
      status: 400,
      code: 'TASK_GRAPH_INVALID',
      stage: 'graph-validation',
      recoverable: false,
      taskId: 'task-product-slice',
      details: { parentTaskId: 'task-product-slice', subtaskId: 'frontend' },
    });
    expect(r.body.detail).toBe('Task Graph v1 subtask "frontend" references missing dependency "absent".');
    expect(r.body.message).toBe(r.body.detail);
  });

  it('should report the same error as the pure contract for the seed catalogue cases', async () => {
    const configured = new Set(EXAMPLE_AGENTS);
    const cases: Array<(g: any) => void> = [
      (g) => {
        g.subtasks[1].id = 'backend';
      },
      (g) => {
        g.subtasks[0].id = 'Bad.ID';
      },
      (g) => {
        g.subtasks[0].dependsOn = ['backend'];
      },
      (g) => {
        g.subtasks[0].dependsOn = ['frontend'];
      },
      (g) => {
        g.subtasks[0].implementer = 'agent-z';
      },
      (g) => {
        g.parentTask.planner = 'agent-z';
      },
      (g) => {
        g.parentTask.reviewer = 'Bad.Agent';
      },
      (g) => {
        g.subtasks[2].spec = '   ';
      },
      (g) => {
        g.maxConcurrency = 0;
      },
      (g) => {
        g.maxConcurrency = 33;
      },
      (g) => {
        g.unexpected = true;
      },
      (g) => {
        g.subtasks[0].id = 'con';
      },
      (g) => {
        g.subtasks[0].implementer = ' codex';
      },
      (g) => {
        g.subtasks[1].dependsOn = ['backend', 'backend'];
      },
      (g) => {
        g.schemaVersion = 2;
      },
    ];
    for (const mutate of cases) {
      const graph = example('task-graph');
      mutate(graph);
      const expected = validateTaskGraph(graph, { configuredAgents: configured });
      expect(expected.ok).toBe(false);
      if (expected.ok) continue;
      const r = await t.admin.post('/v1/graphs/validate', { graph });
      expect(r.status, expected.error.message).toBe(400);
      expect({ stage: r.body.stage, message: r.body.message, details: r.body.details, taskId: r.body.taskId }).toEqual({
        stage: expected.error.stage,
        message: expected.error.message,
        details: expected.error.details,
        taskId: expected.error.taskId,
      });
    }
  });

  it('should name the cycle path alpha -> beta -> alpha', async () => {
    const graph = graphDoc('task-cycle-1', [
      { id: 'alpha', dependsOn: ['beta'] },
      { id: 'beta', dependsOn: ['alpha'] },
    ]);
    const r = await t.admin.post('/v1/graphs/validate', graph);
    expect(r.body.code).toBe('TASK_GRAPH_INVALID');
    expect(r.body.detail).toBe('Task Graph v1 contains a dependency cycle: alpha -> beta -> alpha.');
  });

  it('should refuse an Agent that is not in the registry as unknown or unconfigured', async () => {
    const graph = graphDoc('task-unconfigured-1', [{ id: 'alpha', implementer: 'agent-unregistered' }]);
    const r = await t.admin.post('/v1/graphs/validate', graph);
    expect(r.body.detail).toBe('Task Graph v1 subtask "alpha" Implementer "agent-unregistered" is unknown or unconfigured.');
    expect(r.body.details.agent).toBe('agent-unregistered');
  });

  it('should give stage intent-map-validation for an invalid Intent Map', async () => {
    const intentMap = example('intent-map');
    intentMap.subtasks[0].writeIntent = ['../escape/**'];
    const r = await t.admin.post('/v1/graphs/validate', { graph: example('task-graph'), intentMap });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: 'TASK_GRAPH_INVALID', stage: 'intent-map-validation', details: { subtaskId: 'backend' } });
    const pure = validateIntentMap(intentMap, validateTaskGraph(example('task-graph'), { configuredAgents: new Set(EXAMPLE_AGENTS) }) as any);
    expect(pure.ok).toBe(false);
  });

  it('should refuse a null body and a scalar body at graph-validation, not with a 500', async () => {
    for (const body of ['null', '42', '"text"', '[]']) {
      const r = await t.admin.post('/v1/graphs/validate', body);
      expect(r.status, body).toBe(400);
      expect(r.body).toMatchObject({ code: 'TASK_GRAPH_INVALID', stage: 'graph-validation', detail: 'Task Graph v1 input must be a JSON object.' });
    }
  });

  it('should refuse titles and specs Postgres cannot store on validate and create alike, writing nothing', async () => {
    const before = await rowCounts(t.sql);
    const cases: Array<[(g: any) => void, string, string | null]> = [
      [
        (g) => {
          g.subtasks[0].spec = 'before\u0000after';
        },
        'Task Graph v1 subtask "alpha" specification contains a NUL character (U+0000), which Coord cannot store.',
        'alpha',
      ],
      [
        (g) => {
          g.subtasks[0].title = 'half a pair \ud800';
        },
        'Task Graph v1 subtask "alpha" title contains an unpaired UTF-16 surrogate, which Coord cannot store.',
        'alpha',
      ],
      [
        (g) => {
          g.parentTask.title = 'a\u0000b';
        },
        'Task Graph v1 parentTask.title contains a NUL character (U+0000), which Coord cannot store.',
        null,
      ],
    ];
    for (const [mutate, message, subtaskId] of cases) {
      const graph = graphDoc(taskId('unstorable'), [{ id: 'alpha' }]);
      mutate(graph);
      expect(validateTaskGraph(graph, { configuredAgents: new Set(EXAMPLE_AGENTS) }).ok).toBe(true);
      for (const path of ['/v1/graphs/validate', '/v1/graphs']) {
        const r = await t.admin.post(path, graph);
        expect(r.status, path).toBe(400);
        expect(r.body).toMatchObject({ code: 'TASK_GRAPH_INVALID', stage: 'graph-validation', message, details: { subtaskId } });
      }
    }
    expect(await rowCounts(t.sql)).toEqual(before);
  });

  it('should answer malformed ids, scopes, topics and cursors with 4xx, never a 500', async () => {
    const s = await t.session();
    const nul = encodeURIComponent('task-a\u0000b');
    expect((await s.client.get(`/v1/graphs/${nul}`)).body.code).toBe('graph_not_found');
    expect((await s.client.get(`/v1/graphs/${nul}/plan`)).body.code).toBe('graph_not_found');
    expect((await s.client.get(`/v1/todos?scope=graph:${nul}`)).body.code).toBe('scope_not_found');
    expect((await s.client.get(`/v1/events/log?topic=todo:graph:${nul}&after=0`)).status).toBe(404);
    const forged = Buffer.from(JSON.stringify(['yesterday', 'task-x\u0000'])).toString('base64url');
    expect((await s.client.get(`/v1/graphs?cursor=${forged}`)).body.code).toBe('invalid_cursor');
    expect((await s.client.get(`/v1/agents?cursor=${Buffer.from(JSON.stringify(['a\u0000'])).toString('base64url')}`)).body.code).toBe('invalid_cursor');
    const graph = graphDoc(taskId('nul-agent'), [{ id: 'alpha', implementer: 'a\u0000b' }]);
    const r = await t.admin.post('/v1/graphs/validate', graph);
    expect(r.status).toBe(400);
    expect(r.body.stage).toBe('graph-validation');
  });

  it('should refuse a body that is not JSON with malformed_json', async () => {
    const r = await t.admin.post('/v1/graphs/validate', '{"schemaVersion":');
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('malformed_json');
  });
});

describe('create, status and inspect (seed 002 "Durable graph create, status, and inspect")', () => {
  it('should create the worked example with its frontier, todo rows, edges and events in one transaction', async () => {
    const s = await t.session();
    const r = await s.client.post('/v1/graphs', { graph: example('task-graph'), intentMap: example('intent-map') });
    expect(r.status).toBe(201);
    expect(r.headers.get('location')).toBe('/v1/graphs/task-product-slice');
    expect(r.headers.get('etag')).toBe('"1"');
    expect(r.body.validation).toEqual({ sideEffects: true });
    const g = r.body.graph;
    expect(g).toMatchObject({
      schemaVersion: 1,
      kind: 'task-graph',
      id: 'task-product-slice',
      parentTaskId: 'task-product-slice',
      scope: 'graph:task-product-slice',
      state: 'CREATED',
      status: 'CREATED',
      maxConcurrency: 2,
      revision: 1,
      createdBy: s.id,
    });
    expect(g.parentTask).toMatchObject({
      id: 'task-product-slice',
      title: 'Build the approved product slice',
      planner: 'codex',
      reviewer: 'codex',
      state: 'CREATED',
    });
    expect(g.frontier).toMatchObject({
      ready: ['backend'],
      waiting: ['docs', 'frontend'],
      blocked: [],
      running: [],
      eligible: ['backend'],
      capacityLimited: [],
      runningCount: 0,
      availableSlots: 2,
      maxConcurrency: 2,
    });
    expect(g.frontier.reasons).toEqual({
      backend: 'Ready: no dependencies.',
      docs: 'Waiting for dependencies: backend.',
      frontend: 'Waiting for dependencies: backend.',
    });
    expect(g.subtasks.map((x: any) => [x.id, x.state, x.status, x.implementer, x.title ?? null])).toEqual([
      ['backend', 'READY', 'READY', 'agent-backend', null],
      ['docs', 'WAITING', 'WAITING', 'agent-docs', 'Document the slice'],
      ['frontend', 'WAITING', 'WAITING', 'agent-frontend', null],
    ]);
    expect(g.intentCoverage).toMatchObject({ available: true, schemaVersion: 1, scopePolicy: 'warn' });
    expect(g.intentMap.subtasks[2]).toEqual({ id: 'frontend', writeIntent: ['src/web/components/**', 'src/web/index.ts'] });

    const todos = await t.sql<{ id: string; title: string; assignee: string; position: number; unfinished_deps: number; status: string; created_by: string }[]>`
      select id, title, assignee, position, unfinished_deps, status, created_by from todos where scope = 'graph:task-product-slice' order by position`;
    expect(todos.map((x) => [x.title, x.assignee, x.position, x.unfinished_deps, x.status, x.created_by])).toEqual([
      ['backend', 'agent:agent-backend', 1, 0, 'todo', s.id],
      ['Document the slice', 'agent:agent-docs', 2, 1, 'todo', s.id],
      ['frontend', 'agent:agent-frontend', 3, 1, 'todo', s.id],
    ]);
    expect(g.subtasks.map((x: any) => x.todoId)).toEqual(todos.map((x) => x.id));
    const edges = await t.sql`select todo_id, dependency_id from todo_dependencies where dependency_id = ${todos[0].id} order by todo_id`;
    expect(edges.map((e) => e.todo_id).sort()).toEqual([todos[1].id, todos[2].id].sort());
    const [stored] =
      await t.sql`select jsonb_typeof(parent) as parent, jsonb_typeof(intent_map) as map, parent->>'state' as state from graphs where id = 'task-product-slice'`;
    expect(stored).toEqual({ parent: 'object', map: 'object', state: 'CREATED' });
    const [scope] = await t.sql`select last_position from scopes where scope = 'graph:task-product-slice'`;
    expect(scope.last_position).toBe(3);
    const events = await t.sql<{ event: string; payload: any }[]>`select event, payload from events where topic = 'todo:graph:task-product-slice' order by id`;
    expect(events.map((e) => e.event)).toEqual(['TASK_GRAPH_CREATED', 'added', 'added', 'added']);
    expect(events[0].payload).toMatchObject({
      parentTaskId: 'task-product-slice',
      state: 'CREATED',
      maxConcurrency: 2,
      subtaskIds: ['backend', 'docs', 'frontend'],
      agent: 'codex',
      role: 'planner',
    });
    expect(events[0].payload.frontier.ready).toEqual(['backend']);

    const status = await s.client.get('/v1/graphs/task-product-slice');
    expect(status.status).toBe(200);
    expect(status.headers.get('etag')).toBe('"1"');
    expect(status.body.graph).toEqual(g);
  });

  it('should refuse a second create of the same id with TASK_STATE_CONFLICT and change nothing', async () => {
    const id = taskId('dup');
    const graph = graphDoc(id, [{ id: 'alpha' }]);
    expect((await t.admin.post('/v1/graphs', graph)).status).toBe(201);
    const before = await rowCounts(t.sql);
    const again = await t.admin.post('/v1/graphs', graphDoc(id, [{ id: 'beta' }, { id: 'gamma' }]));
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: 'TASK_STATE_CONFLICT', taskId: id, detail: `Task Graph or Task already exists: ${id}` });
    expect(await rowCounts(t.sql)).toEqual(before);
    const status = await t.admin.get(`/v1/graphs/${id}`);
    expect(status.body.graph.subtasks.map((x: any) => x.id)).toEqual(['alpha']);
  });

  it('should create exactly one graph when the same id is created concurrently', async () => {
    const id = taskId('race');
    const before = await rowCounts(t.sql);
    const results = await Promise.all(
      Array.from({ length: 8 }, () => t.admin.post('/v1/graphs', graphDoc(id, [{ id: 'alpha' }, { id: 'beta', dependsOn: ['alpha'] }]))),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409, 409, 409]);
    const after = await rowCounts(t.sql);
    expect(after.graphs - before.graphs).toBe(1);
    expect(after.todos - before.todos).toBe(2);
    expect(after.events - before.events).toBe(3);
  });

  it('should write nothing when create is refused as invalid', async () => {
    const before = await rowCounts(t.sql);
    const graph = example('task-graph');
    graph.parentTask.id = taskId('invalid');
    graph.subtasks[0].implementer = 'agent-z';
    const r = await t.admin.post('/v1/graphs', graph);
    expect(r.status).toBe(400);
    expect(r.body.stage).toBe('graph-validation');
    const intentMap = example('intent-map');
    intentMap.parentTaskId = 'task-other-1';
    const r2 = await t.admin.post('/v1/graphs', { graph: graphDoc(taskId('invalid-map'), [{ id: 'alpha' }]), intentMap });
    expect(r2.body.stage).toBe('intent-map-validation');
    expect(await rowCounts(t.sql)).toEqual(before);
  });

  it('should derive ERROR for a failed child while an unrelated sibling stays READY', async () => {
    const id = taskId('fail');
    await t.admin.post(
      '/v1/graphs',
      graphDoc(id, [{ id: 'alpha' }, { id: 'beta', dependsOn: ['alpha'] }, { id: 'gamma' }, { id: 'delta', dependsOn: ['beta'] }]),
    );
    await setSubtaskState(t.sql, id, 'alpha', 'FAILED', 'Implementer exited with code 1.');
    const g = (await t.admin.get(`/v1/graphs/${id}`)).body.graph;
    expect(g.state).toBe('ERROR');
    expect(g.parentTask.state).toBe('ERROR');
    expect(g.frontier).toMatchObject({ failed: ['alpha'], blocked: ['beta', 'delta'], ready: ['gamma'], eligible: ['gamma'] });
    expect(g.frontier.reasons.alpha).toBe('Implementer exited with code 1.');
    expect(g.frontier.reasons.beta).toBe('Blocked by dependencies: alpha (FAILED).');
    expect(g.frontier.reasons.delta).toBe('Blocked by dependencies: beta (BLOCKED).');
    expect(g.subtasks.find((x: any) => x.id === 'gamma').state).toBe('READY');
  });

  it('should derive RUNNING, unlock dependents of a SUCCEEDED subtask and reach REVIEWING', async () => {
    const id = taskId('progress');
    await t.admin.post('/v1/graphs', graphDoc(id, [{ id: 'alpha' }, { id: 'beta', dependsOn: ['alpha'] }], 1));
    await setSubtaskState(t.sql, id, 'alpha', 'RUNNING');
    let g = (await t.admin.get(`/v1/graphs/${id}`)).body.graph;
    expect(g.state).toBe('RUNNING');
    expect(g.frontier).toMatchObject({ running: ['alpha'], waiting: ['beta'], runningCount: 1, availableSlots: 0 });
    await setSubtaskState(t.sql, id, 'alpha', 'SUCCEEDED');
    g = (await t.admin.get(`/v1/graphs/${id}`)).body.graph;
    expect(g.frontier).toMatchObject({ succeeded: ['alpha'], ready: ['beta'], eligible: ['beta'] });
    expect(g.frontier.reasons.beta).toBe('Ready: all dependencies succeeded.');
    expect(g.subtasks.find((x: any) => x.id === 'beta').todoStatus).toBe('todo');
    await setSubtaskState(t.sql, id, 'beta', 'SUCCEEDED');
    g = (await t.admin.get(`/v1/graphs/${id}`)).body.graph;
    expect(g.state).toBe('REVIEWING');
  });

  it('should return TASK_STATE_CONFLICT, without repair, when stored facts contradict each other', async () => {
    const id = taskId('tamper');
    await t.admin.post('/v1/graphs', {
      graph: graphDoc(id, [{ id: 'alpha' }, { id: 'beta' }]),
      intentMap: {
        schemaVersion: 1,
        parentTaskId: id,
        subtasks: [
          { id: 'alpha', writeIntent: ['src/**'] },
          { id: 'beta', writeIntent: [] },
        ],
      },
    });
    await t.sql`update graphs set intent_map = jsonb_set(intent_map, '{subtasks,0,writeIntent}', '["/etc/**"]') where id = ${id}`;
    for (const path of [`/v1/graphs/${id}`, `/v1/graphs/${id}/inspect`, `/v1/graphs/${id}/plan`]) {
      const r = await t.admin.get(path);
      expect(r.status, path).toBe(409);
      expect(r.body).toMatchObject({ code: 'TASK_STATE_CONFLICT', stage: 'graph-scheduling' });
      expect(r.body.detail).toContain('Intent Map');
    }
    const [row] = await t.sql`select intent_map from graphs where id = ${id}`;
    expect(row.intent_map.subtasks[0].writeIntent).toEqual(['/etc/**']);
  });

  it('should hide a graph from sessions outside the creating subtree with graph_not_found', async () => {
    const root = await t.session({ name: 'planner-root' });
    const child = await t.session({ parentId: root.id, by: root.client });
    const stranger = await t.session();
    const id = taskId('scope');
    expect((await child.client.post('/v1/graphs', graphDoc(id, [{ id: 'alpha' }]))).status).toBe(201);
    expect((await root.client.get(`/v1/graphs/${id}`)).status).toBe(200);
    expect((await t.admin.get(`/v1/graphs/${id}`)).status).toBe(200);
    for (const path of [`/v1/graphs/${id}`, `/v1/graphs/${id}/inspect`, `/v1/graphs/${id}/plan`]) {
      const r = await stranger.client.get(path);
      expect(r.status).toBe(404);
      expect(r.body.code).toBe('graph_not_found');
    }
    const byUser = taskId('user-graph');
    expect((await t.admin.post('/v1/graphs', graphDoc(byUser, [{ id: 'alpha' }]))).status).toBe(201);
    expect((await root.client.get(`/v1/graphs/${byUser}`)).body.code).toBe('graph_not_found');
    const missing = await t.admin.get('/v1/graphs/task-does-not-exist');
    expect(missing.body).toMatchObject({ code: 'graph_not_found', detail: 'Task Graph not found: task-does-not-exist' });
  });

  it('should keep the optional parent spec and implementer and bound long todo titles', async () => {
    const id = taskId('parent-facts');
    const graph = graphDoc(id, [{ id: 'alpha', title: `  ${'ü'.repeat(400)}  ` }]);
    graph.parentTask.spec = '  The parent specification.  ';
    graph.parentTask.implementer = 'agy';
    const r = await t.admin.post('/v1/graphs', graph);
    expect(r.status).toBe(201);
    expect(r.body.graph.parentTask).toMatchObject({ spec: 'The parent specification.', implementer: 'agy' });
    expect(r.body.graph.subtasks[0].title).toBe('ü'.repeat(400));
    const [todo] = await t.sql<{ title: string }[]>`select title from todos where scope = ${`graph:${id}`}`;
    expect(Buffer.byteLength(todo.title)).toBe(500);
    expect(todo.title).toBe('ü'.repeat(250));
  });

  it('should return the lifecycle events in inspect', async () => {
    const id = taskId('inspect');
    await t.admin.post('/v1/graphs', graphDoc(id, [{ id: 'alpha' }, { id: 'beta', dependsOn: ['alpha'] }]));
    const r = await t.admin.get(`/v1/graphs/${id}/inspect`);
    expect(r.status).toBe(200);
    expect(r.body.graph.id).toBe(id);
    expect(r.body.eventsTruncated).toBe(false);
    expect(r.body.events).toHaveLength(1);
    expect(r.body.events[0]).toMatchObject({ event: 'TASK_GRAPH_CREATED', data: { parentTaskId: id, subtaskIds: ['alpha', 'beta'], state: 'CREATED' } });
    expect(r.body.events[0].seq).toBeGreaterThan(0);
  });
});

describe('graph list', () => {
  it('should list newest update first with a keyset cursor and only graphs the caller may see', async () => {
    const root = await t.session();
    const other = await t.session();
    const ids = [taskId('list'), taskId('list'), taskId('list')];
    for (const id of ids)
      expect((await root.client.post('/v1/graphs', graphDoc(id, [{ id: 'alpha' }, { id: 'beta', dependsOn: ['alpha'] }]))).status).toBe(201);
    await t.sql`update graphs set updated_at = now() + interval '1 hour' where id = ${ids[0]}`;
    const mine = (await root.client.get('/v1/graphs')).body.graphs;
    expect(mine.map((g: any) => g.id)).toEqual([ids[0], ids[2], ids[1]]);
    expect(mine[0]).toMatchObject({
      title: `Graph ${ids[0]}`,
      state: 'CREATED',
      subtaskCount: 2,
      counts: { ready: 1, waiting: 1 },
      intentCoverageAvailable: false,
      scopePolicy: null,
    });
    expect((await other.client.get('/v1/graphs')).body.graphs).toEqual([]);
    const page1 = await root.client.get('/v1/graphs?limit=2');
    expect(page1.body.graphs.map((g: any) => g.id)).toEqual([ids[0], ids[2]]);
    const page2 = await root.client.get(`/v1/graphs?limit=2&cursor=${page1.body.nextCursor}`);
    expect(page2.body.graphs.map((g: any) => g.id)).toEqual([ids[1]]);
    expect(page2.body.nextCursor).toBeNull();
    const all = (await t.admin.get('/v1/graphs?limit=100000')).body.graphs.map((g: any) => g.updatedAt);
    expect(all).toEqual([...all].sort().reverse());
  });
});

describe('todo views of scope graph:<id> (one engine)', () => {
  it('should list the subtasks with effective statuses and refuse engine claims by sessions', async () => {
    const root = await t.session();
    const id = taskId('views');
    await root.client.post('/v1/graphs', graphDoc(id, [{ id: 'alpha' }, { id: 'beta', dependsOn: ['alpha'] }]));
    const list = await root.client.get(`/v1/todos?scope=graph:${id}`);
    expect(list.status).toBe(200);
    const [alpha, beta] = list.body.items;
    expect([alpha.title, alpha.status, alpha.ready, alpha.assignee]).toEqual(['alpha', 'todo', true, 'agent:codex']);
    expect([beta.title, beta.status, beta.ready, beta.blockedBy]).toEqual(['beta', 'blocked', false, [alpha.id]]);
    expect((await root.client.get(`/v1/todos?scope=graph:${id}&status=todo`)).body.items.map((i: any) => i.id)).toEqual([alpha.id]);

    const claim = await root.client.post(`/v1/todos/${alpha.id}/claim`);
    expect(claim.status).toBe(403);
    expect(claim.body.code).toBe('reserved_for_assignee');
    // `next` in a graph scope is the graph's fleet claim: it needs a session bound to an Agent.
    const next = await root.client.post('/v1/todos/next', { scope: `graph:${id}` });
    expect(next.body).toEqual({ claimed: false, reason: 'the caller is not a session bound to an Agent (agentId)' });

    const stranger = await t.session();
    // An outsider cannot tell this graph from one that does not exist.
    expect((await stranger.client.get(`/v1/todos?scope=graph:${id}`)).body.code).toBe('scope_not_found');
    expect((await stranger.client.get(`/v1/todos/${alpha.id}`)).status).toBe(404);
    expect((await t.admin.get(`/v1/todos?scope=graph:${id}`)).body.items).toHaveLength(2);
    expect((await t.admin.get('/v1/todos?scope=graph:task-nope-1')).body.code).toBe('scope_not_found');
  });

  it('should publish the create on the SSE topic todo:graph:<id>', async () => {
    const root = await t.session();
    const id = taskId('topic');
    await root.client.post('/v1/graphs', graphDoc(id, [{ id: 'alpha' }]));
    const log = await root.client.get(`/v1/events/log?topic=todo:graph:${id}&after=0`);
    expect(log.status).toBe(200);
    expect(log.body.events.map((e: any) => e.event)).toEqual(['TASK_GRAPH_CREATED', 'added']);
    expect(log.body.events[1].data).toMatchObject({ event: 'added', scope: `graph:${id}`, status: 'todo', subtaskId: 'alpha', revision: 1 });
    const stranger = await t.session();
    expect((await stranger.client.get(`/v1/events/log?topic=todo:graph:${id}&after=0`)).status).toBe(404);
  });
});
