/**
 * The SQL functions as source: `src/db/functions/<name>.sql` holds every overload of function
 * `<name>` that the schema should have, as `CREATE OR REPLACE FUNCTION` statements (a header
 * comment says what it does, who calls it and which seed rule it implements). The migrations are
 * what a database runs; these files are what a person reads and edits. `npm run db:functions`
 * (scripts/db-functions.ts) writes a migration that brings the database to the files, and
 * test/db/functions.test.ts fails when the files and a freshly migrated database disagree
 * (docs/architecture.md "The schema as source").
 *
 * Two definitions are compared as Postgres prints them (`pg_get_functiondef`, as
 * src/db/schema-dump.ts does): a file's statements are run in a scratch schema inside a
 * transaction that is rolled back, so the header is compared in Postgres's spelling (`float8` and
 * `double precision` agree) and the body as written, with trailing blanks and line endings
 * ignored.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Sql } from './client.js';

export const FUNCTIONS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), 'functions');

/** One `src/db/functions/<name>.sql`: the function's name, the file's text, its statements (each ending in `;`). */
export interface FunctionFile {
  name: string;
  file: string;
  text: string;
  statements: string[];
}

/** What differs between the files and a database, each entry `name(identity arguments)`. */
export interface FunctionDrift {
  /** Overloads a file defines that the database lacks or defines otherwise. */
  changed: string[];
  /** Overloads the database has that their name's file no longer defines. */
  removed: string[];
  /** The overloads of `changed` whose result type differs from the database's (CREATE OR REPLACE cannot change it). */
  replaced: string[];
  /** Functions of the database whose name has no file at all. */
  unfiled: string[];
  /** The names of the files that define something in `changed`. */
  files: string[];
}

/** Every `<name>.sql` of `dir`, sorted by name. Throws when a file holds no statement. */
export function readFunctionFiles(dir = FUNCTIONS_DIR): FunctionFile[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.sql'))
    .sort()
    .map((f) => {
      const text = readFileSync(path.join(dir, f), 'utf8');
      const statements = splitStatements(text);
      if (statements.length === 0) throw new Error(`${f} holds no statement`);
      return { name: f.slice(0, -'.sql'.length), file: path.join(dir, f), text, statements };
    });
}

/**
 * The top-level statements of a SQL text, each from the end of the previous one (its leading
 * comments included) to its `;`. Knows `--` and `/* *\/` comments, quoted strings and
 * identifiers and dollar quoting, which is all a function definition needs; text after the last
 * `;` that is only blanks and comments is dropped, anything else is a statement without `;`.
 */
