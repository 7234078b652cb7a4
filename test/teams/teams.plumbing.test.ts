/**
 * Teams, step 1 (docs/architecture.md "Teams"): every principal and container carries
 * its team. The upgrade puts a database of the previous release into the default team with its
 * operators as server administrators, and every insert Coord makes names the acting principal's
 * team. The test makes a second team with SQL (teams.api.test.ts makes them through the API) and
 * acts as its operator (and that operator's sessions) through the API: every row they make must
 * carry that team, not the default the columns keep for a rolling upgrade.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUser } from '../../src/tokens/tokens.bootstrap.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { DEFAULT_TEAM } from '../../src/db/schema/teams.js';
import { addItem, type Client, startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDatabase, migrateAsRelease } from '../helpers/db.js';
import { graphDoc, registerAgents } from '../graphs/graphs.helpers.js';

const TEAM = 'tm-plumbing';

describe('teams, step 1: the upgrade', () => {
  it('puts every row of the previous release into the default team, with its operators as server administrators', async () => {
    const target = await createTestDatabase({ empty: true });
    try {
      await migrateAsRelease(target.url, 16); // the previous release: migrations up to 0016
      const db = postgres(target.url, { max: 1, onnotice: () => {} });
      await db`insert into users (id, name) values ('u-old', 'admin'), ('u-old2', 'admin')`;
      await db`insert into sessions (id, name, root_id, created_by) values ('s-old', 'old', 's-old', 'u-old')`;
      await db`insert into scopes (scope, last_position) values ('session:s-old', 0)`;
      await db`insert into agents (id, created_by) values ('codex', 'u-old')`;
      await db.end();

      await migrateDatabase(target.url);
      const after = postgres(target.url, { max: 1, onnotice: () => {} });
      try {
        expect(await after`select id, name from teams`).toEqual([{ id: DEFAULT_TEAM, name: 'default' }]);
        expect(await after`select id, team_id, role from users order by id`).toEqual([
          { id: 'u-old', team_id: DEFAULT_TEAM, role: 'admin' },
          { id: 'u-old2', team_id: DEFAULT_TEAM, role: 'admin' },
        ]);
        for (const table of ['sessions', 'scopes', 'agents']) {
          const rows = await after`select distinct team_id from ${after(table)}`;
          expect(rows, table).toEqual([{ team_id: DEFAULT_TEAM }]);
        }
        // A replica of the previous release (no team_id in its inserts) still writes during a
        // rolling upgrade: the columns keep the default team as their default.
        await after`insert into sessions (id, name, root_id, created_by) values ('s-rolling', 'r', 's-rolling', 'u-old')`;
        expect((await after`select team_id from sessions where id = 's-rolling'`)[0].team_id).toBe(DEFAULT_TEAM);
      } finally {
        await after.end();
      }
    } finally {
      await target.drop();
    }
  });
});

describe('teams, step 1: every insert names its team', () => {
  let t: TestApp;
  let op: Client;
  beforeAll(async () => {
    t = await startTestApp();
    await t.sql`insert into teams (id, name, created_by) values (${TEAM}, 'plumbing', 'test')`;
    op = t.admin.as((await createUser(t.sql, 'op-b', undefined, { teamId: TEAM })).token);
  });
  afterAll(async () => t?.close());

  it('gives the team of the acting operator or session to everything made through the API', async () => {
    // Sessions, a child, its scope (single and bulk adds).
    const root = await t.session({ by: op, name: 'root' });
    const child = await t.session({ by: root.client, name: 'child' });
    await addItem(root.client, 'one');
    expect((await child.client.post('/v1/todos/bulk', { items: [{ title: 'a' }, { title: 'b' }] })).status).toBe(201);
    // Agents, a graph and a dispatch session of its run.
    await registerAgents(op, ['codex']);
    const graphId = 'task-plumbing';
    expect((await op.post('/v1/graphs', graphDoc(graphId, [{ id: 'one' }]))).status).toBe(201);
    const run = await op.post(`/v1/graphs/${graphId}/run`, { baseCommit: 'a'.repeat(40) });
    expect(run.status, JSON.stringify(run.body)).toBe(200);
    // A scenario: its orchestrator, member sessions and seeded scope.
    const sc = await op.post('/v1/scenarios', { name: 'plumbing', members: [{ name: 'api', task: 'Build' }, { name: 'ui' }] });
    expect(sc.status, JSON.stringify(sc.body)).toBe(201);
    // metagit: an intent, a task graph, its expansion (scope).
    expect((await root.client.post('/v1/intents', { intentId: 'intent-plumbing', title: 'I', goal: 'G' })).status).toBe(201);
    const tg = await root.client.post('/v1/task-graphs', { graphId: 'tg-plumbing', title: 'T', goal: 'G' });
    expect(tg.status, JSON.stringify(tg.body)).toBe(201);
    expect((await root.client.post('/v1/task-graphs/tg-plumbing/expand', { outline: [{ title: 'Root' }] })).status).toBe(200);

    const teams = async (table: string, where: postgres.PendingQuery<postgres.Row[]>) =>
      (await t.sql<{ team_id: string }[]>`select distinct team_id from ${t.sql(table)} where ${where}`).map((r) => r.team_id);
    const mine = t.sql`created_by <> ${'test'}`;
    // Every session, scope and container made above is the team's; the default team holds only
    // the test's own operator.
    expect(await teams('sessions', t.sql`true`)).toEqual([TEAM]);
    expect(await teams('scopes', t.sql`true`)).toEqual([TEAM]);
    expect((await t.sql`select count(*)::int as n from scopes`)[0].n).toBe(4); // the root's (the child adds there), the graph's, the scenario's, the task graph's
    for (const table of ['agents', 'graphs', 'scenarios', 'metagit_intents', 'metagit_graphs']) expect(await teams(table, mine), table).toEqual([TEAM]);
    // Items, subtasks, nodes and every event of their topics (migration 0018).
    for (const table of ['todos', 'graph_subtasks', 'metagit_nodes']) expect(await teams(table, t.sql`true`), table).toEqual([TEAM]);
    expect(await teams('events', t.sql`topic like 'todo:%'`)).toEqual([TEAM]);
    expect(await t.sql`select team_id, role from users order by name`).toEqual([
      { team_id: TEAM, role: 'operator' },
      { team_id: DEFAULT_TEAM, role: 'admin' }, // the test's own operator is the server administrator, as the bootstrap makes it
    ]);
  });
});
