/**
 * The README's second tour (a Task Graph v1 graph run in git worktrees by the runner), run as
 * written in bash against a listening server, with `npx coord` served by this checkout's build.
 * Only the URL is substituted; the output must be the README's "It prints" block, ids and commit
 * hashes aside (each replaced by a placeholder of its own length, so the tables still line up).
 */
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { bash, docText } from '../helpers/process.js';
import { builtCoord, tempHome } from './helpers.js';

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
    const home = tempHome();
    mkdirSync(path.join(home, 'repo', '.coord'), { recursive: true });
    writeFileSync(path.join(home, 'repo', '.coord', 'admin-token'), `${t.admin.token}\n`, { mode: 0o600 });
    mkdirSync(path.join(home, 'bin'));
    writeFileSync(
      path.join(home, 'bin', 'npx'),
      `#!/bin/sh\nif [ "$1" = coord ]; then shift; exec "${process.execPath}" "${builtCoord()}" "$@"; fi\necho "unexpected npx $*" >&2; exit 127\n`,
    );
    chmodSync(path.join(home, 'bin', 'npx'), 0o755);
    const { script, printed } = tour();
    const r = await bash(script.replaceAll('http://127.0.0.1:3000', t.base), {
      cwd: path.join(home, 'repo'),
      env: { PATH: `${path.join(home, 'bin')}:${path.dirname(process.execPath)}:${process.env.PATH}`, HOME: home, TMPDIR: home },
    });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(normalized(r.stdout)).toBe(normalized(printed));
  });
});
