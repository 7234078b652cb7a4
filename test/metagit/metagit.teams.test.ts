/**
 * metagit under teams (step 3; docs/architecture.md "Teams"): intent and task-graph ids
 * are names within a team. Two teams both make `shared-intent` and the graph `shared` side by side;
 * each lists and reads only its own; expanding, starting and completing nodes in one leaves the
 * other exactly as it was; another team's ids answer word for word like ids that do not exist; and
 * Coord's own jobs (the session-stop hook, the stranded-start sweep) act on each graph in its own
 * team, writing its events there.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUser } from '../../src/tokens/tokens.bootstrap.js';
import { sweepStrandedNodes } from '../../src/metagit/metagit.locked.js';
import { DEFAULT_TEAM } from '../../src/db/schema/teams.js';
import { startTestApp, type Client, type TestApp } from '../helpers/app.js';

const B = 'tm-b'; // sorts before DEFAULT_TEAM ('tm-default') in the SQL checks below

let t: TestApp;
let opA: Client;
let opB: Client;
let agentA: Awaited<ReturnType<TestApp['session']>>;
let agentB: Awaited<ReturnType<TestApp['session']>>;

beforeAll(async () => {
  t = await startTestApp();
  await t.sql`insert into teams (id, name, created_by) values (${B}, 'b', 'test')`;
  opA = t.admin;
  opB = t.admin.as((await createUser(t.sql, 'opB', undefined, { teamId: B })).token);
  agentA = await t.session({ name: 'agent-a' });
  agentB = await t.session({ by: opB, name: 'agent-b' });
});
afterAll(async () => t?.close());

const act = (c: Client, id: string, node: string, verb: string, body: unknown = {}) => c.post(`/v1/task-graphs/${id}/nodes/${node}/${verb}`, body);
const graphOf = async (c: Client, id: string) => {
  const r = await c.get(`/v1/task-graphs/${id}`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.graph;
};
const ready = async (c: Client, id: string) => (await graphOf(c, id)).nodes.filter((n: any) => n.status === 'ready').map((n: any) => n.nodeId);
/** The RFC events of graph `id` as `c`'s team reads them (the event log of `todo:metagit:<id>`). */
const events = async (c: Client, id: string) => {
  const r = await c.get(`/v1/events/log?topic=todo:metagit:${id}&limit=1000`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.events.filter((e: any) => /^Task/.test(e.event)).map((e: any) => `${e.event}${e.data.nodeId ? ` ${e.data.nodeId}` : ''}`);
};

describe('metagit ids are names within a team', () => {
  it('two teams create the same intent id and task-graph id side by side; each lists and reads only its own', async () => {
    for (const [c, team] of [
      [opA, 'A'],
      [opB, 'B'],
    ] as const) {
      const i = await c.post('/v1/intents', { intentId: 'shared-intent', title: `Intent ${team}`, goal: `Goal ${team}` });
      expect(i.status, JSON.stringify(i.body)).toBe(201);
    }
    for (const [a, team] of [
      [agentA, 'A'],
      [agentB, 'B'],
    ] as const) {
      const g = await a.client.post('/v1/task-graphs', { graphId: 'shared', title: `Graph ${team}`, goal: `Ship ${team}.` });
      expect(g.status, JSON.stringify(g.body)).toBe(201);
      expect(g.body.graph).toMatchObject({ graphId: 'shared', title: `Graph ${team}`, rootIntentId: 'intent-shared', scope: 'metagit:shared' });
    }
    // A taken id is still taken within its team (and writes nothing).
    expect((await opB.post('/v1/intents', { intentId: 'shared-intent', title: 'Again', goal: 'g' })).body.code).toBe('intent_exists');
    expect((await agentB.client.post('/v1/task-graphs', { graphId: 'shared', title: 'Again', goal: 'g' })).body.code).toBe('task_graph_exists');

    for (const [c, team] of [
      [opA, 'A'],
      [opB, 'B'],
    ] as const) {
      expect((await c.get('/v1/intents/shared-intent')).body.intent).toMatchObject({
        intentId: 'shared-intent',
        title: `Intent ${team}`,
        goal: `Goal ${team}`,
      });
      expect((await c.get('/v1/intents/intent-shared')).body.intent).toMatchObject({ title: `Graph ${team}`, goal: `Ship ${team}.` });
      expect((await c.get('/v1/intents')).body.intents.map((i: any) => [i.intentId, i.title])).toEqual([
        ['intent-shared', `Graph ${team}`],
        ['shared-intent', `Intent ${team}`],
      ]);
      expect((await c.get('/v1/task-graphs')).body.graphs.map((g: any) => [g.graphId, g.title])).toEqual([['shared', `Graph ${team}`]]);
      expect((await graphOf(c, 'shared')).title).toBe(`Graph ${team}`);
    }
    for (const [a, team] of [
      [agentA, 'A'],
      [agentB, 'B'],
    ] as const) {
      expect((await a.client.get('/v1/task-graphs')).body.graphs.map((g: any) => [g.graphId, g.title])).toEqual([['shared', `Graph ${team}`]]);
      expect((await a.client.get('/v1/intents')).body.intents.map((i: any) => [i.intentId, i.title])).toEqual([['intent-shared', `Graph ${team}`]]);
    }
    expect(await t.sql`select team_id, id, root_intent_id from metagit_graphs order by team_id`).toEqual([
      { team_id: B, id: 'shared', root_intent_id: 'intent-shared' },
      { team_id: DEFAULT_TEAM, id: 'shared', root_intent_id: 'intent-shared' },
    ]);
  });

  it('expanding, starting and completing nodes in one team leaves the other’s same-named graph untouched', async () => {
    // The same outline gives the same node ids in both: nothing collides across teams.
    for (const a of [agentA, agentB]) {
      const r = await a.client.post('/v1/task-graphs/shared/expand', { outline: 'Root\n  Child\n' });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.added.map((n: any) => [n.nodeId, n.dependsOn])).toEqual([
        ['root', []],
        ['child', ['root']],
      ]);
    }
    const beforeB = await graphOf(agentB.client, 'shared');
    const eventsB = await events(opB, 'shared');

    // Team A starts and completes its root.
    expect((await act(agentA.client, 'shared', 'root', 'start')).status).toBe(200);
    expect((await act(agentA.client, 'shared', 'root', 'complete')).status).toBe(200);
    expect(await ready(agentA.client, 'shared')).toEqual(['child']);
    expect(await graphOf(agentB.client, 'shared')).toEqual(beforeB);
    expect(await graphOf(opB, 'shared')).toEqual(beforeB);
    expect(await events(opB, 'shared')).toEqual(eventsB);

    // Team B's `next` in its scope `metagit:shared` starts its own root, not A's child.
    const beforeA = await graphOf(agentA.client, 'shared');
    const next = await agentB.client.post('/v1/todos/next', { scope: 'metagit:shared' });
    expect(next.body).toMatchObject({ claimed: true, item: { title: 'Root', status: 'in-progress', id: beforeB.nodes[0].todoId } });
    expect((await graphOf(agentB.client, 'shared')).nodes.map((n: any) => [n.nodeId, n.status])).toEqual([
      ['root', 'running'],
      ['child', 'pending'],
    ]);
    expect((await act(agentB.client, 'shared', 'root', 'complete')).status).toBe(200);
    expect(await ready(agentB.client, 'shared')).toEqual(['child']);
    expect(await graphOf(agentA.client, 'shared')).toEqual(beforeA);

    // Team A blocks its child; B's child stays ready.
    expect((await act(agentA.client, 'shared', 'child', 'block', { reason: 'A only' })).status).toBe(200);
    expect((await graphOf(agentB.client, 'shared')).nodes.map((n: any) => [n.nodeId, n.status])).toEqual([
      ['root', 'completed'],
      ['child', 'ready'],
    ]);

    const history = [
      'TaskGraphCreated',
      'TaskNodeCreated root',
      'TaskNodeCreated child',
      'TaskReady root',
      'TaskStarted root',
      'TaskCompleted root',
      'TaskReady child',
    ];
    expect(await events(opA, 'shared')).toEqual([...history, 'TaskBlocked child']);
    expect(await events(opB, 'shared')).toEqual(history);
    // The engine rows, the nodes and every event carry their team.
    expect(await t.sql`select team_id, title, status from todos where scope = 'metagit:shared' order by team_id, position`).toEqual([
      { team_id: B, title: 'Root', status: 'done' },
      { team_id: B, title: 'Child', status: 'todo' },
      { team_id: DEFAULT_TEAM, title: 'Root', status: 'done' },
      { team_id: DEFAULT_TEAM, title: 'Child', status: 'blocked' },
    ]);
    expect(
      await t.sql`select n.team_id, count(*)::int as n from metagit_nodes n join todos t on t.id = n.todo_id and t.team_id = n.team_id where n.graph_id = 'shared' group by 1 order by 1`,
    ).toEqual([
      { team_id: B, n: 2 },
      { team_id: DEFAULT_TEAM, n: 2 },
    ]);
    expect(
      await t.sql`select team_id, count(*)::int as n from events where topic = 'todo:metagit:shared' and event like 'Task%' group by 1 order by 1`,
    ).toEqual([
      { team_id: B, n: 7 },
      { team_id: DEFAULT_TEAM, n: 8 },
    ]);
  });

  it('another team’s graph, node and intent ids answer exactly like ids that do not exist', async () => {
    const probes: [Client, 'get' | 'post' | 'put', string, unknown?][] = [];
    for (const c of [opA, agentA.client]) {
      probes.push(
        [c, 'get', '/v1/task-graphs/only-b'],
        [c, 'get', '/v1/task-graphs/only-b/ready'],
        [c, 'get', '/v1/task-graphs/only-b/nodes/n'],
        [c, 'post', '/v1/task-graphs/only-b/expand', { outline: 'x' }],
        [c, 'post', '/v1/task-graphs/only-b/cancel', {}],
        [c, 'post', '/v1/task-graphs/only-b/reopen', {}],
        [c, 'post', '/v1/task-graphs/only-b/nodes/n/start', {}],
        [c, 'post', '/v1/task-graphs/only-b/nodes/n/complete', {}],
        [c, 'post', '/v1/task-graphs/only-b/nodes/n/cancel', {}],
        [c, 'post', '/v1/task-graphs/only-b/nodes/n/reopen', {}],
        [c, 'post', '/v1/task-graphs/only-b/nodes/n/block', { reason: 'x' }],
        [c, 'put', '/v1/task-graphs/only-b/nodes/n/acl', { agentId: 'ag' }],
        [c, 'get', '/v1/intents/only-b-intent'],
        [c, 'get', '/v1/intents/intent-only-b'],
        [c, 'get', '/v1/todos?scope=metagit:only-b'],
        [c, 'post', '/v1/todos/next', { scope: 'metagit:only-b' }],
      );
    }
    const run = () =>
      Promise.all(
        probes.map(async ([c, m, path, body]) => {
          const r = m === 'get' ? await c.get(path) : m === 'put' ? await c.put(path, body) : await c.post(path, body);
          return { path, status: r.status, body: r.body };
        }),
      );
    const missing = await run();
    for (const r of missing.filter((x) => x.path.startsWith('/v1/task-graphs/') && !x.path.endsWith('/start'))) {
      expect([r.path, r.status, r.body.code]).toEqual([r.path, 404, 'task_graph_not_found']);
    }
    for (const r of missing.filter((x) => x.path.startsWith('/v1/intents/'))) expect([r.status, r.body.code]).toEqual([404, 'intent_not_found']);

    // Team B makes them, with a ready node `n`.
    expect((await opB.post('/v1/intents', { intentId: 'only-b-intent', title: 'B', goal: 'B' })).status).toBe(201);
    expect((await agentB.client.post('/v1/task-graphs', { graphId: 'only-b', title: 'B', goal: 'B' })).status).toBe(201);
    expect((await agentB.client.post('/v1/task-graphs/only-b/expand', { outline: [{ title: 'N', nodeId: 'n' }] })).status).toBe(200);
    const before = await graphOf(opB, 'only-b');

    // Word for word what a missing id answered, and team B's graph is as it was.
    expect(await run()).toEqual(missing);
    expect(await graphOf(opB, 'only-b')).toEqual(before);
    expect(before.nodes.map((n: any) => [n.nodeId, n.status])).toEqual([['n', 'ready']]);
    expect((await opA.get('/v1/task-graphs')).body.graphs.map((g: any) => g.graphId)).toEqual(['shared']);
    expect((await opA.get('/v1/intents')).body.intents.map((i: any) => i.intentId)).toEqual(['intent-shared', 'shared-intent']);
  });

  it('the session-stop hook and the stranded-start sweep reopen each team’s nodes in that team', async () => {
    for (const a of [agentA, agentB]) {
      expect((await a.client.post('/v1/task-graphs', { graphId: 'stranded', title: 'S', goal: 'S' })).status).toBe(201);
      expect((await a.client.post('/v1/task-graphs/stranded/expand', { outline: 'Solo' })).status).toBe(200);
    }
    const workerA = await t.session({ name: 'worker-a', parentId: agentA.id });
    const workerB = await t.session({ by: opB, name: 'worker-b', parentId: agentB.id });
    expect((await act(workerA.client, 'stranded', 'solo', 'start')).status).toBe(200);
    expect((await act(workerB.client, 'stranded', 'solo', 'start')).status).toBe(200);

    // B's operator stops B's worker: B's node comes back, A's stays running.
    expect((await opB.post(`/v1/sessions/${workerB.id}/stop`, {})).status).toBe(200);
    expect(await ready(opB, 'stranded')).toEqual(['solo']);
    expect((await graphOf(opA, 'stranded')).nodes.map((n: any) => [n.status, n.owner])).toEqual([['running', workerA.id]]);
    expect((await events(opB, 'stranded')).slice(-2)).toEqual(['TaskReopened solo', 'TaskReady solo']);
    expect(await events(opA, 'stranded')).not.toContain('TaskReopened solo');

    // Both stranded at once (sessions gone without the hook): one sweep reopens each in its own team.
    const workerB2 = await t.session({ by: opB, name: 'worker-b2', parentId: agentB.id });
    expect((await act(workerB2.client, 'stranded', 'solo', 'start')).status).toBe(200);
    await t.sql`update sessions set status = 'stopped' where id in (${workerA.id}, ${workerB2.id})`;
    expect(await sweepStrandedNodes(t.sql, t.config)).toBe(2);
    expect(await ready(opA, 'stranded')).toEqual(['solo']);
    expect(await ready(opB, 'stranded')).toEqual(['solo']);
    expect(
      await t.sql`
      select team_id, actor_kind, actor_id from events where topic = 'todo:metagit:stranded' and event = 'TaskReopened'
       order by actor_id, team_id`,
    ).toEqual([
      { team_id: B, actor_kind: 'system', actor_id: 'on-session-stopped' },
      { team_id: B, actor_kind: 'system', actor_id: 'sweep:metagit-stranded' },
      { team_id: DEFAULT_TEAM, actor_kind: 'system', actor_id: 'sweep:metagit-stranded' },
    ]);
    expect((await events(opA, 'stranded')).filter((e: string) => e === 'TaskReopened solo').length).toBe(1);
    expect((await events(opB, 'stranded')).filter((e: string) => e === 'TaskReopened solo').length).toBe(2);
  });
});
