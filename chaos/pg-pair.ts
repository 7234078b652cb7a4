/**
 * A PostgreSQL primary with a synchronous standby in streaming replication, and a failover the
 * way an HA manager (Patroni, repmgr) performs one: the primary's processes are killed with
 * SIGKILL (the machine died), then the standby is promoted (`pg_ctl promote`).
 *
 * The binaries are Debian's `postgresql` packages (`/usr/lib/postgresql/<major>/bin`, or
 * `COORD_PG_BIN`): the embedded binaries Coord starts by default have no `pg_basebackup`, which
 * makes the standby. `synchronous_standby_names` is set on the primary (`ALTER SYSTEM`, once the
 * standby is streaming: before, every commit would wait for it) after the standby was copied, so
 * the standby, once promoted, does not wait for a standby of its own (an HA manager reconfigures
 * the same setting); `synchronous_commit = on` everywhere. `synchronous: false` leaves the standby
 * asynchronous, to measure what that loses. Trust authentication on 127.0.0.1: a
 * harness, not a deployment. As root, every server runs as the `postgres` OS user.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { appendFileSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import postgres from 'postgres';
import { freePort, postgresUser, untraversableAncestor } from '../src/db/embedded.js';

export interface PgPair {
  /** Both hosts, `target_session_attrs=primary`: a client finds whichever is the primary. */
  url: string;
  /** A URL of one server alone (0: the first primary, 1: the standby). */
  urlOf(i: 0 | 1): string;
  major: number;
  /** SIGKILLs every process of the primary's cluster (postmaster and backends). */
  killPrimary(): void;
  /** `pg_ctl promote` on the standby; resolves when it accepts writes. */
  promoteStandby(): Promise<void>;
  /** Ends every client connection of Coord's (application_name coord…) on the primary: a network blip. */
  dropClients(): Promise<number>;
  /** The standby's replication state as the primary reports it (`sync` when synchronous). */
  syncState(): Promise<string | null>;
  stop(): void;
}

/** Debian's newest PostgreSQL bin folder (or `COORD_PG_BIN`), or undefined when none is installed. */
export function debianPgBin(): string | undefined {
  if (process.env.COORD_PG_BIN) return process.env.COORD_PG_BIN;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const majors = readdirSync(root)
    .map(Number)
    .filter((n) => n > 0 && existsSync(path.join(root, String(n), 'bin', 'pg_basebackup')))
    .sort((a, b) => b - a);
  return majors.length ? path.join(root, String(majors[0]), 'bin') : undefined;
}

