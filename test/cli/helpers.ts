/**
 * Runs the `coord` bin as a separate process (what a user or an agent runs), with a clean
 * environment: a private HOME (so no real config file is read) and no COORD_* variables unless
 * a test passes them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { main, type Io } from '../../cli/main.js';
import { runProcess } from '../helpers/process.js';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const BIN = path.join(REPO, 'bin', 'coord.mjs');

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

/** Spawns `node bin/coord.mjs …args` and collects its output. */
export function runCoord(args: string[], opts: { env: NodeJS.ProcessEnv; input?: string; cwd?: string }): Promise<RunResult> {
  return runProcess(process.execPath, [BIN, ...args], { env: opts.env, cwd: opts.cwd ?? REPO, input: opts.input });
}

/** Spawns a long-running `coord` (e.g. `events follow`) and lets the test read its output as it comes. */
export function spawnCoord(args: string[], opts: { env: NodeJS.ProcessEnv }): {
  child: ChildProcess;
  out: () => string;
  err: () => string;
  waitFor: (pred: (stdout: string) => boolean, ms?: number) => Promise<void>;
  exited: Promise<number>;
} {
  const child = spawn(process.execPath, [BIN, ...args], { env: opts.env, cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
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

/** Runs `main` in this process with captured streams (fast checks of help text and formatting). */
export async function runInProcess(args: string[], env: NodeJS.ProcessEnv = {}): Promise<RunResult> {
  let stdout = '';
  let stderr = '';
  const io: Io = {
    env,
    stdout: { write: (s: string) => ((stdout += s), true) } as unknown as NodeJS.WritableStream,
    stderr: { write: (s: string) => ((stderr += s), true) } as unknown as NodeJS.WritableStream,
  };
  const code = await main(args, io);
  return { code, stdout, stderr };
}
