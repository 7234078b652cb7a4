/**
 * The committed schema (src/db/schema.sql) is what the committed migrations give: a
 * migration that changes the schema must come with `npm run db:schema`, so the schema in force is
 * always readable in one file and every change to it shows in review.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { dumpSchema } from '../../src/db/schema-dump.js';
import { createTestDatabase } from '../helpers/db.js';

let db: Awaited<ReturnType<typeof createTestDatabase>>;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => db?.drop());

it('src/db/schema.sql is the schema a freshly migrated database has (run npm run db:schema after a migration)', async () => {
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  try {
    const committed = readFileSync(path.resolve(import.meta.dirname, '../../src/db/schema.sql'), 'utf8');
    const [{ major }] = await sql<{ major: number }[]>`select current_setting('server_version_num')::int / 10000 as major`;
    // schema.sql is dumped from PostgreSQL 18 (the embedded server). Another major deparses a
    // view's body with its columns qualified by their table (`intents.id`): the same view, so
    // there the bodies are compared without qualifiers.
    const comparable = (dump: string) =>
      major === 18
        ? dump
        : dump.replace(/^(VIEW \S+ AS\n)([\s\S]*?)\n\n/gm, (_m, head: string, body: string) => `${head}${body.replace(/\b[a-z_]+\.(?=[a-z_]+\b)/g, '')}\n\n`);
    expect(comparable(await dumpSchema(sql))).toBe(comparable(committed));
  } finally {
    await sql.end();
  }
});
