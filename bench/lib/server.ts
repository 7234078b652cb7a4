/**
 * Coord as a separate process: the real entry point (`src/server.ts`) run by `node --import tsx`
 * (one process, so its pid is the server's and its RSS is the server's), on the bench database,
 * listening on 127.0.0.1 only. Configuration is Coord's defaults (log level `info`, per-request
 * logs off) except that the stream cap is raised for the 1,000-stream memory figure, and no
 * `coord.toml` or `COORD_*` variable of the caller's environment leaks in. If the server stops
 * unexpectedly, the tail of its output is shown.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../src/db/embedded.js';
import { newToken } from '../../src/lib/ids.js';
import { build, ensureBuilt } from '../../scripts/build.mjs';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface CoordServer {
  /** `http://127.0.0.1:<port>` */
  base: string;
  pid: number;
  /** The operator token the server was started with (COORD_ADMIN_TOKEN). */
  adminToken: string;
  /** Resident set size of the server process in bytes (from /proc). */
  rssBytes(): number;
  /** SIGTERM, wait for the ordered shutdown (≤ 15 s), then SIGKILL. Idempotent. */
  stop(): Promise<void>;
}

export interface StartServerOptions {
  databaseUrl: string;
  /**
   * COORD_ADMIN_TOKEN. Servers sharing a database must share it: a start with another value
   * replaces (revokes) the token the running servers were given. Default: a fresh one.
   */
  adminToken?: string;
  /** Extra environment (e.g. COORD_DB_POOL_MAX). */
  env?: Record<string, string>;
  /** Write a V8 CPU profile of the server to this folder on exit. */
  cpuProfDir?: string;
  /** Run the server from another checkout (before/after comparisons); default: this repository. */
  root?: string;
}

/** Starts the server and resolves when `/readyz` answers 200 (≤ 60 s). Throws with its stderr otherwise. */
export async function startCoordServer(opts: StartServerOptions): Promise<CoordServer> {
  const port = await freePort();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'coord-bench-server-'));
  const configFile = path.join(dataDir, 'coord.toml');
  writeFileSync(configFile, '# benchmark: Coord defaults\n');
  const adminToken = opts.adminToken ?? newToken();
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('COORD_') && k !== 'DATABASE_URL' && k !== 'PORT') env[k] = v;
  Object.assign(env, {
    DATABASE_URL: opts.databaseUrl,
    PORT: String(port),
    HOST: '127.0.0.1',
    COORD_DATA_DIR: dataDir,
    COORD_CONFIG: configFile,
    COORD_ADMIN_TOKEN: adminToken,
    COORD_LOG_LEVEL: 'info',
    COORD_MAX_STREAMS: '2000',
    // One bench agent drives its token at ~1,000 requests/s on purpose, past the default rate
    // limit (6,000/min per token): the benchmark measures the claim path, not the limiter.
    COORD_RATE_LIMIT: '0',
    ...(opts.env ?? {}),
  });
  // What production runs: the compiled server (scripts/build.mjs), of this checkout or the compared one.
  const root = opts.root ?? REPO_ROOT;
  const { server } = root === REPO_ROOT ? await ensureBuilt() : await build(path.join(root, 'dist', 'node'), root, ['server']);
  const args = ['--enable-source-maps', ...(opts.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProfDir}`] : []), server];
  const child: ChildProcess = spawn(process.execPath, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const tail: string[] = [];
  const keep = (chunk: Buffer) => {
    tail.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    if (tail.length > 50) tail.splice(0, tail.length - 50);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  let exited = false;
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => ((exited = true), resolve(code))));
  const base = `http://127.0.0.1:${port}`;
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      if (!exited) {
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), 15_000);
        await exit;
        clearTimeout(t);
      }
      rmSync(dataDir, { recursive: true, force: true });
    })());
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exited) throw new Error(`coord server exited during start-up:\n${tail.join('\n')}`);
    try {
      const r = await fetch(`${base}/readyz`);
      await r.text();
      if (r.status === 200) break;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`coord server not ready after 60 s:\n${tail.join('\n')}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  void exit.then((code) => {
    if (!stopping) console.error(`bench: coord server exited unexpectedly (code ${code}):\n${tail.join('\n')}`);
  });
  return {
    base,
    pid: child.pid!,
    adminToken,
    rssBytes() {
      const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
      return m ? Number(m[1]) * 1024 : Number.NaN;
    },
    stop,
  };
}
