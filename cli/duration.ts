/**
 * Duration arguments (`30s`, `5m`, `1h30m`, `1500ms`, `2d`) in whole milliseconds. The syntax and
 * units are the server's (src/lib/duration.ts, seed 000 "Configuration"), imported rather than
 * restated: that file is pure and dependency-free, and scripts/pack.mjs compiles it into the CLI
 * package with the rest of the CLI's imports (as `dist/src/lib/duration.js`), so the installed CLI
 * parses exactly what the server does. What the CLI adds: a bare number is milliseconds, the result
 * is rounded, and a bad value is commander's InvalidArgumentError.
 */
import { InvalidArgumentError } from 'commander';
import { parseDuration } from '../src/lib/duration.js';

/** Parses `text` into whole milliseconds; a commander argument parser (throws InvalidArgumentError). */
export function durationMs(text: string): number {
  const s = text.trim();
  if (/^\d+$/.test(s)) return Number(s);
  try {
    return Math.round(parseDuration(s));
  } catch {
    throw new InvalidArgumentError(`"${text}" is not a duration (use e.g. 30s, 5m, 1h30m, 1500ms)`);
  }
}
