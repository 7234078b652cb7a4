#!/usr/bin/env node
// The `coord` CLI (package.json "bin"). tsx, a runtime dependency, runs the TypeScript sources
// directly, so a plain `npm install` / `npm ci` is all it needs: no build step.
import { register } from 'tsx/esm/api';

register();
// `coord todo list | head`: a closed pipe is the reader's choice, not an error.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw err;
  });
}
const { main } = await import('../cli/main.ts');
const stop = new AbortController();
// The first Ctrl-C ends a long-running command (events follow) cleanly; a second one kills it.
const onSignal = () => {
  // A second signal exits at once; implementers this process started are killed on the way out (cli/runner/execute.ts).
  if (stop.signal.aborted) process.exit(130);
  process.stderr.write('coord: interrupted; ending what is running (interrupt again to exit at once)\n');
  stop.abort();
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);
const code = await main(
  process.argv.slice(2),
  { env: process.env, stdout: process.stdout, stderr: process.stderr, stdin: process.stdin },
  { stop: stop.signal },
);
// Flush, then exit at once: idle keep-alive sockets would otherwise hold the process for seconds.
await new Promise((resolve) => process.stdout.write('', resolve));
await new Promise((resolve) => process.stderr.write('', resolve));
process.exit(code);
