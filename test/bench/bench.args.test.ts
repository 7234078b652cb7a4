/**
 * `npm run bench` refuses bad options before it starts anything (bench/run.ts): a time cap that
 * is not a number of seconds ≥ 1 once ran every claim run for 0 s and reported one-job figures.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, runProcess } from '../helpers/process.js';

const bench = (...args: string[]) => runProcess(process.execPath, ['--import', 'tsx', path.join(REPO_ROOT, 'bench/run.ts'), ...args], { cwd: REPO_ROOT });

describe('bench options', () => {
  it('should refuse a time cap that is not a number of seconds ≥ 1', async () => {
    for (const cap of ['abc', '0']) {
      const r = await bench('--quick', '--only', 'claim', '--cap', cap);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain(`--cap takes a number of seconds ≥ 1 (got "${cap}")`);
      expect(r.stderr).not.toContain('starting embedded Postgres');
    }
  });

  it('should refuse an unknown section, naming the known ones', async () => {
    const r = await bench('--only', 'bogus');
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('unknown section "bogus" (use memory, claim, breakdown, replicas, events, ready, bulk, auth, streams, scale, graphs)');
  });
});
