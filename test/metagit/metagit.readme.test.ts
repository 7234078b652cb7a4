/**
 * The metagit walkthrough of docs/guides/metagit.md (the RFC's CLI flow), run as written in bash against a
 * listening server, with `npx coord` served by this checkout's bin. Only the URL is substituted;
 * the output must be the README's "It prints" block.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { REPO, readerShell } from '../cli/helpers.js';
import { bash } from '../helpers/process.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

function blocks(): { script: string; printed: string } {
  const readme = readFileSync(path.join(REPO, 'docs/guides/metagit.md'), 'utf8');
  const m = /<!-- metagit-walkthrough[^>]*-->\s*```sh\n([\s\S]*?)```\s*It prints:\s*```text\n([\s\S]*?)```/.exec(readme);
  if (!m) throw new Error('docs/guides/metagit.md has no metagit walkthrough');
  return { script: m[1], printed: m[2] };
}

describe('the README metagit walkthrough', () => {
  it('should run as written and print what the README says', async () => {
    const shell = readerShell(t.admin.token);
    const { script, printed } = blocks();
    const r = await bash(script.replaceAll('http://127.0.0.1:3000', t.base), shell);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(printed);
  });
});
