/**
 * Starts the Postgres clusters of a test run and hands their URLs to the test files: one embedded
 * cluster per worker (test/helpers/db.ts picks its own by the worker's pool id), so files that run
 * at the same time never share a cluster, and with it the cluster-wide transaction horizon that
 * event visibility reads. The first cluster is initialised and its template database
 * migrated once; the others are copies of its stopped data folder, so a run pays for one initdb
 * and one migration. Each test file then clones its own database from the template.
 *
 * With `DATABASE_URL` set, that server is the only cluster, and the run uses one worker unless
 * `COORD_TEST_WORKERS` says otherwise (test/setup/workers.ts).
 *
 * It also compiles the server and the CLI for the tests that spawn them (test/setup/build.ts).
 * Every project (tier) of the run calls `setup`; the clusters are started by the first call and
 * stopped after the last `teardown`, so the tiers share them.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres, type EmbeddedHandle } from '../../src/db/embedded.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { buildEntries, removeBuilt, type BuiltEntries } from './build.js';
import { testWorkers } from './workers.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** One superuser URL per worker; `VITEST_POOL_ID` n uses entry (n - 1) mod length. */
    adminUrls: string[];
    /** The migrated template database present in every cluster. */
    templateDb: string;
    /** A stopped, initialised embedded cluster folder (`<dir>/pg` and its files) that process tests copy instead of running initdb; empty with DATABASE_URL. */
    seedDataDir: string;
    /** `src/server.ts` compiled to JavaScript (test/setup/build.ts), for spawned servers. */
    builtServer: string;
    /** `bin/coord.mjs` compiled with the CLI, for spawned CLI processes. */
    builtCoord: string;
  }
}

interface Clusters {
  adminUrls: string[];
  templateDb: string;
  seedDataDir: string;
  stop(): Promise<void>;
}

interface Shared {
  clusters: Promise<Clusters>;
  built: Promise<BuiltEntries>;
  users: number;
}

const KEY = Symbol.for('coord.test.clusters');
const shared = globalThis as unknown as { [KEY]?: Shared };

function withDb(url: string, db: string): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}

async function createTemplate(adminUrl: string, templateDb: string): Promise<void> {
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database "${templateDb}"`);
  } finally {
    await admin.end();
  }
  await migrateDatabase(withDb(adminUrl, templateDb));
}

async function startClusters(): Promise<Clusters> {
  const templateDb = `coord_tpl_${process.pid}_${Date.now().toString(36)}`;
  if (process.env.DATABASE_URL) {
    const adminUrl = process.env.DATABASE_URL;
    await createTemplate(adminUrl, templateDb);
    return {
      adminUrls: [adminUrl],
      templateDb,
      seedDataDir: '',
      async stop() {
        const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
        await admin.unsafe(`drop database if exists "${templateDb}" with (force)`).catch(() => {});
        await admin.end();
      },
    };
  }
  const root = mkdtempSync(path.join(os.tmpdir(), 'coord-test-'));
  chmodSync(root, 0o755); // as root, the postgres OS user runs the clusters below it
  const log = (m: string) => console.error(m);
  const seedDataDir = path.join(root, 'seed');
  // The seed: initdb and the migrated template, then stopped so it can be copied.
  const seed = await startEmbeddedPostgres({ dataDir: seedDataDir, persistent: true, fast: true, watchdog: false, log });
  await createTemplate(seed.url, templateDb);
  await seed.stop();
  const handles: EmbeddedHandle[] = [];
  try {
    for (let i = 0; i < testWorkers(); i++) {
      const dataDir = path.join(root, `w${i + 1}`);
      // `cp -a` keeps the owner (the postgres OS user when run as root) and modes Postgres insists on.
      execFileSync('cp', ['-a', seedDataDir, dataDir]);
      rmSync(path.join(dataDir, 'pg-port'), { force: true });
      handles.push(await startEmbeddedPostgres({ dataDir, persistent: true, fast: true, log }));
    }
  } catch (err) {
    await Promise.all(handles.map((h) => h.stop()));
    rmSync(root, { recursive: true, force: true });
    throw err;
  }
  return {
    adminUrls: handles.map((h) => h.url),
    templateDb,
    seedDataDir,
    async stop() {
      await Promise.all(handles.map((h) => h.stop()));
      rmSync(root, { recursive: true, force: true });
    },
  };
}

export async function setup(project: TestProject) {
  const s = (shared[KEY] ??= { clusters: startClusters(), built: buildEntries(), users: 0 });
  s.users++;
  const [c, b] = await Promise.all([s.clusters, s.built]);
  project.provide('adminUrls', c.adminUrls);
  project.provide('templateDb', c.templateDb);
  project.provide('seedDataDir', c.seedDataDir);
  project.provide('builtServer', b.server);
  project.provide('builtCoord', b.coord);
}

export async function teardown() {
  const s = shared[KEY];
  if (!s || --s.users > 0) return;
  delete shared[KEY];
  removeBuilt(await s.built.catch(() => undefined));
  await (await s.clusters).stop();
}
