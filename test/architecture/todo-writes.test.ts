/**
 * One owner per rule for the work items: the lease deadline (`progress_at + claim_lease`) is
 * spelled once, in `leaseEndSql` of src/todos/todos.view.ts, and every other file builds it from
 * there; writes to `todos` and `todo_dependencies` are made only by the todos repository (WRITERS).
 * Read from the source text, so it runs in the unit tier without a database.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

const FILES = sources(join(ROOT, 'src')).map((f) => ({ path: relative(ROOT, f).replaceAll('\\', '/'), text: readFileSync(f, 'utf8') }));

/** The lease deadline over the last-progress column, in either arrangement. */
const LEASE = /progress_at\s*(\+|<=\s*now\(\)\s*-)\s*make_interval/i;

/** An insert, update or delete of `todos` or `todo_dependencies`, in SQL or drizzle. */
const WRITE =
  /\b(update\s+todos\b|insert\s+into\s+todos\b|delete\s+from\s+todos\b|update\s+todo_dependencies\b|insert\s+into\s+todo_dependencies\b|delete\s+from\s+todo_dependencies\b)|\.(insert|update|delete)\(\s*(todos|todoDependencies)\s*\)/i;

/** The one file that writes the work-item tables: the todos repository. */
const WRITERS = new Set(['src/todos/todos.repo.ts']);

describe('work-item rules have one owner', () => {
  it('spells the lease deadline only in src/todos/todos.view.ts', () => {
    const offenders = FILES.filter((f) => f.path !== 'src/todos/todos.view.ts' && LEASE.test(f.text)).map((f) => f.path);
    expect(offenders).toEqual([]);
  });

  it('the lease deadline is defined once, by leaseEndSql in src/todos/todos.view.ts', () => {
    const view = FILES.find((f) => f.path === 'src/todos/todos.view.ts')!;
    expect(view.text).toContain('export function leaseEndSql(');
    expect(view.text.match(/make_interval/g)?.length).toBe(1);
  });

  it('writes todos and todo_dependencies only from the listed files', () => {
    const offenders = FILES.filter((f) => !WRITERS.has(f.path) && WRITE.test(f.text)).map((f) => f.path);
    expect(offenders).toEqual([]);
  });

  it('lists no file that no longer writes them', () => {
    const stale = [...WRITERS].filter((p) => !FILES.some((f) => f.path === p && WRITE.test(f.text)));
    expect(stale).toEqual([]);
  });
});
