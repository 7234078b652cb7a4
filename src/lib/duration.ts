/**
 * Go-style duration strings, extended with a day unit as the todo seed's `[todo]` block uses them
 * (`30m`, `7d`, `7d12h`, `1.5h`, `250ms`, `0`). Source: seed 000 "Configuration", docs/seeds/todo-list.md §14.
 *
 * The one duration parser: the CLI's arguments (cli/duration.ts) use it too, and scripts/pack.mjs
 * ships this file inside the CLI package, so it must stay free of imports.
 */

const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/**
 * Parses a duration into milliseconds (may be fractional below 1 ms, e.g. `500us` → 0.5).
 * `"0"` is zero. Negative values, unknown units and empty strings throw an `Error` whose message
 * says what is wrong; callers add the configuration key.
 */
export function parseDuration(text: string): number {
  const s = text.trim();
  if (s === '0') return 0;
  if (s === '') throw new Error('empty duration');
  if (s.startsWith('-')) throw new Error(`negative duration "${text}"`);
  const re = /(\d+(?:\.\d+)?|\.\d+)(ns|us|µs|ms|s|m|h|d)/gy;
  let total = 0;
  let consumed = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(s)) !== null) {
    total += Number(m[1]) * UNIT_MS[m[2]];
    consumed = re.lastIndex;
  }
  if (consumed !== s.length || consumed === 0) {
    throw new Error(`invalid duration "${text}" (use e.g. 500ms, 30s, 30m, 12h, 7d, 7d12h)`);
  }
  return total;
}

/** Formats milliseconds as a compact duration (`90000` → `1m30s`), for logs and `/v1/admin/config`. */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0';
  const parts: string[] = [];
  let rest = ms;
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ] as const) {
    if (rest >= size) {
      const n = Math.floor(rest / size);
      parts.push(`${n}${unit}`);
      rest -= n * size;
    }
  }
  if (rest > 0) parts.push(`${rest}ms`);
  return parts.join('');
}
