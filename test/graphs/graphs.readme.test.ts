/**
 * The README's "Task graphs" walkthrough, run as written (validate → create
 * → status → plan with curl and the example files): the curl walkthrough's block (for `COORD`,
 * `ADMIN`, `AGENT`, `json`), then the `## Task graphs` block, in one bash against a listening
 * server, in a folder holding `examples/`. Only the URL is substituted.
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { bash, shBlockAfter } from '../helpers/process.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

describe('the README task graph walkthrough', () => {
  it('should run as written and print what the README says', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'coord-graph-readme-'));
    try {
      mkdirSync(path.join(dir, '.coord'));
      writeFileSync(path.join(dir, '.coord', 'admin-token'), `${t.admin.token}\n`, { mode: 0o600 });
      cpSync(path.join(ROOT, 'examples'), path.join(dir, 'examples'), { recursive: true });
      const script = [shBlockAfter('Walkthrough with curl', 'docs/tutorial/curl.md'), shBlockAfter('Task graphs', 'docs/tutorial/task-graphs.md')]
        .join('\n')
        .replaceAll('http://127.0.0.1:3000', t.base);
      const r = await bash(script, { cwd: dir });
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      const tail = r.stdout.slice(r.stdout.indexOf('{"sideEffects":false}'));
      expect(tail).toBe(
        [
          '{"sideEffects":false}',
          'TASK_GRAPH_INVALID graph-validation: Task Graph v1 subtask "docs" Implementer "agent-z" is unknown or unconfigured.',
          '["backend"] ["docs","frontend"]',
          'CREATED backend=READY docs=WAITING frontend=WAITING',
          'backend ELIGIBLE: Eligible: no dependencies, no selected write-intent conflict, and a concurrency slot is available.',
          'docs WAITING: Waiting for dependencies: backend.',
          'frontend WAITING: Waiting for dependencies: backend.',
          '1 backend todo agent:agent-backend',
          '2 Document the slice blocked agent:agent-docs',
          '3 frontend blocked agent:agent-frontend',
          '',
        ].join('\n'),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('should run a graph to REVIEW_APPROVED as "Running a task graph" says', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'coord-graph-run-readme-'));
    const t = await startTestApp(); // a database of its own: the walkthrough creates the same graph again
    try {
      mkdirSync(path.join(dir, '.coord'));
      writeFileSync(path.join(dir, '.coord', 'admin-token'), `${t.admin.token}\n`, { mode: 0o600 });
      cpSync(path.join(ROOT, 'examples'), path.join(dir, 'examples'), { recursive: true });
      const setup = [shBlockAfter('Walkthrough with curl', 'docs/tutorial/curl.md'), shBlockAfter('Task graphs', 'docs/tutorial/task-graphs.md')].join('\n');
      const marker = 'echo ===RUN===';
      const script = [setup, marker, shBlockAfter('Running a task graph', 'docs/tutorial/task-graphs.md')]
        .join('\n')
        .replaceAll('http://127.0.0.1:3000', t.base);
      const r = await bash(script, { cwd: dir });
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      const printed = r.stdout.slice(r.stdout.indexOf('===RUN===\n') + '===RUN===\n'.length);
      expect(printed).toBe(`${printedBlockAfter('Running a task graph')}\n`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await t.close();
    }
  });
});

/** The tutorial's plain ``` block after "It prints:" in section `heading`. */
function printedBlockAfter(heading: string): string {
  const text = readFileSync(path.join(ROOT, 'docs/tutorial/task-graphs.md'), 'utf8');
  const at = text.indexOf(`\n## ${heading}\n`);
  const m = /It prints:\n\n```\n([\s\S]*?)\n```/.exec(text.slice(at));
  if (!m) throw new Error(`docs/tutorial/task-graphs.md "## ${heading}" has no printed block`);
  return m[1];
}
