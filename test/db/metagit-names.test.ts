/**
 * migrations/0021 renamed metagit's tables (`metagit_intents`, `metagit_graphs`, `metagit_nodes`)
 * and kept each old name as a view for one release, so a replica of the previous release keeps
 * reading and writing metagit objects during a rolling upgrade.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEFAULT_TEAM } from '../../src/db/schema/teams.js';
import { createTestDatabase } from '../helpers/db.js';

let db: Awaited<ReturnType<typeof createTestDatabase>>;
let sql: postgres.Sql;
beforeAll(async () => {
  db = await createTestDatabase();
  sql = postgres(db.url, { max: 1, onnotice: () => {} });
});
afterAll(async () => {
  await sql?.end();
  await db?.drop();
});

it('the previous release’s table names still read and write the renamed tables', async () => {
  await sql`insert into intents (id, title, goal, created_by, team_id) values ('i-old', 'T', 'G', 'u-1', ${DEFAULT_TEAM})`;
  await sql`insert into task_graphs (id, scope, title, root_intent_id, created_by, team_id) values ('g-old', 'metagit:g-old', 'T', 'i-old', 'u-1', ${DEFAULT_TEAM})`;
  expect(await sql`select id, acceptance, repos from metagit_intents`).toEqual([{ id: 'i-old', acceptance: [], repos: [] }]);
  expect(await sql`select id, status, revision from metagit_graphs`).toEqual([{ id: 'g-old', status: 'active', revision: 1 }]);
  await sql`update task_graphs set revision = revision + 1 where id = 'g-old'`;
  expect((await sql`select revision from metagit_graphs`)[0]!.revision).toBe(2);
  expect(await sql`select count(*)::int as n from task_nodes`).toEqual([{ n: 0 }]);
});
