/**
 * Real server processes for process-level tests: `src/server.ts`, compiled once per run
 * (test/setup/build.ts; `npm start`'s own tsx path is server.process.test.ts's), with a minimal
 * environment, its output collected, and every process started here killed by `killServers()`
 * (call it in `afterAll`/`afterEach`). Only processes this file spawned are ever signalled.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { inject } from 'vitest';
import { REPO_ROOT } from './process.js';

export interface ServerProcess {
  child: ChildProcess;
  port: number;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /** Resolves with the exit code (null when killed by a signal) once the process has exited. */
  exited: Promise<number | null>;
}

const started = new Set<ChildProcess>();

/**
 * Spawns a server listening on 127.0.0.1:`port`. `env` is added to a minimal environment (PATH,
 * HOME, log level `warn`); the parent's own environment (e.g. its DATABASE_URL) is not inherited.
 */
export function spawnServer(port: number, env: Record<string, string | undefined>): ServerProcess {
  const child = spawn(process.execPath, [inject('builtServer')], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, HOST: '127.0.0.1', PORT: String(port), COORD_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.add(child);
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
      started.delete(child);
      resolve(code);
    }),
  );
  return { child, port, output: () => out, exited };
}

/**
 * Polls `GET /readyz` until it answers 200 (true), the process exits (false) or `ms` pass (false).
 */
export async function waitReady(server: ServerProcess, ms = 60_000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (server.child.exitCode !== null || server.child.signalCode !== null) return false;
    try {
      if ((await fetch(`http://127.0.0.1:${server.port}/readyz`, { signal: AbortSignal.timeout(5000) })).ok) return true;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

/** SIGKILLs every server process spawned here that is still running and waits for each to exit. */
export async function killServers(): Promise<void> {
  const waits: Promise<unknown>[] = [];
  for (const c of started) {
    if (c.exitCode !== null || c.signalCode !== null) continue;
    waits.push(new Promise((r) => c.once('exit', r)));
    c.kill('SIGKILL');
  }
  await Promise.all(waits);
}

/** True while a process with this pid exists. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Waits until `pid` has exited (true) or `ms` pass (false). */
export async function waitGone(pid: number, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (alive(pid)) {
    if (Date.now() > until) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

/** The postmaster pid of a cluster folder, from its `postmaster.pid`. */
export function postmasterPid(clusterDir: string): number {
  return Number(readFileSync(path.join(clusterDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
}
