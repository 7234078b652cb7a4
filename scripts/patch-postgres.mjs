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
 * and timer are reset, so the connection object works again after it reconnects.
 *
 * `checkPostgresPatch()` is what the server calls at start-up to warn when it is missing (for
 * example after `npm ci --ignore-scripts`).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const MARKER = 'coord patch: porsager/postgres#1208';
const ORIGINAL = '  function nextWrite(fn) {\n    const x = socket.write(chunk, fn)';
const PATCHED =
  '  function nextWrite(fn) {\n' +
  `    if (!socket) { chunk = nextWriteTimer = null; error(Errors.connection('CONNECTION_CLOSED', options)); return false } // ${MARKER}\n` +
  '    const x = socket.write(chunk, fn)';
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
 * Applies the guard to every build of postgres.js (ESM, CommonJS, Cloudflare). Returns one line
 * per file: `patched`, `already patched`, or why it was left alone (a version without the exact
 * original code: then check whether the new version still needs it).
 */
export function patchPostgres(dir = packageDir()) {
  return BUILDS.map((b) => {
    const file = path.join(dir, b, 'connection.js');
    if (!existsSync(file)) return `${file}: missing, skipped`;
    const text = readFileSync(file, 'utf8');
    if (text.includes(MARKER)) return `${file}: already patched`;
    if (!text.includes(ORIGINAL)) return `${file}: nextWrite differs from postgres.js 3.4.9, left alone (check whether porsager/postgres#1208 is fixed in this version)`;
    writeFileSync(file, text.replace(ORIGINAL, PATCHED));
    return `${file}: patched`;
  });
}

/** True when the ESM build that Coord imports carries the guard. */
export function checkPostgresPatch(dir = packageDir()) {
  const file = path.join(dir, 'src', 'connection.js');
  return existsSync(file) && readFileSync(file, 'utf8').includes(MARKER);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const line of patchPostgres()) console.log(`patch-postgres: ${line}`);
}
