/**
 * How many test files run at once: `COORD_TEST_WORKERS` when set, else one per core of the
 * machine, except with `DATABASE_URL`, where every file shares that one cluster and its
 * transaction horizon, so files run one at a time unless `COORD_TEST_WORKERS` says otherwise.
 * Read by vitest.config.ts (the pool size) and test/setup/global-setup.ts (one cluster per worker).
 */
import os from 'node:os';

export function testWorkers(): number {
  const set = Number(process.env.COORD_TEST_WORKERS);
  if (Number.isInteger(set) && set > 0) return set;
  return process.env.DATABASE_URL ? 1 : os.availableParallelism();
}
