/**
 * The test tiers (issue 33; README "Development"), as vitest projects:
 * - unit: pure code, no database, no process; modules shared between files (`isolate: false`).
 * - api: a real Postgres and the app in this process (`app.inject` or a loopback listener).
 * - e2e: what a user runs: the CLI and server as processes, README blocks, the browser.
 * - stress: race rounds, chaos and fuzzing, whose repetitions follow `COORD_TEST_SCALE`
 *   (test/helpers/scale.ts): reduced in `npm test`, full in `npm run test:stress`.
 * A test file belongs to exactly one tier: the lists below name unit, e2e and stress files, and
 * every other file is api. Files run in parallel, one worker per core (test/setup/workers.ts),
 * each worker on its own Postgres cluster (test/setup/global-setup.ts).
 */
import { defineConfig } from 'vitest/config';
import { testWorkers } from './test/setup/workers.js';

const UNIT = [
  'test/config/**/*.test.ts',
  'test/contract/**/*.test.ts',
  'test/db/embedded.traverse.test.ts',
  'test/db/database-url.test.ts',
  'test/events/doorbell.test.ts',
  'test/graphs/contract.*.test.ts',
  'test/scenarios/scenarios.plan.test.ts',
  'test/sdk/sdk.drift.test.ts',
  'test/sdk/sdk.follow.test.ts',
  'test/architecture/**/*.test.ts',
];
const E2E = [
  'test/agents/**/*.test.ts',
  'test/cli/**/*.test.ts',
  'test/process/**/*.test.ts',
  'test/runner/**/*.test.ts',
  'test/ui/**/*.test.ts',
  'test/**/*.readme.test.ts',
  'test/sdk/sdk.example.test.ts',
  'test/bench/**/*.test.ts',
  'test/suite/**/*.test.ts',
  'test/db/failover.test.ts',
  'test/db/pgbouncer.test.ts',
];
const STRESS = [
  'test/chaos/**/*.test.ts',
  'test/http/fuzz.test.ts',
  'test/graphs/graphs.fuzz.test.ts',
  'test/graphs/execution.races.test.ts',
  'test/todos/races.test.ts',
  'test/process/replicas.start.test.ts',
];
const ALL = ['test/**/*.test.ts'];
const DB_SETUP = ['test/setup/global-setup.ts'];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: testWorkers(),
    reporters: ['default', './test/setup/summary-reporter.ts'],
    projects: [
      { extends: true, test: { name: 'unit', include: UNIT, isolate: false } },
      { extends: true, test: { name: 'api', include: ALL, exclude: [...UNIT, ...E2E, ...STRESS], globalSetup: DB_SETUP, isolate: false } },
      { extends: true, test: { name: 'e2e', include: E2E, exclude: STRESS, globalSetup: DB_SETUP } },
      { extends: true, test: { name: 'stress', include: STRESS, globalSetup: DB_SETUP } },
    ],
  },
});
