/** Plain-text tables for the benchmark's stdout. */

/** Renders rows as a left/right-aligned text table (numbers right-aligned). */
export function table(headers: string[], rows: (string | number)[][]): string {
  const cells = [headers, ...rows.map((r) => r.map((c) => (typeof c === 'number' ? fmt(c) : c)))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => String(r[i] ?? '').length)));
  const numeric = headers.map((_, i) => rows.every((r) => typeof r[i] === 'number' || r[i] === '–' || /^[\d.,×x%–-]+$/.test(String(r[i]))));
  const line = (r: (string | number)[]) =>
    r
      .map((c, i) => (numeric[i] ? String(c).padStart(widths[i]) : String(c).padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(cells[0]), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

/** Numbers for humans: thousands separators, at most one decimal above 100, two below. */
export function fmt(x: number): string {
  if (!Number.isFinite(x)) return '–';
  const digits = Math.abs(x) >= 100 ? 0 : Math.abs(x) >= 10 ? 1 : 2;
  return x.toLocaleString('en-US', { minimumFractionDigits: 0, maximumFractionDigits: digits });
}

/** `a / b` as `0.53×`, or `–`. */
export function ratio(a: number | undefined, b: number | undefined): string {
  if (!a || !b) return '–';
  return `${(a / b).toFixed(2)}×`;
}

/** Bytes as MiB with one decimal. */
export function mib(bytes: number): number {
  return Math.round((bytes / 2 ** 20) * 10) / 10;
}