export function splitStatements(text: string): string[] {
  const out: string[] = [];
  let start = 0;
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '-' && text[i + 1] === '-') {
      const end = text.indexOf('\n', i);
      i = end < 0 ? text.length : end + 1;
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      i = end < 0 ? text.length : end + 2;
    } else if (c === "'" || c === '"') {
      let j = i + 1;
      while (j < text.length && !(text[j] === c && text[j + 1] !== c)) j += text[j] === c ? 2 : 1;
      i = j + 1;
    } else if (c === '$') {
      const tag = /^\$[A-Za-z_]*\$/.exec(text.slice(i, i + 64))?.[0];
      if (tag) {
        const end = text.indexOf(tag, i + tag.length);
        i = end < 0 ? text.length : end + tag.length;
      } else i++;
    } else if (c === ';') {
      out.push(text.slice(start, i + 1).trim());
      start = i + 1;
      i++;
    } else i++;
  }
  const rest = text.slice(start);
  if (rest.replace(/--[^\n]*|\/\*[\s\S]*?\*\//g, '').trim()) out.push(rest.trim());
  return out;
}

/** A definition with line endings unified, trailing blanks cut from every line, and the ends trimmed. */
export function normalizeDefinition(def: string): string {
  return def
    .replace(/\r\n?/g, '\n')
    .split('\n')
    .map((l) => l.trimEnd())
    .join('\n')
    .trim();
}

const SCRATCH = 'coord_function_files';

interface Defined {
  key: string;
  name: string;
  result: string;
  def: string;
}

async function definedIn(tx: Sql, schema: string): Promise<Defined[]> {
  const rows = await tx<{ name: string; args: string; result: string; def: string }[]>`
    select p.proname as name, pg_get_function_identity_arguments(p.oid) as args, pg_get_function_result(p.oid) as result,
           pg_get_functiondef(p.oid) as def
      from pg_proc p join pg_namespace n on n.oid = p.pronamespace
     where n.nspname = ${schema} and p.prokind in ('f', 'p')
     order by p.proname, pg_get_function_identity_arguments(p.oid)`;
  // The function's own name is printed schema-qualified; nothing else in the header is.
  return rows.map((r) => ({
    key: `${r.name}(${r.args})`,
    name: r.name,
    result: r.result,
    def: normalizeDefinition(r.def.replace(`FUNCTION ${schema}.`, 'FUNCTION public.')),
  }));
}

/**
 * Compares `files` with the functions of schema `public` in the database `sql` is connected to.
 * Runs the files' statements in a scratch schema in a transaction it rolls back, so it changes
 * nothing. Throws when a file's statement fails or defines a function of another name.
 */
export async function functionDrift(sql: Sql, files: FunctionFile[] = readFunctionFiles()): Promise<FunctionDrift> {
  const drift: FunctionDrift = { changed: [], removed: [], replaced: [], unfiled: [], files: [] };
  const rollback = new Error('rollback');
  try {
    await sql.begin(async (tx) => {
      const db = await definedIn(tx as unknown as Sql, 'public');
      await tx.unsafe(`create schema ${SCRATCH}`);
      await tx.unsafe(`set local search_path = ${SCRATCH}, public`);
      const fromFiles = new Map<string, Defined[]>();
      for (const f of files) {
        await tx.unsafe('savepoint f');
        for (const s of f.statements) {
          try {
            await tx.unsafe(s);
          } catch (err) {
            throw new Error(`${path.basename(f.file)}: ${(err as Error).message}`, { cause: err });
          }
        }
        const defined = await definedIn(tx as unknown as Sql, SCRATCH);
        const stray = defined.filter((d) => d.name !== f.name);
        if (stray.length) throw new Error(`${path.basename(f.file)} defines ${stray.map((d) => d.key).join(', ')}: a file defines only its own name`);
        fromFiles.set(f.name, defined);
        // Empty the scratch schema for the next file.
        await tx.unsafe('rollback to savepoint f');
      }
      const dbByKey = new Map(db.map((d) => [d.key, d]));
      for (const f of files) {
        const defined = fromFiles.get(f.name) ?? [];
        const changed = defined.filter((d) => dbByKey.get(d.key)?.def !== d.def);
        drift.changed.push(...changed.map((d) => d.key));
        drift.replaced.push(...changed.filter((d) => dbByKey.has(d.key) && dbByKey.get(d.key)?.result !== d.result).map((d) => d.key));
        if (changed.length) drift.files.push(f.name);
        const keys = new Set(defined.map((d) => d.key));
        drift.removed.push(...db.filter((d) => d.name === f.name && !keys.has(d.key)).map((d) => d.key));
      }
      const named = new Set(files.map((f) => f.name));
      drift.unfiled.push(...db.filter((d) => !named.has(d.name)).map((d) => d.key));
      throw rollback;
    });
  } catch (err) {
    if (err !== rollback) throw err;
  }
  return drift;
}

/** True when the files and the database agree. */
export function inStep(d: FunctionDrift): boolean {
  return d.changed.length + d.removed.length + d.unfiled.length === 0;
}

/** The differences as lines a person can act on. */
export function describeDrift(d: FunctionDrift): string[] {
  return [
    ...d.changed.map((k) => `${k}: src/db/functions/${k.slice(0, k.indexOf('('))}.sql differs from the database (npm run db:functions writes the migration)`),
    ...d.removed.map((k) => `${k}: in the database, not in src/db/functions/${k.slice(0, k.indexOf('('))}.sql (npm run db:functions drops it)`),
    ...d.unfiled.map((k) => `${k}: in the database, with no src/db/functions/${k.slice(0, k.indexOf('('))}.sql`),
  ];
}
