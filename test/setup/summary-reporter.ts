/**
 * The closing line of a test run, counted so that it cannot read as a pass after a failure
 * . With `COORD_TEST_SUMMARY` set (scripts/test.sh sets it) it writes the counts, the
 * run's end reason and each file's wall time there as JSON, and the script prints the closing
 * line and sets the exit code; otherwise (a plain `npx vitest run`) it prints the line
 * `N passed, N failed, N skipped` itself, after vitest's summary.
 *
 * What counts as failed, besides a failed test:
 * - a test that was skipped because something around it broke: its file failed to load, or a
 *   `beforeAll`/`afterAll` of its file or suite threw (vitest marks such tests `skipped`);
 * - a test skipped at run time without a reason: `ctx.skip()` with no note is how a missing
 *   dependency (Chromium, git) would hide; `ctx.skip('why it may be skipped')` counts as skipped;
 * - a test still pending at the end (the run was interrupted or timed out around it);
 * - each error of a file or suite that no failed test already accounts for (a file that does not
 *   import, a throwing `afterAll` after passing tests), and each unhandled error;
 * - an interrupted run, which counts at least one failure.
 * Skipped on purpose, and counted as skipped: `it.skip`, `it.todo`, and `ctx.skip(note)` with a
 * note, inside a file and suites that had no error.
 */
import { writeFileSync } from 'node:fs';
import type { Reporter, SerializedError, TestCase, TestModule, TestRunEndReason, TestSuite } from 'vitest/node';

export interface RunSummary {
  passed: number;
  failed: number;
  skipped: number;
  reason: TestRunEndReason;
  /** Wall time of each test file (ms), by path relative to the working directory. */
  files: Record<string, number>;
}

type Container = TestModule | TestSuite;

/** True when `c` or one of its parents reported an error of its own (a hook, a failed import). */
function brokenAround(test: TestCase): boolean {
  for (let c: Container | undefined = test.parent; c; c = c.type === 'suite' ? c.parent : undefined) {
    if (c.errors().length > 0) return true;
  }
  return false;
}

/** Counts a run's tests as the module comment says. Exported for its own test. */
export function countRun(modules: ReadonlyArray<TestModule>, unhandled: ReadonlyArray<SerializedError>, reason: TestRunEndReason): RunSummary {
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  const files: Record<string, number> = {};
  const containers: Container[] = [];
  for (const mod of modules) {
    files[mod.relativeModuleId] = Math.round(mod.diagnostic().duration);
    containers.push(mod, ...mod.children.allSuites());
  }
  for (const c of containers) {
    let failedHere = 0;
    for (const test of c.children.tests()) {
      const r = test.result();
      if (r.state === 'passed') passed++;
      else if (r.state === 'failed') failed++, failedHere++;
      else if (r.state === 'skipped') {
        const onPurpose = !brokenAround(test) && (test.options.mode === 'skip' || test.options.mode === 'todo' || !!r.note);
        if (onPurpose) skipped++;
        else failed++, failedHere++;
      } else failed++, failedHere++; // pending: it never finished
    }
    // Errors of the container itself (a failed import, a throwing hook) that no test above shows.
    if (failedHere === 0) failed += c.errors().length;
  }
  failed += unhandled.length;
  if (reason === 'interrupted' && failed === 0) failed = 1;
  return { passed, failed, skipped, reason, files };
}

/** Formats the closing line CI reads (`N passed, N failed`, then `, N skipped`). */
export function closingLine(s: Pick<RunSummary, 'passed' | 'failed' | 'skipped'>): string {
  return `${s.passed} passed, ${s.failed} failed, ${s.skipped} skipped`;
}

export default class SummaryReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>, unhandled: ReadonlyArray<SerializedError>, reason: TestRunEndReason): void {
    const summary = countRun(modules, unhandled, reason);
    // scripts/test.sh prints the closing line itself, after checking it against vitest's exit code.
    if (process.env.COORD_TEST_SUMMARY) writeFileSync(process.env.COORD_TEST_SUMMARY, JSON.stringify(summary, null, 1));
    else process.stdout.write(`${closingLine(summary)}\n`);
  }
}
