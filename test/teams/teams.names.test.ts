/**
 * Teams, names per team (two teams with the same graph id, scenario name and agent ids
 * working side by side; docs/architecture.md "Teams"). Two teams build the same world through
 * the API, name for name: the same Agent ids, Task Graph ids, scenario name, metagit graph and
 * intent ids, and so the same scope strings and topics (`graph:<id>`, `todo:scenario:<name>`).
 * Each team works its own world; the other's never moves, never shows in its reads, lists or event
 * streams. And a database of the previous release (migrations up to 0017) keeps working after the
 * upgrade, its names now the default team's.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUser } from '../../src/tokens/tokens.bootstrap.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { DEFAULT_TEAM } from '../../src/db/schema/teams.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDatabase, migrateAsRelease } from '../helpers/db.js';
import { openSse } from '../helpers/sse.js';
import { admin, buildWorld, InjectClient, registerWorldAgents, WORLD_AGENTS, type World } from '../http/world.js';

const TEAM_B = 'tm-names-b';

describe('two teams with the same names, side by side', () => {
  let t: TestApp;
  let a: World;
  let b: World;
  let opA: InjectClient;
  let opB: InjectClient;

  beforeAll(async () => {
    t = await startTestApp();
    opA = admin(t);
    await t.sql`insert into teams (id, name, created_by) values (${TEAM_B}, 'names-b', 'test')`;
    opB = new InjectClient(t.app, (await createUser(t.sql, 'operator-b', undefined, { teamId: TEAM_B })).token);
    // The same Agent ids in both teams: a registration in one is no conflict in the other.
    await registerWorldAgents(opA);
    for (const id of WORLD_AGENTS) expect((await opB.post('/v1/agents', { id })).status, id).toBe(201);
    a = await buildWorld(t, { operator: opA });
    // Team B builds the same world, name for name (graph ids, scenario name, metagit ids).
    b = await buildWorld(t, { operator: opB, tag: a.tag });
  });
  afterAll(async () => t?.close());

  it('gives each team its own objects under the same names', async () => {
    expect(b.graphs.graph).toBe(a.graphs.graph);
    expect(b.scenario.name).toBe(a.scenario.name);
    expect(b.metagit.graph).toBe(a.metagit.graph);
    expect(b.scenario.id).not.toBe(a.scenario.id);
    for (const [w, other, op] of [
      [a, b, opA],
      [b, a, opB],
    ] as const) {
      const graph = (await w.owner.client.get(`/v1/graphs/${w.graphs.graph}`)).body.graph;
      const running = graph.subtasks.find((s: { id: string }) => s.id === 'backend');
      expect(running.state).toBe('RUNNING');
      expect(JSON.stringify(graph)).not.toContain(other.dispatch.id);
      expect(JSON.stringify(graph)).toContain(w.dispatch.id);
      const scenario = (await op.get(`/v1/scenarios/${w.scenario.name}`)).body.scenario;
      expect(scenario.id).toBe(w.scenario.id);
      const agents = (await op.get('/v1/agents')).body.agents.map((x: { id: string }) => x.id);
      expect(agents).toEqual([...WORLD_AGENTS].sort());
      const tg = await w.owner.client.get(`/v1/task-graphs/${w.metagit.graph}`);
      expect(tg.status).toBe(200);
      // The audit says who made each intent, in its own team only.
      const intents = (await op.get('/v1/audit?topic=audit:intents&limit=100')).body.entries as { subjectId: string; actor: { id: string } }[];
      const made = intents.filter((e) => e.subjectId === w.metagit.intent);
      expect(made.map((e) => e.actor.id)).toEqual([w.owner.id]);
      expect(intents).toHaveLength(2); // the world's intent and its task graph's root intent
      const list = JSON.stringify((await op.get('/v1/graphs?limit=100')).body);
      expect(list).not.toContain(other.dispatch.id);
      // The scope `graph:<id>` of the same string holds each team's own items.
      const items = (await op.get(`/v1/todos?scope=graph:${w.graphs.graph}`)).body.items.map((i: { id: string }) => i.id);
      const theirs = (await (op === opA ? opB : opA).get(`/v1/todos?scope=graph:${w.graphs.graph}`)).body.items.map((i: { id: string }) => i.id);
      expect(items).toHaveLength(2);
      expect(items.filter((id: string) => theirs.includes(id))).toEqual([]);
    }
  });

  it('keeps one team’s work, events and streams out of the other’s same-named graph and scenario', async () => {
    const topic = (w: World) => `todo:scenario:${w.scenario.name}`;
    const log = async (op: InjectClient, top: string) =>
      (await op.get(`/v1/events/log?topic=${encodeURIComponent(top)}&after=0&limit=1000`)).body.events as { seq: number }[];
    const beforeB = await log(opB, topic(b));
    const graphB = (await b.owner.client.get(`/v1/graphs/${b.graphs.graph}`)).body.graph;
    const streamB = await openSse(`${t.base}/v1/events?topic=${encodeURIComponent(topic(b))}`, b.owner.token);
    const streamA = await openSse(`${t.base}/v1/events?topic=${encodeURIComponent(topic(a))}`, a.owner.token);
    try {
      // Team A works: its scenario's seed is claimed and done, its graph's running subtask fails (as its runner reports).
      const seed = a.scenario.members.a;
      expect((await seed.client.post(`/v1/todos/${seed.seedId}/claim`)).status).toBe(200);
      expect((await seed.client.post(`/v1/todos/${seed.seedId}/done`)).status).toBe(200);
      const fail = await a.owner.client.post(`/v1/graphs/${a.graphs.graph}/subtasks/backend/fail`, {
        code: 'AGENT_EXIT_NONZERO',
        message: 'exited 1',
        exitCode: 1,
      });
      expect(fail.status, JSON.stringify(fail.body)).toBe(200);
      await streamA.until((es) => es.some((e) => e.event === 'done'), 5000);

      // Team B's same-named scenario and graph did not move; its topic got nothing.
      expect(await log(opB, topic(b))).toEqual(beforeB);
      const seedB = (await b.scenario.members.a.client.get(`/v1/todos/${b.scenario.members.a.seedId}`)).body.item;
      expect(seedB.status).toBe('todo');
      expect((await b.owner.client.get(`/v1/graphs/${b.graphs.graph}`)).body.graph).toEqual(graphB);

      // Team B works its own: its stream gets its own event, and only its own.
      const seedAt = b.scenario.members.a;
      expect((await seedAt.client.post(`/v1/todos/${seedAt.seedId}/claim`)).status).toBe(200);
      await streamB.until((es) => es.some((e) => e.event === 'claimed'), 5000);
      const subjects = streamB.events.map((e) => e.data?.id);
      expect(subjects).not.toContain(seed.seedId);
      expect(subjects).toContain(seedAt.seedId);
      expect(streamA.events.map((e) => e.data?.id)).not.toContain(seedAt.seedId);
    } finally {
      streamA.close();
      streamB.close();
    }
  });

  it('answers another team’s operator a taken name of its own team only', async () => {
    // Within a team a name is taken (one 409); across teams it is free.
    const again = await opB.post('/v1/agents', { id: WORLD_AGENTS[0] });
    expect(again.status).toBe(409);
    expect(again.body.detail).toContain('use it, or register another id');
    const intent = await b.owner.client.post('/v1/intents', { intentId: b.metagit.intent, title: 'T', goal: 'G' });
    expect([intent.status, intent.body.code]).toEqual([409, 'intent_exists']);
    expect(intent.body.detail).toContain('pick another intentId');
    const fresh = await opB.post('/v1/scenarios', { name: `only-a-${a.tag}`, members: [{ name: 'x' }] });
    expect(fresh.status).toBe(201);
    expect((await opA.post('/v1/scenarios', { name: `only-a-${a.tag}`, members: [{ name: 'x' }] })).status).toBe(201);
    expect((await opA.post('/v1/scenarios', { name: `only-a-${a.tag}`, members: [{ name: 'x' }] })).status).toBe(409);
  });
});

describe('teams, names per team: the upgrade', () => {
  it('keeps a database of the previous release working, its graphs, items and events in the default team', async () => {
    const target = await createTestDatabase({ empty: true });
    try {
      await migrateAsRelease(target.url, 17); // the previous release: migrations up to 0017
      const db = postgres(target.url, { max: 1, onnotice: () => {} });
      await db`insert into users (id, name, role) values ('u-old', 'admin', 'admin')`;
      await db`insert into agents (id, created_by) values ('codex', 'u-old')`;
      await db`insert into graphs (id, scope, parent, max_concurrency, created_by)
               values ('task-old', 'graph:task-old', ${db.json({ id: 'task-old', title: 'Old', planner: 'codex', reviewer: 'codex', state: 'CREATED' })}, 1, 'u-old')`;
      await db`insert into scopes (scope, last_position) values ('graph:task-old', 1)`;
      await db`insert into todos (id, scope, title, assignee, created_by, position) values ('td-00000000000000aa', 'graph:task-old', 'one', 'agent:codex', 'u-old', 1)`;
      await db`insert into graph_subtasks (graph_id, subtask_id, todo_id, implementer, spec) values ('task-old', 'one', 'td-00000000000000aa', 'codex', 'Do one.')`;
      await db`insert into events (topic, event, subject_id, payload) values ('todo:graph:task-old', 'added', 'td-00000000000000aa', ${db.json({ event: 'added' })})`;
      await db.end();

      await migrateDatabase(target.url);
      const t = await startTestApp({ dbUrl: target.url });
      try {
        for (const table of ['todos', 'events', 'graph_subtasks', 'scopes', 'graphs']) {
          expect(await t.sql`select distinct team_id from ${t.sql(table)}`, table).toEqual([{ team_id: DEFAULT_TEAM }]);
        }
        const graph = await t.admin.get('/v1/graphs/task-old');
        expect(graph.status, JSON.stringify(graph.body)).toBe(200);
        expect(graph.body.graph.subtasks.map((s: { id: string; state: string }) => [s.id, s.state])).toEqual([['one', 'READY']]);
        const log = await t.admin.get(`/v1/events/log?topic=${encodeURIComponent('todo:graph:task-old')}&after=0`);
        expect(log.body.events.map((e: { event: string }) => e.event)).toEqual(['added']);
        // A new item in the old scope continues its positions.
        expect(
          (
            await t.admin.post('/v1/graphs', {
              graph: {
                schemaVersion: 1,
                parentTask: { id: 'task-old', title: 'x', planner: 'codex', reviewer: 'codex' },
                subtasks: [{ id: 'a', implementer: 'codex', spec: 's', dependsOn: [] }],
                maxConcurrency: 1,
              },
            })
          ).status,
        ).toBe(409);
      } finally {
        await t.close();
      }
    } finally {
      await target.drop();
    }
  });
});

describe('teams share a replica’s event streams', () => {
  it('caps one team’s open streams at COORD_MAX_STREAMS_PER_TEAM, leaving the rest to the other teams', async () => {
    const t = await startTestApp({ config: { maxStreams: 12, maxStreamsPerTeam: 4 } });
    const open: { close(): void }[] = [];
    try {
      await t.sql`insert into teams (id, name, created_by) values (${TEAM_B}, 'names-b', 'test')`;
      const opB = t.admin.as((await createUser(t.sql, 'operator-b', undefined, { teamId: TEAM_B })).token);
      const b = await t.session({ by: opB, name: 'b' });
      const a = await t.session({ name: 'a' });
      const topic = (s: { id: string }) => `${t.base}/v1/events?topic=${encodeURIComponent(`todo:session:${s.id}`)}`;
      for (let i = 0; i < 4; i++) {
        const s = await openSse(topic(b), b.token);
        expect(s.status).toBe(200);
        open.push(s);
      }
      const refused = await fetch(topic(b), { headers: { authorization: `Bearer ${b.token}` } });
      expect(refused.status).toBe(503);
      const problem = await refused.json();
      expect(problem.code).toBe('too_many_streams');
      expect(problem.detail).toContain('your team holds 4 streams');
      // Team A still gets its streams.
      const s = await openSse(topic(a), a.token);
      expect(s.status).toBe(200);
      open.push(s);
      // A closed stream gives its team's slot back.
      open.shift()!.close();
      await new Promise((r) => setTimeout(r, 200));
      const again = await openSse(topic(b), b.token);
      expect(again.status).toBe(200);
      open.push(again);
    } finally {
      for (const s of open) s.close();
      await t.close();
    }
  });
});
