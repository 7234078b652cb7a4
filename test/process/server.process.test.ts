/**
 * The real process (the compiled server, as `npm start` runs it) on its own embedded Postgres: one
 * server per data folder, and a Ctrl-C that reaches it twice (the process group plus a relaying
 * wrapper) still shuts down in order and leaves no Postgres behind. And `npm start` itself: it
 * builds when the build is stale and serves compiled JavaScript with source maps.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../src/db/embedded.js';
import { REPO_ROOT } from '../helpers/process.js';

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'coord-proc-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

function start(port: number) {
  const child = spawn(process.execPath, ['--enable-source-maps', inject('builtServer')], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, PORT: String(port), COORD_DATA_DIR: dataDir, COORD_LOG_LEVEL: 'warn', COORD_SWEEPS: 'off' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return { child, exited, output: () => output };
}

async function ready(port: number, ms = 30_000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/readyz`)).ok) return true;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('the server process', () => {
  it('should refuse a second server on the same data folder, and stop cleanly on a doubled Ctrl-C', async () => {
    const [p1, p2] = [await freePort(), await freePort()];
    const first = start(p1);
    expect(await ready(p1), first.output()).toBe(true);
    const postmaster = Number(readFileSync(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);

    const second = start(p2);
    expect(await second.exited).toBe(1);
    expect(second.output()).toContain('another Coord server');
    expect(await ready(p1, 2000)).toBe(true); // the first one still serves

    // Two deliveries, as a terminal's Ctrl-C plus a relaying wrapper make (a few ms apart, so the
    // kernel does not fold them into one pending signal, and well inside the shutdown).
    first.child.kill('SIGINT');
    await new Promise((r) => setTimeout(r, 5));
    first.child.kill('SIGINT');
    expect(await first.exited).toBe(0);
    expect(first.output()).not.toContain('exiting now');
    for (let i = 0; i < 50 && alive(postmaster); i++) await new Promise((r) => setTimeout(r, 100));
    expect(alive(postmaster)).toBe(false);
    expect(existsSync(path.join(dataDir, 'coord.pid'))).toBe(false);
  });

  it('should build and serve compiled JavaScript through `npm start`', async () => {
    const port = await freePort();
    const home = mkdtempSync(path.join(os.tmpdir(), 'coord-start-'));
    const child = spawn('npm', ['start'], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH, HOME: home, PORT: String(port), COORD_DATA_DIR: path.join(home, 'data'), COORD_LOG_LEVEL: 'warn', COORD_SWEEPS: 'off' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    children.push(child);
    let output = '';
    child.stdout!.on('data', (d) => (output += d));
    child.stderr!.on('data', (d) => (output += d));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    try {
      expect(await ready(port, 60_000), output).toBe(true);
      // The process serving is node on dist/node/server.mjs with source maps, not tsx.
      const servers = readdirSync('/proc')
        .filter((p) => /^\d+$/.test(p))
        .map((p) => {
          try {
            return readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
          } catch {
            return [];
          }
        })
        .filter((argv) => argv.some((a) => a.endsWith(path.join('dist', 'node', 'server.mjs'))) && argv.includes(`--enable-source-maps`));
      expect(servers.length, output).toBeGreaterThan(0);
      expect(servers.flat().join(' ')).not.toContain('tsx');
    } finally {
      process.kill(-child.pid!, 'SIGTERM');
      await exited;
      rmSync(home, { recursive: true, force: true });
    }
  });
});
