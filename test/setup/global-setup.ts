/**
 * Starts one Postgres for the whole run (embedded in a temp folder, or `DATABASE_URL` when set),
 * migrates a template database once, and hands both to the test files. Each test file then clones
 * its own database from the template (test/helpers/db.ts), so files run in parallel.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres, type EmbeddedHandle } from '../../src/db/embedded.js';
import { migrateDatabase } from '../../src/db/migrate.js';

declare module 'vitest' {
  export interface ProvidedContext {
    adminUrl: string;
    templateDb: string;
  }
}

let embedded: EmbeddedHandle | undefined;
let dataDir: string | undefined;
let adminUrl: string;
let templateDb: string;

function withDb(url: string, db: string): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}

export async function setup(project: TestProject) {
  if (process.env.DATABASE_URL) {
    adminUrl = process.env.DATABASE_URL;
  } else {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'coord-test-'));
    embedded = await startEmbeddedPostgres({ dataDir, persistent: false, fast: true, log: (m) => console.error(m) });
    adminUrl = embedded.url;
  }
  templateDb = `coord_tpl_${process.pid}_${Date.now().toString(36)}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database "${templateDb}"`);
  } finally {
    await admin.end();
  }
  await migrateDatabase(withDb(adminUrl, templateDb));
  project.provide('adminUrl', adminUrl);
  project.provide('templateDb', templateDb);
}

export async function teardown() {
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`drop database if exists "${templateDb}" with (force)`).catch(() => {});
  await admin.end();
  await embedded?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
}
