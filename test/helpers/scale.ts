/**
 * The stress tier's scale knob: `COORD_TEST_SCALE` is `reduced` (the default, what
 * `npm test` runs), `full` (what `npm run test:stress` and CI's stress run use) or a factor
 * between 0 and 1. Race rounds, fuzz runs and property-test runs are written at full strength and
 * pass through `scaled`, so nothing is deleted: the reduced run is the same test with fewer
 * repetitions, never fewer than `min`.
 */
const REDUCED = 0.2;

function factor(): number {
  const v = (process.env.COORD_TEST_SCALE ?? 'reduced').trim();
  if (v === 'reduced' || v === '') return REDUCED;
  if (v === 'full') return 1;
  const n = Number(v);
  if (Number.isFinite(n) && n > 0 && n <= 1) return n;
  throw new Error(`COORD_TEST_SCALE must be "reduced", "full" or a number in (0, 1]; got "${v}"`);
}

export const TEST_SCALE = factor();

/** `full` repetitions at full strength, scaled down in a reduced run but never below `min` (default 1). */
export function scaled(full: number, min = 1): number {
  return Math.max(min, Math.round(full * TEST_SCALE));
}
