/**
 * Keyset-pagination cursors, one codec for every list: a cursor is base64url JSON of the sort key
 * of the last row a page returned. Coord hands them out opaque, and it takes back only what it
 * could have issued: the right number of parts, each of the right kind. Anything else is 400
 * `invalid_cursor` (never a 500 at the database, never a silently empty page).
 */
import { unstorable } from './text.js';
import { fail } from './errors.js';

/** One part of a sort key: a string matching the pattern, or a Postgres `int` (32-bit). */
export type CursorPart = RegExp | 'int';

const INT_MIN = -(2 ** 31);
const INT_MAX = 2 ** 31 - 1;
/** Longest string part accepted back (scope names, ids, timestamps are all far shorter). */
const PART_MAX = 512;

/** The cursor for a sort key (`values` in sort order). */
export function encodeCursor(values: (string | number)[]): string {
  return Buffer.from(JSON.stringify(values)).toString('base64url');
}

/**
 * The sort key in `cursor`, checked part by part against `parts`; 400 `invalid_cursor` when it is
 * not a cursor this server could have issued.
 */
export function decodeCursor(cursor: string, parts: CursorPart[]): (string | number)[] {
  let v: unknown;
  try {
    v = /^[A-Za-z0-9_-]*$/.test(cursor) ? JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) : undefined;
  } catch {
    v = undefined;
  }
  if (Array.isArray(v) && v.length === parts.length && v.every((x, i) => partOk(x, parts[i]))) return v as (string | number)[];
  fail('invalid_cursor', 'cursor is not one this server issued; start again without it');
}

function partOk(x: unknown, part: CursorPart): boolean {
  if (part === 'int') return Number.isSafeInteger(x) && (x as number) >= INT_MIN && (x as number) <= INT_MAX;
  return typeof x === 'string' && x.length <= PART_MAX && unstorable(x) === null && part.test(x);
}

/** Any non-empty storable string (for parts whose shape Coord does not constrain, like scope names). */
export const ANY_TEXT = /^[\s\S]+$/;
