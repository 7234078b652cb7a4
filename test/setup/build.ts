/**
 * Compiles the server and the `coord` binary to plain JavaScript once per test run, as `npm run
 * build` does (scripts/build.mjs, the same function), so the tests that spawn them
 * (test/helpers/server.ts, test/cli/helpers.ts) start what production starts, in a fraction of
 * what `node --import tsx` takes to transpile the sources in every child. The output lives in
 * `.test-build/<pid>/` (not dist/, which a developer's `npm start` may rebuild while tests run),
 * two folders below the repository like dist/node/ is. The real entry points (`npm start`,
 * bin/coord.mjs) keep tests of their own: test/process/server.process.test.ts,
 * test/cli/cli.binary.test.ts and the walkthrough.
 */
import { rmdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { build } from '../../scripts/build.mjs';

const ROOT = path.resolve(import.meta.dirname, '../..');

export interface BuiltEntries {
  /** The folder; removed by `removeBuilt`. */
  dir: string;
  /** `src/server.ts`, compiled. */
  server: string;
  /** `cli/bin.ts`, compiled: the `coord` process. */
  coord: string;
}

export async function buildEntries(): Promise<BuiltEntries> {
  const dir = path.join(ROOT, '.test-build', String(process.pid));
  return { dir, ...(await build(dir)) };
}

export function removeBuilt(b: BuiltEntries | undefined): void {
  if (!b) return;
  rmSync(b.dir, { recursive: true, force: true });
  try {
    rmdirSync(path.dirname(b.dir)); // only when no other run's folder is left in it
  } catch {
    /* another run is still using it */
  }
}
