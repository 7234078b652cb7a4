import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { inject } from 'vitest';
import { MIGRATIONS_DIR, migrateDatabase } from '../../src/db/migrate.js';

/**
 * The superuser URL of this worker's cluster: global-setup.ts starts one cluster per worker, and
 * `VITEST_POOL_ID` (1, 2, …) chooses it, so files running at the same time never share a cluster.
 */
export function testAdminUrl(): string {
  const urls = inject('adminUrls');
  const pool = Number(process.env.VITEST_POOL_ID ?? 1);
  return urls[(pool - 1) % urls.length];
}

/** A fresh database cloned from the migrated template (or, with `empty`, not migrated at all); `drop()` removes it. */
export async function createTestDatabase(opts: { empty?: boolean } = {}): Promise<{ url: string; name: string; drop(): Promise<void> }> {
  const adminUrl = testAdminUrl();
  const template = inject('templateDb');
  const name = `t_${randomBytes(6).toString('hex')}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    for (let i = 0; ; i++) {
      try {
        await admin.unsafe(opts.empty ? `create database "${name}"` : `create database "${name}" template "${template}"`);
        break;
      } catch (err) {
        // Two files cloning the same template at the same instant: "source database is being accessed".
        if (i > 20 || (err as { code?: string }).code !== '55006') throw err;
        await new Promise((r) => setTimeout(r, 50 + Math.random() * 100));
      }
    }
  } finally {
    await admin.end();
  }
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    name,
    drop: async () => {
      const a = postgres(adminUrl, { max: 1, onnotice: () => {} });
      await a.unsafe(`drop database if exists "${name}" with (force)`).catch(() => {});
      await a.end();
    },
  };
}

/**
 * Migrates the database at `url` as the release that ended with migration `lastIdx` left it (the
 * migrations up to and including that index), for upgrade tests; `migrateDatabase(url)` then
 * applies the rest, as this release does.
 */
export async function migrateAsRelease(url: string, lastIdx: number): Promise<void> {
  const old = mkdtempSync(path.join(tmpdir(), 'coord-migrations-'));
  try {
    cpSync(MIGRATIONS_DIR, old, { recursive: true });
    const journalFile = path.join(old, 'meta/_journal.json');
    const journal = JSON.parse(readFileSync(journalFile, 'utf8'));
    journal.entries = journal.entries.filter((e: { idx: number }) => e.idx <= lastIdx);
    writeFileSync(journalFile, JSON.stringify(journal));
    await migrateDatabase(url, old);
  } finally {
    rmSync(old, { recursive: true, force: true });
  }
}

/**
 * Fills the data folder `dest` (`COORD_DATA_DIR`, or `startEmbeddedPostgres`'s `dataDir`) with a
 * copy of the run's initialised, stopped seed cluster (test/setup/global-setup.ts), so a process
 * test starts Postgres without running initdb; its port is chosen anew on first start. Tests whose
 * subject is the first initialisation keep an empty folder. With `DATABASE_URL` there is no seed,
 * and the folder stays empty. Returns `dest`.
 */
export function seededDataDir(dest: string): string {
  const seed = inject('seedDataDir');
  if (seed && !existsSync(dest)) {
    execFileSync('cp', ['-a', seed, dest]); // keeps the postgres OS user's ownership and modes
    rmSync(path.join(dest, 'pg-port'), { force: true });
  }
  return dest;
}
