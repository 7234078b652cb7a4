/**
 * The `coord` process: signals, pipes and the exit code around `main` (cli/main.ts). bin/coord.mjs
 * runs it compiled (dist/node/coord.mjs, scripts/build.mjs) or, in a checkout whose build is
 * stale, from source through tsx.
 */
import { main } from './main.js';

// `coord todo list | head`: a closed pipe is the reader's choice, not an error.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err) => {
    if ((err as NodeJS.ErrnoException).code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw err;
  });
}
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
