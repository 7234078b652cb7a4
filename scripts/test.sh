#!/usr/bin/env bash
# The one test command (docs/guides/development.md; .ci/run calls it): typecheck, then the test tiers
# (vitest.config.ts) on real Postgres clusters, one per worker (embedded in a temp folder, or
# DATABASE_URL when set). Arguments go to vitest: `npm test -- --project unit`, a file, `-t name`.
#
# Ends with the plain line "N passed, N failed, N skipped" that CI reads, counted by
# test/setup/summary-reporter.ts, and exits non-zero whenever anything failed: a test, a hook, a
# file that does not load, an unhandled error, or a run that was interrupted or died before its
# summary (issue 33). That is checked here a second time against vitest's own exit code, so
# neither can read as a pass on its own.
set -u
cd "$(dirname "$0")/.."
started=$SECONDS
summary=$(mktemp "${TMPDIR:-/tmp}/coord-test-summary.XXXXXX")
trap 'rm -f "$summary"' EXIT
# An interrupted run (Ctrl-C, a CI time-out's SIGTERM) still ends with a line that says it failed.
interrupted=0
trap 'interrupted=1' INT TERM

# COORD_SKIP_TYPECHECK=1 is for the script's own test (test/suite/honest-result.test.ts).
# The typecheck step also runs the linter and the formatter's check (Biome, biome.json): `npm run
# lint:fix` repairs what it can.
if [ "${COORD_SKIP_TYPECHECK:-}" != 1 ] && { ! npx tsc -p . || ! npx tsc -p ui || ! npx biome check --error-on-warnings --max-diagnostics=20 . ; }; then
  echo "typecheck or lint failed"
  echo "0 passed, 1 failed"
  exit 1
fi
echo "typecheck: $((SECONDS - started)) s"

: > "$summary"
COORD_TEST_SUMMARY="$summary" npx vitest run "$@"
code=$?
read -r passed failed skipped reason < <(node -e '
  const fs = require("fs");
  let s = {};
  try { s = JSON.parse(fs.readFileSync(process.argv[1], "utf8")); } catch {}
  if (typeof s.passed !== "number") s = { passed: 0, failed: 1, skipped: 0, reason: "no-summary" };
  console.log(s.passed, s.failed, s.skipped, s.reason);
' "$summary")
if [ "$code" -ne 0 ] && [ "$failed" -eq 0 ]; then
  # vitest failed the run for a reason the counts do not show (a config error, a crash): say so.
  failed=1
  echo "vitest exited with code $code ($reason) although no test failed"
fi
if [ "$interrupted" -eq 1 ]; then
  echo "interrupted"
  [ "$failed" -gt 0 ] || failed=1
  [ "$code" -ne 0 ] || code=130
fi
echo "tests: $((SECONDS - started)) s wall in total"
echo "$passed passed, $failed failed, $skipped skipped"
if [ "$failed" -gt 0 ]; then exit $(( code > 0 ? code : 1 )); fi
exit 0
