/**
 * The `coord` binary itself, spawned (the other CLI tests run `main` in process): the
 * exit code `main` returns is the process's (0, 1, 2, 3), JSON on stdout parses, and a reader
 * that closes the pipe early (`coord … | head`) is not an error. Signals are
 * cli.events.test.ts's (`events follow` and Ctrl-C).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { bash } from '../helpers/process.js';
import { BIN, cleanEnv, runCoordProcess, tempHome } from './helpers.js';

let t: TestApp;
let home: string;
beforeAll(async () => {
  t = await startTestApp();
  home = tempHome();
});
afterAll(async () => t?.close());

describe('the coord binary', () => {
  it('exits with the code main returns: 0 with JSON, 3 when nothing is eligible, 2 for usage, 1 when the server is not there', async () => {
    const [s, idle] = [await t.session(), await t.session()];
    const env = cleanEnv(home, { COORD_URL: t.base, COORD_TOKEN: s.token });
    const [add, next, usage, down] = await Promise.all([
      runCoordProcess(['todo', 'add', 'from the binary'], { env }),
      runCoordProcess(['todo', 'next'], { env: cleanEnv(home, { COORD_URL: t.base, COORD_TOKEN: idle.token }) }),
      runCoordProcess(['todo', 'frobnicate'], { env }),
      runCoordProcess(['todo', 'list', '--url', 'http://127.0.0.1:9', '--token', 'x'], { env: cleanEnv(home) }),
    ]);
    expect(add.code, add.stderr).toBe(0);
    expect(JSON.parse(add.stdout).item).toMatchObject({ title: 'from the binary' });
    expect([next.code, usage.code, down.code]).toEqual([3, 2, 1]);
    expect(JSON.parse(next.stdout)).toMatchObject({ claimed: false });
    expect(usage.stderr).toContain("unknown command 'frobnicate'");
    expect(down.stderr).toContain('cannot reach Coord at http://127.0.0.1:9');
  });

  it('exits 0 when its reader closes the pipe first (EPIPE)', async () => {
    // `true` exits without reading, so every write coord makes meets a closed pipe.
    const r = await bash(`"${process.execPath}" "${BIN}" --help | true; echo "coord exit \${PIPESTATUS[0]}"`, { cwd: home, env: cleanEnv(home) });
    expect(r.stdout.trim()).toBe('coord exit 0');
    expect(r.stderr).not.toMatch(/EPIPE|Error/);
  });
});
