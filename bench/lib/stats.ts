/**
 * Latency samples and their summary. Samples are milliseconds measured with `performance.now()`
 * in the client process (monotonic, sub-millisecond resolution).
 */

export interface Summary {
  /** Number of samples. */
  n: number;
  /** Median, ms. */
  p50: number;
  /** 99th percentile (nearest rank), ms. */
  p99: number;
  /** Largest sample, ms. */
  max: number;
  /** Arithmetic mean, ms. */
  mean: number;
}

/** Nearest-rank percentile of already sorted samples; `q` in [0, 1]. NaN for no samples. */
export function percentile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank];
}

/** Summarises samples (ms), rounded to 0.01 ms. */
export function summarize(samples: number[]): Summary {
  const s = Float64Array.from(samples).sort();
  const r = (x: number) => (Number.isFinite(x) ? Math.round(x * 100) / 100 : Number.NaN);
  let sum = 0;
  for (const x of s) sum += x;
  return {
    n: s.length,
    p50: r(percentile(s, 0.5)),
    p99: r(percentile(s, 0.99)),
    max: r(s.length ? s[s.length - 1] : Number.NaN),
    mean: r(s.length ? sum / s.length : Number.NaN),
  };
}

/** Times one async call; pushes its duration (ms) to `into` and returns its result. */
export async function timed<T>(into: number[], fn: () => Promise<T>): Promise<T> {
  const t0 = performance.now();
  const v = await fn();
  into.push(performance.now() - t0);
  return v;
}

/** Rounds to `digits` decimals (for ratios and rates in the result file). */
export function round(x: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
