import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { bash, docText } from '../helpers/process.js';
import { readerShell } from './helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

function tour(): { script: string; printed: string } {
  const m = /<!-- graph-tour[^>]*-->\s*```sh\n([\s\S]*?)```\s*It prints[^\n]*\n\s*```text\n([\s\S]*?)```/.exec(docText('README.md'));
  if (!m) throw new Error('README.md has no graph tour');
  return { script: m[1], printed: m[2] };
}

/** Hashes and ids vary from run to run: each becomes x's of its own length. */
const normalized = (text: string) => text.replace(/\b(?:td-)?[0-9a-f]{12,64}\b/g, (h) => h.replace(/[0-9a-f]/g, 'x'));

describe('the README graph tour', () => {
  it('should run as written in a fresh shell and print what the README says', async () => {
    const shell = readerShell(t.admin.token);
    const { script, printed } = tour();
    const r = await bash(script.replaceAll('http://127.0.0.1:3000', t.base), shell);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(normalized(r.stdout)).toBe(normalized(printed));
  });
});
