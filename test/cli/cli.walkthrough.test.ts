/**
 * The README's CLI walkthrough, run as written (a new user can follow the README to
 * drive Coord from the shell): the shell block under the `cli-walkthrough` marker runs in bash
 * against a listening server, with `npx coord` served by this checkout's bin. Only the URL is
 * substituted. If the README and the CLI drift apart, this fails.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { REPO, readerShell, runCoord, tempHome } from './helpers.js';
import { bash } from '../helpers/process.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

/** The shell block that follows the `<!-- cli-walkthrough … -->` marker in README.md. */
export function walkthroughBlock(): string {
  const readme = readFileSync(path.join(REPO, 'README.md'), 'utf8');
  const m = /<!-- cli-walkthrough[^>]*-->\s*```sh\n([\s\S]*?)```/.exec(readme);
  if (!m) throw new Error('README.md has no ```sh block after a <!-- cli-walkthrough --> marker');
  return m[1];
}

describe('the README walkthrough', () => {
  it('should run as written: session, add, list, next, done, list, JSON', async () => {
    const shell = readerShell(t.admin.token);
    const script = walkthroughBlock().replaceAll('http://127.0.0.1:3000', t.base);
    const r = await bash(script, shell);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    // The three adds, the blocked "Publish", the claim of the lowest position, the finish.
    expect(r.stdout).toMatch(/^Added td-[0-9a-f]{16}: Write the regression test$/m);
    expect(r.stdout).toMatch(/^Added td-[0-9a-f]{16}: Publish \(dependencies: td-[0-9a-f]{16}\)$/m);
    expect(r.stdout).toMatch(/^ID +STATUS +TITLE +OWNER +ASSIGNEE +TAGS +WHY BLOCKED$/m);
    expect(r.stdout).toMatch(/^td-\S+ +todo + {2}Write the regression test +- +- +- +-$/m);
    expect(r.stdout).toMatch(/^Claimed td-[0-9a-f]{16}: Wire the claim CAS$/m);
    expect(r.stdout).toMatch(/^Done td-[0-9a-f]{16}: Wire the claim CAS$/m);
    // The last line is the JSON list read by a machine: API done, the sub-item and Publish ready.
    expect(lines[lines.length - 1]).toBe('done todo todo');
    // And the server agrees.
    const items = (await t.admin.get(`/v1/todos?all=true`)).body.items as { title: string; status: string }[];
    expect(items.map((i) => `${i.title}: ${i.status}`)).toEqual(['Wire the claim CAS: done', 'Write the regression test: todo', 'Publish: todo']);
  });

  it('should be runnable through the real npx from the repository root', async () => {
    const r = await new Promise<{ code: number; stdout: string }>((resolve, reject) => {
      const child = spawn('npx', ['--no-install', 'coord', '--version'], { cwd: REPO, env: { ...process.env }, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code: code ?? -1, stdout }));
    });
    expect(r).toEqual({ code: 0, stdout: '0.1.0\n' });
  });

  it('should list examples in coord --help', async () => {
    const r = await runCoord(['--help'], { env: { PATH: process.env.PATH, HOME: tempHome() } });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Examples:');
    expect(r.stdout).toContain('Exit codes: 0 ok, 1 error, 2 usage, 3 nothing to claim.');
  });
});
