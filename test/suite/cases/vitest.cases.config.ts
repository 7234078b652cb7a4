/**
 * The runner set-up of vitest.config.ts (the summary reporter, forks and, with `CASES_DB=1`, the
 * embedded-Postgres global set-up whose exit hook once turned failed runs into exit code 0),
 * pointed at the deliberately broken files of this folder, for test/suite/honest-result.test.ts.
 */
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/suite/cases/*.case.ts'],
    globalSetup: process.env.CASES_DB === '1' ? ['test/setup/global-setup.ts'] : [],
    reporters: ['default', './test/setup/summary-reporter.ts'],
    pool: 'forks',
    testTimeout: 2_000,
    hookTimeout: 2_000,
  },
});