/** Starts the pair under `dir` (which it creates). Throws when Debian's binaries are missing. */
export async function startPgPair(dir: string, log: (m: string) => void = () => {}, opts: { synchronous?: boolean } = {}): Promise<PgPair> {
  const synchronous = opts.synchronous ?? true;
  const bin = debianPgBin();
  if (!bin) throw new Error('no PostgreSQL with pg_basebackup under /usr/lib/postgresql (apt-get install postgresql), nor COORD_PG_BIN');
  const major = Number(execFileSync(path.join(bin, 'postgres'), ['--version'], { encoding: 'utf8' }).match(/(\d+)/)?.[1]);
  const user = process.getuid?.() === 0 ? postgresUser() : undefined;
  if (process.getuid?.() === 0 && !user) throw new Error('running as root needs the postgres OS user (Debian’s postgresql package creates it)');
  const own = (p: string) => user && chownSync(p, user.uid, user.gids[0]);
  mkdirSync(dir, { recursive: true });
  own(dir);
  const blocked = user && untraversableAncestor(dir, user);
  if (blocked) throw new Error(`the postgres OS user cannot traverse ${blocked}: put the pair in a folder it can reach`);
  const run = (args: string[], what: string) => {
    const r = spawnSync(path.join(bin, args[0]), args.slice(1), {
      encoding: 'utf8',
      uid: user?.uid,
      gid: user?.gids[0],
      cwd: dir,
      env: { ...process.env, LC_ALL: 'C' },
    });
    if (r.status !== 0) throw new Error(`${what}: ${args.join(' ')} exited ${r.status}: ${r.stderr || r.stdout}`);
    return r.stdout;
  };
  const ports = [await freePort(), await freePort()] as const;
  const data = [path.join(dir, 'primary'), path.join(dir, 'standby')] as const;
  const common = ['-c listen_addresses=127.0.0.1', `-c unix_socket_directories=${dir}`, '-c fsync=on', '-c max_connections=200'];
  const start = (i: 0 | 1, extra: string[]) =>
    run(
      ['pg_ctl', 'start', '-w', '-t', '60', '-D', data[i], '-l', `${data[i]}.log`, '-o', [`-p ${ports[i]}`, ...common, ...extra].join(' ')],
      `start server ${i}`,
    );

  run(['initdb', '-D', data[0], '-U', 'coord', '--auth=trust', '-E', 'UTF8', '--locale=C'], 'initdb');
  start(0, ['-c wal_level=replica', '-c max_wal_senders=5', '-c synchronous_commit=on']);
  const urlOf = (i: 0 | 1, db = 'coord') => `postgres://coord@127.0.0.1:${ports[i]}/${db}`;
  const admin = postgres(urlOf(0, 'postgres'), { max: 1, onnotice: () => {} });
  await admin`create database coord`;
  await admin.end();
  run(['pg_basebackup', '-h', '127.0.0.1', '-p', String(ports[0]), '-U', 'coord', '-D', data[1], '-X', 'stream', '-c', 'fast'], 'pg_basebackup');
  writeFileSync(path.join(data[1], 'standby.signal'), '');
  appendFileSync(path.join(data[1], 'postgresql.auto.conf'), `primary_conninfo = 'host=127.0.0.1 port=${ports[0]} user=coord application_name=standby1'\n`);
  own(path.join(data[1], 'standby.signal'));
  start(1, ['-c hot_standby=on', '-c synchronous_commit=on']);
  if (synchronous) {
    const primary = postgres(urlOf(0), { max: 1, onnotice: () => {} });
    await primary`alter system set synchronous_standby_names = 'standby1'`;
    await primary`select pg_reload_conf()`;
    await primary.end();
  }

  const syncState = async () => {
    const c = postgres(urlOf(0), { max: 1, onnotice: () => {}, connect_timeout: 2 });
    try {
      const [r] = await c<{ sync_state: string }[]>`select sync_state from pg_stat_replication where application_name = 'standby1'`;
      return r?.sync_state ?? null;
    } finally {
      await c.end({ timeout: 1 });
    }
  };
  for (let i = 0; (await syncState()) !== (synchronous ? 'sync' : 'async'); i++) {
    if (i > 100) throw new Error(`the standby did not become ${synchronous ? 'synchronous' : 'a streaming standby'} within 10 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
  log(`PostgreSQL ${major}: primary on ${ports[0]}, ${synchronous ? 'synchronous' : 'asynchronous'} standby on ${ports[1]}`);

  /** The pids of a cluster's processes: its postmaster and the postmaster's children. */
  const processesOf = (i: 0 | 1): number[] => {
    const pidFile = path.join(data[i], 'postmaster.pid');
    if (!existsSync(pidFile)) return [];
    const postmaster = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
    const children = readdirSync('/proc')
      .filter((e) => /^\d+$/.test(e))
      .filter((e) => {
        try {
          const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
          return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === postmaster;
        } catch {
          return false;
        }
      })
      .map(Number);
    return [postmaster, ...children];
  };
  const kill = (i: 0 | 1) => {
    for (const pid of processesOf(i)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
  };
  return {
    url: `postgres://coord@127.0.0.1:${ports[0]},127.0.0.1:${ports[1]}/coord?target_session_attrs=primary`,
    urlOf: (i) => urlOf(i),
    major,
    killPrimary: () => kill(0),
    async promoteStandby() {
      run(['pg_ctl', 'promote', '-w', '-t', '60', '-D', data[1]], 'promote');
      log('standby promoted');
    },
    syncState,
    async dropClients() {
      const c = postgres(urlOf(0), { max: 1, onnotice: () => {}, connect_timeout: 2 });
      try {
        const rows = await c`select pg_terminate_backend(pid) from pg_stat_activity where application_name like 'coord%' and pid <> pg_backend_pid()`;
        return rows.length;
      } finally {
        await c.end({ timeout: 1 });
      }
    },
    stop() {
      kill(0);
      kill(1);
    },
  };
}
