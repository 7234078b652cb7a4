/**
 * The README's Scenarios and Export examples, run as written ("the README shows a
 * scenario from creation to completion with curl"): the curl walkthrough's block (for `COORD`,
 * `ADMIN`, `json` and the agent the export example reads), then the `## Scenarios` block, then
 * the `## Export` block, in one bash against a listening server. Only the URL is substituted.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { bash, shBlockAfter } from '../helpers/process.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

describe('the README scenario and export examples', () => {
  it('should run as written: creation, WAITING ON, claims, result, completion, export', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'coord-readme-'));
    try {
      mkdirSync(path.join(dir, '.coord'));
      writeFileSync(path.join(dir, '.coord', 'admin-token'), `${t.admin.token}\n`, { mode: 0o600 });
      const script = [
        shBlockAfter('Walkthrough with curl', 'docs/tutorial/curl.md'),
        shBlockAfter('Scenarios', 'docs/guides/scenarios.md'),
        shBlockAfter('Export', 'docs/reference/todo-lists.md'),
      ]
        .join('\n')
        .replaceAll('http://127.0.0.1:3000', t.base);
      const r = await bash(script, { cwd: dir });
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/^SCENARIO strath \(sc-[0-9a-f]{16}\): in progress, 0\/3 items done$/m);
      expect(r.stdout).toMatch(/^ship +s-[0-9a-f]{16} +0\/1 +pending +api, ui$/m);
      expect(r.stdout).toMatch(/^reviewer +s-[0-9a-f]{16} +— +-$/m);
      expect(r.stdout).toContain('Build the API: done\nBuild the UI: done\ntrue\n');
      expect(r.stdout).toMatch(/^SCENARIO strath \(sc-[0-9a-f]{16}\): complete \(since .+\), 3\/3 items done$/m);
      expect(r.stdout).toMatch(/^ship +s-[0-9a-f]{16} +1\/1 +published$/m);
      expect(r.stdout).toContain('scenario-created added added added claimed done claimed done unblocked claimed done result-published scenario-completed\n');
      expect(r.stdout).toMatch(/^# Todo export: session:s-[0-9a-f]{16}$/m);
      expect(r.stdout).toMatch(/^- \[x\] Wire the claim CAS _\(done, owner s-[0-9a-f]{16}, tags backend,p1\)_$/m);
      expect(r.stdout).toMatch(/^ {2}- \[ \] Write the regression test _\(todo\)_$/m);
      const exported = JSON.parse(readFileSync(path.join(dir, 'todos.json'), 'utf8'));
      expect(exported.map((i: { title: string }) => i.title)).toEqual([
        'Wire the claim CAS',
        'Write the regression test',
        'Draft the release notes',
        'Publish',
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
