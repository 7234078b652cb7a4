/**
 * `npm run db:schema`: writes `src/db/schema.sql`, the schema the committed migrations leave
 * (src/db/schema-dump.ts), from a throwaway embedded Postgres. `--check` compares instead and
 * exits 1 on a difference (the test suite checks the same against its template database).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { startEmbeddedPostgres } from '../src/db/embedded.js';
import { migrateDatabase } from '../src/db/migrate.js';
import { dumpSchema } from '../src/db/schema-dump.js';

const FILE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'src', 'db', 'schema.sql');
const check = process.argv.includes('--check');
const dir = mkdtempSync(path.join(os.tmpdir(), 'coord-schema-'));
const pg = await startEmbeddedPostgres({ dataDir: dir, persistent: false, fast: true });
try {
  await migrateDatabase(pg.url);
  const sql = postgres(pg.url, { max: 1, onnotice: () => {} });
  const text = await dumpSchema(sql);
  await sql.end();
  if (check) {
    if (readFileSync(FILE, 'utf8') !== text) {
      console.error(`${path.relative(process.cwd(), FILE)} is not what the migrations give: run npm run db:schema`);
      process.exitCode = 1;
    }
  } else {
    writeFileSync(FILE, text);
    console.log(`wrote ${path.relative(process.cwd(), FILE)}`);
  }
} finally {
  await pg.stop();
  rmSync(dir, { recursive: true, force: true });
}
