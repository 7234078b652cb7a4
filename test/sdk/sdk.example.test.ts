/**
 * The SDK README's example runs as written: the block in sdk/README.md equals
 * sdk/examples/quickstart.ts, and that file, run with tsx against a listening server, prints
 * what the README says.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { REPO } from '../cli/helpers.js';
import { runProcess } from '../helpers/process.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

const EXAMPLE = path.join(REPO, 'sdk', 'examples', 'quickstart.ts');

describe('the SDK README example', () => {
  it('should be the same code as sdk/examples/quickstart.ts, ten lines of it', () => {
    const readme = readFileSync(path.join(REPO, 'sdk', 'README.md'), 'utf8');
    const m = /<!-- sdk-example[^>]*-->\s*```ts\n([\s\S]*?)```/.exec(readme);
    expect(m, 'sdk/README.md has no ```ts block after <!-- sdk-example -->').toBeTruthy();
    expect(m![1]).toBe(readFileSync(EXAMPLE, 'utf8'));
    expect(m![1].split('\n').filter((l) => l.trim() && !l.startsWith('import')).length).toBeLessThanOrEqual(10);
  });

  it('should run as written with a session token and print the claim, the events and the typed error', async () => {
    const s = await t.session({ name: 'sdk-demo' });
    const r = await runProcess(process.execPath, ['--import', 'tsx', EXAMPLE], {
      cwd: REPO,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, COORD_URL: t.base, COORD_TOKEN: s.token },
    });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('done: done');
    expect(lines.slice(1, 4).map((l) => l.replace(/ td-[0-9a-f]{16}$/, ' td-…'))).toEqual([
      expect.stringMatching(/^\d+ added td-…$/),
      expect.stringMatching(/^\d+ claimed td-…$/),
      expect.stringMatching(/^\d+ done td-…$/),
    ]);
    expect(lines[4]).toBe('AlreadyClaimed already_claimed');
  });
});
