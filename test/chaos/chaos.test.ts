/**
 * The short chaos run: `npm run chaos` with three replicas for 20 s, a replica killed
 * with SIGKILL every 7 s and one Postgres crash-restart, 8 agents. The harness checks double
 * claims, lost acknowledged writes, event gaps and duplicates per follower and 5xx outside the
 * outage window against the database, and exits non-zero on any violation (chaos/run.ts).
 */
import { describe, expect, it } from 'vitest';
import { debianPgBin } from '../../chaos/pg-pair.js';
import { REPO_ROOT, runProcess } from '../helpers/process.js';

/** Runs chaos/run.ts with `flags`, expects it clean, and returns its JSON report. */
async function cleanChaosRun(flags: string[]): Promise<any> {
  const r = await runProcess(process.execPath, ['--import', 'tsx', 'chaos/run.ts', ...flags], { cwd: REPO_ROOT });
  const summary = r.stdout
    .split('\n')
    .filter((l) => l.startsWith('chaos:') || l.startsWith('  - '))
    .join('\n');
  expect({ code: r.code, summary }, r.stderr.slice(-3000)).toEqual({ code: 0, summary: expect.stringMatching(/^chaos: clean/) });
  return JSON.parse(r.stdout.slice(r.stdout.indexOf('{'), r.stdout.lastIndexOf('}') + 1));
}

describe('npm run chaos, short', () => {
  it('should come out clean: 0 double claims, 0 lost acknowledged writes, 0 event gaps, 0 5xx outside the outage', async () => {
    const report = await cleanChaosRun(['--duration', '20', '--agents', '8', '--kill-every', '7', '--grace', '10']);
    expect(report.claims).toBeGreaterThan(0);
    expect(report.postgresRestarts).toBe(1);
    expect(report.replicaStarts.reduce((a: number, b: number) => a + b, 0)).toBeGreaterThan(3);
  }, 240_000);
});

/**
 * The failover run: `npm run chaos -- --failover`, three replicas on a primary with a synchronous
 * standby (Debian's PostgreSQL; .ci/run installs it), their DATABASE_URL naming both hosts with
 * target_session_attrs=primary. A quarter of the way in every replica connection to the live
 * primary is ended (a blip: 503 only for the requests on them, and the connections must come back
 * to the primary, not the standby); half-way the primary's processes get SIGKILL and the standby
 * is promoted 1 s later. The same checks hold across both, and service comes back without a restart.
 */
describe('npm run chaos -- --failover, short', () => {
  it('should come out clean across a failover to the synchronous standby: 0 double claims, 0 lost acknowledged writes, 0 event gaps, only 503 during the switch', async () => {
    expect(debianPgBin(), 'Debian’s PostgreSQL (apt-get install postgresql) is needed for the standby').toBeDefined();
    const report = await cleanChaosRun(['--failover', '--duration', '20', '--agents', '8', '--kill-every', '7', '--grace', '10']);
    expect(report.blip.connectionsEnded).toBeGreaterThan(0);
    expect(report.failover).toMatchObject({ fiveXxOtherThan503: 0 });
    expect(report.failover.writesAcknowledgedBefore).toBeGreaterThan(0);
    // Writes came back on the promoted standby, through the same replicas (none restarted for it).
    expect(report.failover.writesAcknowledgedAfter).toBeGreaterThan(0);
    expect(report.lostAcknowledgedWrites).toBe(0);
  }, 240_000);
});
