/**
 * The benchmark's own Postgres: an embedded cluster in a temp folder, started with
 * `startEmbeddedPostgres({ fast: true })` (fsync=off, synchronous_commit=off,
 * full_page_writes=off). Every contender runs on this same cluster with the same settings, so the
 * ratios compare software, not durability settings. The folder is removed on stop.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { startEmbeddedPostgres, type EmbeddedHandle } from '../../src/db/embedded.js';

export interface BenchPostgres {
  /** URL of database `db` on the cluster (default: the `postgres` maintenance database). */
  url(db?: string): string;
  /** One-connection client on the maintenance database, for CREATE DATABASE and settings. */
  admin: postgres.Sql;
  /** Creates an empty database and returns its URL. */
  createDatabase(name: string): Promise<string>;
  /** Stops the cluster and removes its folder. Idempotent. */
  stop(): Promise<void>;
}

const log = (m: string) => console.error(`bench: ${m}`);

/**
 * Starts the cluster. With `pgStatStatements`, preloads `pg_stat_statements` (one restart) for
 * the profile mode; the ordinary run does not load it, since it costs a little on every statement.
 */
export async function startBenchPostgres(opts: { pgStatStatements?: boolean } = {}): Promise<BenchPostgres> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'coord-bench-'));
  let handle: EmbeddedHandle | undefined;
  let admin: postgres.Sql | undefined;
  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      await admin?.end({ timeout: 2 }).catch(() => {});
      await handle?.stop();
      rmSync(dataDir, { recursive: true, force: true });
    })());
  try {
    handle = await startEmbeddedPostgres({ dataDir, persistent: true, fast: true, log });
    if (opts.pgStatStatements) {
      const a = postgres(handle.url, { max: 1, onnotice: () => {} });
      await a.unsafe(`alter system set shared_preload_libraries = 'pg_stat_statements'`);
      await a.end();
      const port = handle.port;
      await handle.stop();
      handle = await startEmbeddedPostgres({ dataDir, port, persistent: true, fast: true, log });
    }
    admin = postgres(handle.url, { max: 1, onnotice: () => {} });
  } catch (err) {
    await stop();
    throw err;
  }
  const base = handle.url;
  const url = (db = 'postgres') => {
    const u = new URL(base);
    u.pathname = `/${db}`;
    return u.toString();
  };
  return {
    url,
    admin,
    async createDatabase(name) {
      await admin!.unsafe(`create database "${name}"`);
      return url(name);
    },
    stop,
  };
}
