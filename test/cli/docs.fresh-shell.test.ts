/**
 * Pages of the docs whose blocks run in order in one fresh shell, as the pages say: the setup
 * block each opens with, then the rest, run as written in bash against a listening server (only
 * the URL substituted), from a folder holding `.coord/admin-token` as the checkout does.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { bash, docText } from '../helpers/process.js';
import { readerShell } from './helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

const PAGES: [file: string, expected: string][] = [
  ['docs/reference/http-api.md', 'idempotency_key_reused'],
  ['docs/guides/scenarios.md', 'scenario-completed'],
];

describe.each(PAGES)('%s', (file, expected) => {
  it('runs in order from a fresh shell', async () => {
    const blocks = [...docText(file).matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]);
    expect(blocks.length).toBeGreaterThan(1);
    const r = await bash(blocks.join('\n').replaceAll('http://127.0.0.1:3000', t.base), readerShell(t.admin.token));
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(expected);
  });
});
