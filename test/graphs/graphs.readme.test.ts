/**
 * The README's "Task graphs" walkthrough, run as written (issue 7 "Done when": validate → create
 * → status → plan with curl and the example files): the curl walkthrough's block (for `COORD`,
 * `ADMIN`, `AGENT`, `json`), then the `## Task graphs` block, in one bash against a listening
 * server, in a folder holding `examples/`. Only the URL is substituted.
 */
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

/** The first ```sh block after a `## <heading>` line of README.md. */
function shBlockAfter(heading: string): string {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const at = readme.indexOf(`\n## ${heading}\n`);
  if (at < 0) throw new Error(`README.md has no "## ${heading}" section`);
  const m = /```sh\n([\s\S]*?)```/.exec(readme.slice(at));
  if (!m) throw new Error(`README.md "## ${heading}" has no sh block`);
  return m[1];
}

function bash(script: string, cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-e', '-o', 'pipefail', '-c', script], { cwd, env: { ...process.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

describe('the README task graph walkthrough', () => {
  it('should run as written and print what the README says', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'coord-graph-readme-'));
    try {
      mkdirSync(path.join(dir, '.coord'));
      writeFileSync(path.join(dir, '.coord', 'admin-token'), `${t.admin.token}\n`, { mode: 0o600 });
      cpSync(path.join(ROOT, 'examples'), path.join(dir, 'examples'), { recursive: true });
      const script = [shBlockAfter('Walkthrough with curl'), shBlockAfter('Task graphs')]
        .join('\n')
        .replaceAll('http://127.0.0.1:3000', t.base);
      const r = await bash(script, dir);
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
});
