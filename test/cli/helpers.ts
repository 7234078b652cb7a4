/**
 * Runs the `coord` CLI as a user or an agent would, with a clean environment: a private HOME (so
 * no real config file is read) and no COORD_* variables unless a test passes them. Most tests run
 * its `main` in this process; the binary itself is spawned where only it can answer.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';
import { main, type Io } from '../../cli/main.js';
import { runProcess } from '../helpers/process.js';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** The binary as installed (`bin/coord.mjs`, TypeScript through tsx). */
export const BIN = path.join(REPO, 'bin', 'coord.mjs');
/** The same binary compiled to JavaScript once per run (test/setup/build.ts): what spawned CLI processes run unless the binary itself is under test. */
export const builtCoord = (): string => inject('builtCoord');

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** A fresh HOME for one test file (the CLI's config file lives under it). */
export function tempHome(): string {
  return mkdtempSync(path.join(os.tmpdir(), 'coord-cli-home-'));
}

/** The environment a spawned CLI gets: PATH and HOME only, plus `extra`. */
export function cleanEnv(home: string, extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: home, LANG: 'C.UTF-8' };
  for (const [k, v] of Object.entries(extra)) if (v !== undefined) env[k] = v;
  return env;
}

/**
 * Runs `coord …args` as a user would, but in this process: the CLI's `main` with the given
 * environment, working directory and standard input, its output captured. What only the binary
 * does (signals, EPIPE, the process exit code) is tested by spawning it: `runCoordProcess`,
 * `spawnCoord` (a spawn through tsx costs about 2 s; `main` costs milliseconds).
 */
export async function runCoord(args: string[], opts: { env: NodeJS.ProcessEnv; input?: string; cwd?: string }): Promise<RunResult> {
  let stdout = '';
  let stderr = '';
  const sink = (append: (s: string) => void) =>
    new Writable({
      write(chunk, _enc, done) {
        append(String(chunk));
        done();
      },
    });
  const io: Io = {
    env: opts.env,
    cwd: opts.cwd ?? REPO,
    stdout: sink((s) => (stdout += s)),
    stderr: sink((s) => (stderr += s)),
    stdin: Readable.from([opts.input ?? '']),
  };
  const code = await main(args, io);
  return { code, stdout, stderr };
}

/** Spawns `node bin/coord.mjs …args` (the binary itself) and collects its output. */
export function runCoordProcess(args: string[], opts: { env: NodeJS.ProcessEnv; input?: string; cwd?: string }): Promise<RunResult> {
  return runProcess(process.execPath, [BIN, ...args], { env: opts.env, cwd: opts.cwd ?? REPO, input: opts.input });
}

/** Spawns a long-running `coord` (e.g. `events follow`; `bin`: another build of it, default the run's) and lets the test read its output as it comes. */
export function spawnCoord(
  args: string[],
  opts: { env: NodeJS.ProcessEnv; bin?: string },
): {
  child: ChildProcess;
  out: () => string;
  err: () => string;
  waitFor: (pred: (stdout: string) => boolean, ms?: number) => Promise<void>;
  exited: Promise<number>;
} {
  const child = spawn(process.execPath, [opts.bin ?? builtCoord(), ...args], { env: opts.env, cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  const waiters = new Set<() => void>();
  child.stdout!.on('data', (d) => {
    stdout += d;
    for (const w of waiters) w();
  });
  child.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<number>((resolve) => child.on('close', (code, signal) => resolve(code ?? (signal ? 128 : -1))));
  return {
    child,
    out: () => stdout,
    err: () => stderr,
    waitFor(pred, ms = 15_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (pred(stdout)) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve();
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`timed out after ${ms} ms; stdout:\n${stdout}\nstderr:\n${stderr}`));
        }, ms);
        waiters.add(check);
        check();
      });
    },
    exited,
  };
}

/** `runCoord` with only an environment (default: none at all), for help text and formatting. */
export function runInProcess(args: string[], env: NodeJS.ProcessEnv = {}): Promise<RunResult> {
  return runCoord(args, { env });
}

/**
 * A reader's shell for running doc blocks as written: a checkout folder holding the operator token
 * where `npm start` writes it (`.coord/admin-token`), and `npx coord` served by this run's build of
 * the CLI (what npx resolves inside the repository, without npx's start-up cost). Returns the
 * folder to run in and the environment (nothing of the test process's but PATH).
 */
export function readerShell(adminToken: string | undefined): { cwd: string; env: NodeJS.ProcessEnv; home: string } {
  if (!adminToken) throw new Error('readerShell needs the operator token');
  const home = tempHome();
  const cwd = path.join(home, 'repo');
  mkdirSync(path.join(cwd, '.coord'), { recursive: true });
  writeFileSync(path.join(cwd, '.coord', 'admin-token'), `${adminToken}\n`, { mode: 0o600 });
  mkdirSync(path.join(home, 'bin'));
  writeFileSync(
    path.join(home, 'bin', 'npx'),
    `#!/bin/sh\nif [ "$1" = coord ]; then shift; exec "${process.execPath}" "${builtCoord()}" "$@"; fi\necho "unexpected npx $*" >&2; exit 127\n`,
    { mode: 0o755 },
  );
  return { cwd, home, env: { PATH: `${path.join(home, 'bin')}:${path.dirname(process.execPath)}:${process.env.PATH}`, HOME: home, TMPDIR: home } };
}
