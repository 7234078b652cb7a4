/**
 * `coord graph validate|create|list|status|inspect|plan` and `coord agent register|list`
 * (Task Graph v1, seed 002) as a process: files and stdin in, the contract's refusals out with
 * their stage and exit 1.
 */
import { truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { runProcess } from '../helpers/process.js';
import { builtCoord, cleanEnv, runCoord, runInProcess, tempHome } from './helpers.js';

let t: TestApp;
let home: string;
let env: NodeJS.ProcessEnv;
beforeAll(async () => {
  t = await startTestApp();
  home = tempHome();
  env = cleanEnv(home, { COORD_URL: t.base, COORD_TOKEN: t.admin.token });
});
afterAll(async () => t?.close());

const graph = {
  schemaVersion: 1,
  parentTask: { id: 'task-cli-slice', title: 'Build the slice', planner: 'codex', reviewer: 'codex' },
  subtasks: [
    { id: 'backend', implementer: 'agent-backend', spec: 'Implement the backend.', dependsOn: [] },
    { id: 'docs', implementer: 'agent-docs', spec: 'Document it.', dependsOn: ['backend'] },
    { id: 'frontend', implementer: 'agent-frontend', spec: 'Implement the frontend.', dependsOn: [] },
  ],
  maxConcurrency: 2,
};
const intentMap = {
  schemaVersion: 1,
  parentTaskId: 'task-cli-slice',
  scopePolicy: 'warn',
  subtasks: [
    { id: 'backend', writeIntent: ['src/server/**'] },
    { id: 'docs', writeIntent: ['docs/**'] },
    { id: 'frontend', writeIntent: ['src/web/**'] },
  ],
};

describe('coord agent and coord graph', () => {
  it('should register agents, validate, create, and read a graph with its plan', async () => {
    for (const id of ['codex', 'agent-backend', 'agent-docs', 'agent-frontend']) {
      expect((await runInProcess(['agent', 'register', id, '--adapter', 'codex'], env)).code).toBe(0);
    }
    const agents = JSON.parse((await runInProcess(['agent', 'list'], env)).stdout).agents;
    expect(agents.map((a: { id: string }) => a.id)).toEqual(['agent-backend', 'agent-docs', 'agent-frontend', 'codex']);

    const graphFile = path.join(home, 'graph.json');
    const mapFile = path.join(home, 'intent-map.json');
    writeFileSync(graphFile, JSON.stringify(graph));
    writeFileSync(mapFile, JSON.stringify(intentMap));
    const valid = await runCoord(['graph', 'validate', graphFile, '--intent-map', mapFile, '--human'], { env });
    expect(valid).toMatchObject({ code: 0, stdout: 'Valid: task-cli-slice with 3 subtasks, intent coverage declared (warn). Nothing was written.\n' });

    // Create from stdin, as a pipeline would.
    const created = await runCoord(['graph', 'create', '-'], { env, input: JSON.stringify({ graph, intentMap }) });
    expect(created.code, created.stderr).toBe(0);
    expect(JSON.parse(created.stdout).graph).toMatchObject({ id: 'task-cli-slice', scope: 'graph:task-cli-slice' });

    const status = await runCoord(['graph', 'status', 'task-cli-slice', '--human'], { env });
    expect(status.stdout).toMatch(/^task-cli-slice {2}Build the slice: \w+, 3 subtasks, maxConcurrency 2/);
    expect(status.stdout).toMatch(/^docs +WAITING +agent-docs +backend +td-[0-9a-f]{16} \(blocked\)/m);
    const plan = await runInProcess(['graph', 'plan', 'task-cli-slice', '--human'], env);
    expect(plan.stdout.split('\n')[0]).toMatch(
      /^Plan for task-cli-slice: wave backend, frontend; 2 of 2 slots free; concurrent writes DECLARED_NON_CONFLICTING$/,
    );
    const list = await runInProcess(['graph', 'list', '--human'], env);
    expect(list.stdout).toMatch(/^task-cli-slice +\w+ +3 +2 /m);
    const inspect = JSON.parse((await runInProcess(['graph', 'inspect', 'task-cli-slice'], env)).stdout);
    expect(inspect.events.map((e: { event: string }) => e.event)).toContain('TASK_GRAPH_CREATED');
    // The graph's scope is a todo scope like any other.
    const items = JSON.parse((await runInProcess(['todo', 'list', '--scope', 'graph:task-cli-slice'], env)).stdout).items;
    expect(items).toHaveLength(3);
  });

  it('should exit 1 and name the stage when the contract refuses a graph', async () => {
    const file = path.join(home, 'bad.json');
    writeFileSync(file, JSON.stringify({ ...graph, schemaVersion: 2 }));
    const human = await runCoord(['graph', 'validate', file, '--human'], { env });
    expect(human.code).toBe(1);
    expect(human.stderr).toMatch(/^error: .*schemaVersion.* \(TASK_GRAPH_INVALID, stage graph-validation\)\n$/);
    const json = await runInProcess(['graph', 'create', file, '--json'], env);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stderr).error).toMatchObject({ code: 'TASK_GRAPH_INVALID', stage: 'graph-validation', status: 400 });
  });

  it('should refuse a file that is not JSON as a usage error', async () => {
    const file = path.join(home, 'not.json');
    writeFileSync(file, 'schemaVersion: 1');
    const r = await runInProcess(['graph', 'validate', file], env);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stderr).error.detail).toContain('is not JSON');
  });

  it('should refuse input over 64 MiB before parsing it, from a file by its size and from stdin as it streams (seed 002 input bound)', async () => {
    // A sparse 200 MiB file: refused by its size, never read (and nothing is sent: the URL is unreachable).
    const big = path.join(home, 'huge-graph.json');
    writeFileSync(big, '');
    truncateSync(big, 200 * 1024 * 1024);
    const offline = { ...env, COORD_URL: 'http://127.0.0.1:9' };
    const r = await runCoord(['graph', 'validate', big, '--human'], { env: offline });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('larger than 64 MiB');
    expect(r.stderr).toContain('(TASK_GRAPH_INVALID, stage graph-validation)');
    const j = await runCoord(['graph', 'create', big, '--json'], { env: offline });
    expect(JSON.parse(j.stderr).error).toMatchObject({ code: 'TASK_GRAPH_INVALID', stage: 'graph-validation', recoverable: false });
    // An Intent Map file is CLI input too.
    const small = path.join(home, 'small-graph.json');
    writeFileSync(small, JSON.stringify(graph));
    expect((await runCoord(['graph', 'validate', small, '--intent-map', big, '--human'], { env: offline })).stderr).toContain(
      'TASK_GRAPH_INVALID, stage graph-validation',
    );
    // Stdin has no size: the real binary stops reading past 64 MiB and refuses; the writer is cut off.
    const piped = await runProcess(
      'bash',
      ['-c', `head -c ${65 * 1024 * 1024} /dev/zero | ${JSON.stringify(process.execPath)} ${JSON.stringify(builtCoord())} graph validate - --human`],
      { env: offline },
    );
    expect(piped.code).toBe(1);
    expect(piped.stderr).toContain('stdin is larger than 64 MiB');
  });
});
