/**
 * `npm run db:functions`: brings the migrations to the function files (src/db/function-files.ts).
 * Migrates a throwaway embedded Postgres, compares every `src/db/functions/<name>.sql` with it, and
 * writes one new custom migration, registered in migrations/meta/ as `drizzle-kit generate
 * --custom` registers one (a journal entry, and a snapshot that is the previous one with a new
 * id), holding: a DROP for every overload the database has that its file no longer defines (and
 * for one whose result type changed), then the whole text of every file that differs. Applies it,
 * checks that the database now matches the files, and rewrites src/db/schema.sql.
 *
 *   npm run db:functions                       migration `NNNN_functions`
 *   npm run db:functions -- --name lease_fix   migration `NNNN_lease_fix`
 *   npm run db:functions -- --check            exit 1, saying what differs, when files and migrations disagree
 *
 * A function of the database whose name has no file is an error in both modes: write its file
 * (or drop it in a migration) first. Edit the generated migration's comment to say why.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { startEmbeddedPostgres } from '../src/db/embedded.js';
import { describeDrift, functionDrift, inStep, readFunctionFiles, type FunctionDrift } from '../src/db/function-files.js';
import { MIGRATIONS_DIR, migrateDatabase } from '../src/db/migrate.js';
import { dumpSchema } from '../src/db/schema-dump.js';

const SCHEMA_FILE = path.resolve(MIGRATIONS_DIR, '..', 'src', 'db', 'schema.sql');
const BREAKPOINT = '--> statement-breakpoint\n';

const args = process.argv.slice(2);
const check = args.includes('--check');
const nameArg = args.find((a) => a.startsWith('--name='))?.slice('--name='.length) ?? (args.includes('--name') ? args[args.indexOf('--name') + 1] : undefined);
const tagName = nameArg ?? 'functions';
if (!/^[a-z0-9_]+$/.test(tagName)) throw new Error(`--name ${tagName}: use lower-case letters, digits and _`);

interface JournalEntry {
  idx: number;
  version: string;
  when: number;
  tag: string;
  breakpoints: boolean;
}

/** The migration's SQL: the drops, then every differing file whole, one statement per breakpoint. */
function migrationSql(drift: FunctionDrift): string {
  const files = readFunctionFiles().filter((f) => drift.files.includes(f.name));
  const statements = [...[...drift.removed, ...drift.replaced].map((k) => `DROP FUNCTION IF EXISTS ${k};`), ...files.flatMap((f) => f.statements)];
  const header = `-- Functions from src/db/functions/ (npm run db:functions): ${[...new Set([...drift.files, ...drift.removed.map((k) => k.slice(0, k.indexOf('(')))])].join(', ')}.\n`;
  return `${header}${statements.join(`\n${BREAKPOINT}`)}\n`;
}

/** Appends migration `NNNN_<tagName>` to migrations/ and its journal, as `drizzle-kit generate --custom` does. */
function writeMigration(sqlText: string): string {
  const journalFile = path.join(MIGRATIONS_DIR, 'meta', '_journal.json');
  const journal = JSON.parse(readFileSync(journalFile, 'utf8')) as { entries: JournalEntry[] };
  const last = journal.entries[journal.entries.length - 1];
  const idx = last.idx + 1;
  const prefix = String(idx).padStart(4, '0');
  const tag = `${prefix}_${tagName}`;
  const prev = JSON.parse(readFileSync(path.join(MIGRATIONS_DIR, 'meta', `${last.tag.slice(0, 4)}_snapshot.json`), 'utf8')) as Record<string, unknown>;
  const { id: prevId, prevId: _unused, ...rest } = prev;
  const snapshot = { id: randomUUID(), prevId, ...rest, _meta: { columns: {}, schemas: {}, tables: {} } };
  writeFileSync(path.join(MIGRATIONS_DIR, 'meta', `${prefix}_snapshot.json`), JSON.stringify(snapshot, null, 2));
  journal.entries.push({ idx, version: last.version, when: Date.now(), tag, breakpoints: true });
  writeFileSync(journalFile, JSON.stringify(journal, null, 2));
  writeFileSync(path.join(MIGRATIONS_DIR, `${tag}.sql`), sqlText);
  return tag;
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'coord-functions-'));
const pg = await startEmbeddedPostgres({ dataDir: dir, persistent: false, fast: true });
try {
  await migrateDatabase(pg.url);
  const sql = postgres(pg.url, { max: 1, onnotice: () => {} });
  try {
    const drift = await functionDrift(sql);
    for (const line of describeDrift(drift)) console.error(line);
    if (check) {
      if (!inStep(drift)) process.exitCode = 1;
    } else if (drift.unfiled.length) {
      console.error('write a file for each function above (or drop it in a migration) first');
      process.exitCode = 1;
    } else if (inStep(drift)) {
      console.log('the migrations define every function as its file does: nothing to migrate');
    } else {
      const tag = writeMigration(migrationSql(drift));
      console.log(`wrote migrations/${tag}.sql: say why in its comment, and commit it with the files`);
      await migrateDatabase(pg.url);
      const after = await functionDrift(sql);
      if (!inStep(after)) {
        for (const line of describeDrift(after)) console.error(`after ${tag}: ${line}`);
        process.exitCode = 1;
      } else {
        writeFileSync(SCHEMA_FILE, await dumpSchema(sql));
        console.log('wrote src/db/schema.sql');
      }
    }
  } finally {
    await sql.end();
  }
} finally {
  await pg.stop();
  rmSync(dir, { recursive: true, force: true });
}
