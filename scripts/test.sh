#!/usr/bin/env bash
# The one test command (README; .ci/run calls it): typecheck, then every test tier on a real
# Postgres (embedded in a temp folder, or DATABASE_URL when set). Ends with the plain line
# "N passed, N failed" that CI reads.
set -u
cd "$(dirname "$0")/.."
rm -f .vitest-report.json
if ! npx tsc -p . || ! npx tsc -p ui ; then
  echo "typecheck failed"
  echo "0 passed, 1 failed"
  exit 1
fi
npx vitest run --reporter=default --reporter=json --outputFile.json=.vitest-report.json "$@"
code=$?
node -e '
  const fs = require("fs");
  if (!fs.existsSync(".vitest-report.json")) { console.log("0 passed, 1 failed"); process.exit(0); }
  const r = JSON.parse(fs.readFileSync(".vitest-report.json", "utf8"));
  const failedSuites = (r.testResults || []).filter((t) => t.status === "failed" && (!t.assertionResults || t.assertionResults.length === 0)).length;
  let failed = r.numFailedTests + failedSuites;
  if (failed === 0 && Number(process.argv[1]) !== 0) failed = 1;
  console.log(`${r.numPassedTests} passed, ${failed} failed`);
' "$code"
exit $code
