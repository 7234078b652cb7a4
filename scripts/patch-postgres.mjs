#!/usr/bin/env node
/**
 * Patches postgres.js 3.4.9 (run by `npm install`/`npm ci` as the `postinstall` script; idempotent).
 *
 * The defect (porsager/postgres#1208, #1154, #1066; fix proposed in PR #1209, not released): a
 * small write is flushed in a `setImmediate`; when the connection has closed in between,
 * `nextWrite()` calls `socket.write` on `null` and throws from the immediate, an uncaught
 * exception that ends the process. Any transaction open when Postgres restarts triggers it (its
 * ROLLBACK is written to the dead connection), so without this patch a Postgres restart under
 * load crashes Coord (issue 18 #6). The guard settles instead: the pending query is rejected
 * with CONNECTION_CLOSED (which Coord answers as 503 `database_unavailable`) and the write buffer
 * and timer are reset, so the connection object works again after it reconnects. A second edit
 * resets them when the connection closes, too (see EDITS).
 *
 * `checkPostgresPatch()` is what the server calls at start-up to warn when it is missing (for
 * example after `npm ci --ignore-scripts`).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const MARKER = 'coord patch: porsager/postgres#1208';
/** Each edit: the original text of postgres.js 3.4.9 and its replacement, which carries MARKER. */
const EDITS = [
  {
    name: 'nextWrite',
    original: '  function nextWrite(fn) {\n    const x = socket.write(chunk, fn)',
    patched:
      '  function nextWrite(fn) {\n' +
      `    if (!socket) { chunk = nextWriteTimer = null; error(Errors.connection('CONNECTION_CLOSED', options)); return false } // ${MARKER} (nextWrite)\n` +
      '    const x = socket.write(chunk, fn)',
  },
  {
    // closed() cancelled a pending flush but left its timer set, so every later write on the
    // connection waited for a flush that never came (a query on a reserved connection hung
    // forever), and left the unsent bytes to be prepended to the next connection's start-up.
    name: 'closed',
    original: '  async function closed(hadError) {\n    incoming = Buffer.alloc(0)\n    remaining = 0\n    incomings = null\n    clearImmediate(nextWriteTimer)\n',
    patched:
      '  async function closed(hadError) {\n    incoming = Buffer.alloc(0)\n    remaining = 0\n    incomings = null\n    clearImmediate(nextWriteTimer)\n' +
      `    chunk = nextWriteTimer = null // ${MARKER} (closed)\n`,
  },
  {
    // After a socket error (ECONNRESET) closed() rejected nothing, relying on the error handler,
    // which ran before it: a query sent in between (the caller retrying on the ECONNRESET) stayed
    // in `sent` with its write cancelled, and hung forever. Reject whatever is pending either way.
    name: 'closed-pending',
    original: "    !hadError && (query || sent.length) && error(Errors.connection('CONNECTION_CLOSED', options, socket))\n",
    // An `if`, not a line opening with `(`: postgres.js has no semicolons, and `(…)` after
    // `return reconnect()` on the line above would continue that statement.
    patched: `    if (query || sent.length) error(Errors.connection('CONNECTION_CLOSED', options, socket)) // ${MARKER} (closed-pending)\n`,
  },
];
const BUILDS = ['src', 'cjs/src', 'cf/src'];

/** The postgres.js package folder as resolved from this repository. */
function packageDir() {
  // `postgres/package.json` is not exported: walk up from the entry point to the package root.
  let dir = path.dirname(createRequire(import.meta.url).resolve('postgres'));
  while (!existsSync(path.join(dir, 'package.json')) || JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')).name !== 'postgres') {
    const up = path.dirname(dir);
    if (up === dir) throw new Error('postgres.js not found: run npm ci');
    dir = up;
  }
  return dir;
}

/**
 * Applies the edits to every build of postgres.js (ESM, CommonJS, Cloudflare). Returns one line
 * per file and edit: `patched`, `already patched`, or why it was left alone (a version without the
 * exact original code: then check whether that version still needs it).
 */
export function patchPostgres(dir = packageDir()) {
  const lines = [];
  for (const b of BUILDS) {
    const file = path.join(dir, b, 'connection.js');
    if (!existsSync(file)) {
      lines.push(`${file}: missing, skipped`);
      continue;
    }
    let text = readFileSync(file, 'utf8');
    for (const e of EDITS) {
      if (text.includes(`${MARKER} (${e.name})`)) lines.push(`${file}: ${e.name} already patched`);
      else if (!text.includes(e.original)) lines.push(`${file}: ${e.name} differs from postgres.js 3.4.9, left alone (check whether porsager/postgres#1208 is fixed in this version)`);
      else {
        text = text.replace(e.original, e.patched);
        lines.push(`${file}: ${e.name} patched`);
      }
    }
    writeFileSync(file, text);
  }
  return lines;
}

/** True when the ESM build that Coord imports carries every edit. */
export function checkPostgresPatch(dir = packageDir()) {
  const file = path.join(dir, 'src', 'connection.js');
  if (!existsSync(file)) return false;
  const text = readFileSync(file, 'utf8');
  return EDITS.every((e) => text.includes(`${MARKER} (${e.name})`));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const line of patchPostgres()) console.log(`patch-postgres: ${line}`);
}
