/**
 * `coord worker --agent <id>`: a worker on another machine pulls its Agent's subtasks as they
 * become claimable, woken by the graph's event stream (docs/architecture.md §D8). Real git, real CLI
 * processes, a real server.
 */
import { rmSync } from 'node:fs';
import { createClient, type CoordClient } from '@coord/sdk';
import { work } from '../../cli/runner/runner.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { cleanEnv, spawnCoord, tempHome } from '../cli/helpers.js';
import { committingScript, coordAs, userRepo } from './runner.helpers.js';

let t: TestApp;
const repos: string[] = [];
beforeAll(async () => {
  t = await startTestApp();
  for (const id of ['planner', 'reviewer', 'builder', 'other']) await t.admin.post('/v1/agents', { id });
});
afterAll(async () => {
  for (const r of repos) rmSync(r, { recursive: true, force: true });
  await t?.close();
});

const agents = { builder: { adapter: 'shell', command: committingScript(['src/$COORD_SUBTASK_ID/impl.txt']) }, other: { adapter: 'shell', command: 'exit 1' } };

async function graphFor(id: string) {
  const owner = await t.session({ name: `owner-${id}` });
  const graph = {
    schemaVersion: 1,
    parentTask: { id, title: 'Worker graph', planner: 'planner', reviewer: 'reviewer' },
    subtasks: [
      { id: 'first', implementer: 'builder', spec: 'First.' },
      { id: 'second', implementer: 'builder', spec: 'Second.', dependsOn: ['first'] },
      { id: 'theirs', implementer: 'other', spec: 'Not for this worker.' },
    ],
    maxConcurrency: 2,
  };
  expect((await owner.client.post('/v1/graphs', graph)).status).toBe(201);
  return owner;
}

async function workerToken(): Promise<string> {
  const r = await t.admin.post('/v1/sessions', { name: 'builder-worker', agentId: 'builder' });
  return r.body.token;
}

const states = async (owner: Awaited<ReturnType<TestApp['session']>>, id: string) =>
  Object.fromEntries((await owner.client.get(`/v1/graphs/${id}`)).body.graph.subtasks.map((s: any) => [s.subtaskId, s.state]));

describe('coord worker', () => {
  it('--once runs what its Agent can claim now, fixing the base on the first claim, and leaves other Agents’ work alone', async () => {
    const repo = userRepo(agents);
    repos.push(repo);
    const owner = await graphFor('task-worker-once');
    const cli = coordAs(t, await workerToken());
    const r = await cli.run(['worker', '--agent', 'builder', '--graph', 'task-worker-once', '--once', '--root', repo, '--json']);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.filter((l) => l.event === 'outcome').map((l) => l.subtaskId)).toEqual(['first', 'second']);
    const report = lines[lines.length - 1];
    expect(report.event).toBe('report');
    expect(report.outcomes.map((o: any) => [o.subtaskId, o.state])).toEqual([
      ['first', 'SUCCEEDED'],
      ['second', 'SUCCEEDED'],
    ]);
    expect(await states(owner, 'task-worker-once')).toEqual({ first: 'SUCCEEDED', second: 'SUCCEEDED', theirs: 'READY' });
  });

  it('waits on the event stream and runs work as soon as it is claimable', async () => {
    const repo = userRepo(agents);
    repos.push(repo);
    const owner = await graphFor('task-worker-live');
    // Nothing for the worker yet: the owner stops `first` before the worker starts.
    await owner.client.post('/v1/graphs/task-worker-live/stop', { subtaskId: 'first', reason: 'not yet' });
    const cli = coordAs(t, await workerToken());
    const worker = spawnCoord(['worker', '--agent', 'builder', '--graph', 'task-worker-live', '--root', repo], { env: cli.env });
    try {
      await new Promise((r) => setTimeout(r, 1500));
      expect(await states(owner, 'task-worker-live')).toMatchObject({ first: 'STOPPED', second: 'BLOCKED' });
      // Resuming writes an event: the worker wakes, claims `first`, and its success readies `second`.
      await owner.client.post('/v1/graphs/task-worker-live/resume', { subtaskId: 'first' });
      await worker.waitFor((out) => /"subtaskId":"second".*"state":"SUCCEEDED"/.test(out), 20_000);
      expect(await states(owner, 'task-worker-live')).toEqual({ first: 'SUCCEEDED', second: 'SUCCEEDED', theirs: 'READY' });
    } finally {
      worker.child.kill('SIGTERM');
    }
    expect(await worker.exited).toBe(0);
  });

  it('finds work that became claimable after its first look but before its event stream opened', async () => {
    const repo = userRepo(agents);
    repos.push(repo);
    const owner = await graphFor('task-worker-gap');
    await owner.client.post('/v1/graphs/task-worker-gap/stop', { subtaskId: 'first', reason: 'not yet' });
    const client = createClient({ baseUrl: t.base, token: await workerToken() });
    // The worker reads the graph once to pick its graphs and once in its first drain, which finds
    // nothing (first is STOPPED). Right after that second read, before the worker subscribes, the
    // owner resumes first: its event is written before the stream exists.
    let reads = 0;
    const graphs = new Proxy(client.graphs, {
      get(target, prop) {
        const v = Reflect.get(target, prop, target);
        if (prop !== 'get') return typeof v === 'function' ? v.bind(target) : v;
        return async (...args: Parameters<CoordClient['graphs']['get']>) => {
          const g = await target.get(...args);
          if (++reads === 2) expect((await owner.client.post('/v1/graphs/task-worker-gap/resume', { subtaskId: 'first' })).status).toBe(200);
          return g;
        };
      },
    });
    const proxied = new Proxy(client, { get: (target, prop) => (prop === 'graphs' ? graphs : Reflect.get(target, prop, target)) });
    const stop = new AbortController();
    const done: string[] = [];
    const finished = new Promise<void>((resolve) => {
      const worker = work({ client: proxied, url: t.base, root: repo, env: cleanEnv(tempHome()) }, 'builder', {
        graphs: ['task-worker-gap'],
        signal: stop.signal,
        onOutcome: (o) => {
          done.push(`${o.subtaskId} ${o.state}`);
          if (done.length === 2) resolve();
        },
      });
      void worker.then(
        () => resolve(),
        () => resolve(),
      ); // ended by the abort below, or failed
    });
    const timer = setTimeout(() => stop.abort(), 20_000);
    await finished;
    clearTimeout(timer);
    stop.abort();
    expect(done).toEqual(['first SUCCEEDED', 'second SUCCEEDED']);
  });

  it('refuses a token that is not a session bound to the Agent', async () => {
    const repo = userRepo(agents);
    repos.push(repo);
    await graphFor('task-worker-refuse');
    const r = await coordAs(t, t.admin.token!).json(['worker', '--agent', 'builder', '--once', '--root', repo]);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stderr).error.code).toBe('AUTH_REQUIRED');
  });
});
