/**
 * The function files are the functions in force (docs/architecture.md "The schema as source"):
 * every `src/db/functions/<name>.sql` defines its function as a freshly migrated database does,
 * and the database has no function without a file. A changed file needs its migration
 * (`npm run db:functions`); a function added by hand in a migration needs its file.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeDrift, functionDrift, readFunctionFiles, splitStatements, type FunctionFile } from '../../src/db/function-files.js';
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

/** The files with `name`'s text passed through `edit` (its statements re-read). */
function edited(name: string, edit: (text: string) => string): FunctionFile[] {
  return readFunctionFiles().map((f) => {
    if (f.name !== name) return f;
    const text = edit(f.text);
    return { ...f, text, statements: splitStatements(text) };
  });
}

describe('src/db/functions/', () => {
  it('defines every function as the migrated database does, and the database has none without a file (run npm run db:functions)', async () => {
    expect(describeDrift(await functionDrift(sql))).toEqual([]);
  });

  it('holds one file per function the database has, the claim cycle included', async () => {
    expect(readFunctionFiles().map((f) => f.name)).toEqual(expect.arrayContaining(['coord_blocked_by', 'coord_cascade', 'coord_done_many', 'coord_next_many']));
  });

  it('should see a changed body, and not trailing blanks or line endings', async () => {
    const changed = await functionDrift(
      sql,
      edited('coord_blocked_by', (t) => t.replace("d.status <> 'done'", "d.status NOT IN ('done')")),
    );
    expect(changed.changed).toEqual(['coord_blocked_by(p_id text)']);
    expect(changed.files).toEqual(['coord_blocked_by']);
    const blanks = await functionDrift(
      sql,
      edited('coord_blocked_by', (t) => t.replace(/\n/g, '   \r\n')),
    );
    expect(describeDrift(blanks)).toEqual([]);
  });

  it('should compare the header as Postgres prints it: float8 is double precision, a changed argument a new overload', async () => {
    const spelled = await functionDrift(
      sql,
      edited('coord_next_many', (t) => t.replace('p_lease_ms float8', 'p_lease_ms double precision')),
    );
    expect(describeDrift(spelled)).toEqual([]);
    const renamed = await functionDrift(
      sql,
      edited('coord_cascade', (t) => t.replace('p_delta int)', 'p_delta bigint)')),
    );
    expect(renamed.changed).toEqual(['coord_cascade(p_dependency text, p_delta bigint)']);
    expect(renamed.removed).toEqual(['coord_cascade(p_dependency text, p_delta integer)']);
  });

  it('should name a database function that has no file', async () => {
    const files = readFunctionFiles().filter((f) => f.name !== 'coord_todos_clear_result');
    expect((await functionDrift(sql, files)).unfiled).toEqual(['coord_todos_clear_result()']);
  });

  it('should leave the database as it was', async () => {
    await functionDrift(
      sql,
      edited('coord_blocked_by', (t) => t.replace("d.status <> 'done'", "d.status NOT IN ('done')")),
    );
    const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from pg_namespace where nspname = 'coord_function_files'`;
    expect(n).toBe(0);
    expect(describeDrift(await functionDrift(sql))).toEqual([]);
  });
});

describe('splitStatements', () => {
  it('should cut at top-level semicolons only, keeping leading comments and dropping a trailing one', () => {
    const text =
      "-- head; not a cut\nCREATE FUNCTION f() RETURNS text LANGUAGE sql AS $$ SELECT ';' $$;\n/* ; */ SELECT 'a;''b' AS \"x;y\"; SELECT $q$ $$ ; $q$;\n-- tail\n";
    expect(splitStatements(text)).toEqual([
      "-- head; not a cut\nCREATE FUNCTION f() RETURNS text LANGUAGE sql AS $$ SELECT ';' $$;",
      "/* ; */ SELECT 'a;''b' AS \"x;y\";",
      'SELECT $q$ $$ ; $q$;',
    ]);
  });
});
