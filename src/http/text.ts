/**
 * Free text Coord stores (Postgres text and jsonb hold valid Unicode without U+0000): the one check
 * and the one schema for it, so a body with an unpaired surrogate or NUL is a 400 at the schema,
 * never a 500 at the database.
 */
import { z } from 'zod';

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why `text` cannot be stored (a NUL, an unpaired surrogate), or null when it can. */
export function unstorable(text: string | undefined): string | null {
  if (text === undefined) return null;
  if (text.includes('\u0000')) return 'a NUL character (U+0000)';
  if (LONE_SURROGATE.test(text)) return 'an unpaired UTF-16 surrogate';
  return null;
}

/** A string of at most `max` characters that Coord can store. */
export const StoredText = (max: number) =>
  z
    .string()
    .max(max)
    .refine((v) => unstorable(v) === null, 'must be valid Unicode text without NUL (U+0000) or unpaired surrogates');
