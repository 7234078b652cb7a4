/**
 * Duration arguments (`30s`, `5m`, `1h30m`, `1500ms`, `2d`) in milliseconds: the units and syntax of
 * the server's `[todo]` durations (src/lib/duration.ts, seed 000 "Configuration"), restated because
 * the CLI package ships without the server's sources. A bare number is milliseconds.
 */
import { InvalidArgumentError } from 'commander';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Parses `text` into whole milliseconds; a commander argument parser (throws InvalidArgumentError). */
export function durationMs(text: string): number {
  const s = text.trim();
  if (/^\d+$/.test(s)) return Number(s);
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/gy;
  let total = 0;
  let consumed = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(s)) !== null) {
    total += Number(m[1]) * UNIT_MS[m[2]];
    consumed = re.lastIndex;
  }
  if (consumed === 0 || consumed !== s.length) throw new InvalidArgumentError(`"${text}" is not a duration (use e.g. 30s, 5m, 1h30m, 1500ms)`);
  return Math.round(total);
}
