/**
 * Sweep health (defect #9): every replica's `/readyz` and `/metrics` report the fleet's last
 * successful sweep per step, from Postgres, and `/readyz` turns `degraded` (still 200) when a step
 * has not succeeded within 3 × sweep_interval.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { judgeSweeps, type SweepRun } from '../../src/metrics/sweeps.health.js';
import { runSweep, SweepFailed, SWEEPS } from '../../src/sweeps/sweeps.js';
import { addItem, startTestApp, type TestApp } from '../helpers/app.js';
import { parsePrometheus } from '../helpers/prometheus.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

const readyz = async (app: TestApp) => {
  const res = await fetch(`${app.base}/readyz`);
  return { status: res.status, body: (await res.json()) as any };
};
const sweep = (body: any, name: string) => body.sweeps.find((s: any) => s.sweep === name);

describe('readiness and the sweeps', () => {
  it('should answer ready on a fresh database, every sweep not yet run and not stale (start-up grace)', async () => {
    const r = await readyz(t);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'ready', sweepIntervalMs: 60_000, staleAfterMs: 180_000, runsSweeps: false });
    expect(r.body.detail).toBeUndefined();
    expect(r.body.sweeps.map((s: any) => s.sweep)).toEqual([...SWEEPS]);
    for (const s of r.body.sweeps)
      expect(s).toEqual({ sweep: s.sweep, lastSuccessAt: null, durationMs: null, changed: null, lastFailureAt: null, stale: false });
    expect(await (await fetch(`${t.base}/healthz`)).json()).toEqual({ status: 'ok' });
  });

  it('should report each sweep’s last success, duration and what it changed after a sweep', async () => {
    const root = await t.session();
    const worker = await t.session({ parentId: root.id, by: root.client });
    const item = await addItem(root.client, 'stranded');
    expect((await worker.client.post(`/v1/todos/${item.id}/claim`)).status).toBe(200);
    // Its lease (claim_lease 30 m) expired an hour ago.
    await t.sql`update todos set progress_at = now() - interval '1 hour' where id = ${item.id}`;
    const before = new Date(Date.now() - 60_000);
    await runSweep(t.sql, t.config);
    const r = await readyz(t);
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('ready');
    const lease = sweep(r.body, 'lease');
    expect(lease).toMatchObject({ changed: 1, lastFailureAt: null, stale: false });
    expect(new Date(lease.lastSuccessAt).getTime()).toBeGreaterThan(before.getTime());
    expect(lease.durationMs).toBeGreaterThanOrEqual(0);
    expect(sweep(r.body, 'retention')).toMatchObject({ changed: 0, stale: false });
    for (const s of r.body.sweeps) expect(s.lastSuccessAt).not.toBeNull();
  });

  it('should report degraded (200, with a detail naming the sweep) when a last success is older than 3 intervals, on every replica', async () => {
    await runSweep(t.sql, t.config);
    await t.sql`update sweep_runs set last_success_at = now() - interval '181 seconds' where sweep = 'retention'`;
    const replica = await startTestApp({ dbUrl: t.dbUrl });
    try {
      for (const app of [t, replica]) {
        const r = await readyz(app);
        expect(r.status).toBe(200);
        expect(r.body.status).toBe('degraded');
        expect(r.body.detail).toContain('retention');
        expect(r.body.detail).toContain('COORD_SWEEPS=on');
        expect(sweep(r.body, 'retention').stale).toBe(true);
        expect(sweep(r.body, 'lease').stale).toBe(false);
        const m = parsePrometheus(await (await fetch(`${app.base}/metrics`)).text());
        expect(m.value('coord_sweep_stale', { sweep: 'retention' })).toBe(1);
        expect(m.value('coord_sweep_stale', { sweep: 'lease' })).toBe(0);
      }
      await runSweep(t.sql, t.config);
      expect((await readyz(replica)).body.status).toBe('ready');
    } finally {
      await replica.close();
    }
  });

  it('should record a failed step and still run the others, keeping the failed one’s last success', async () => {
    await runSweep(t.sql, t.config);
    const lastGood = sweep((await readyz(t)).body, 'lease').lastSuccessAt;
    // A replica whose lock_timeout is 100 ms, while another transaction holds todos exclusively.
    const replica = await startTestApp({ dbUrl: t.dbUrl, todo: { busyTimeoutMs: 100 } });
    try {
      const failure = await t.sql.begin(async (tx) => {
        await tx`lock table todos in access exclusive mode`;
        return runSweep(replica.sql, replica.config).then(
          () => undefined,
          (err: unknown) => err,
        );
      });
      expect(failure).toBeInstanceOf(SweepFailed);
      const steps = (failure as SweepFailed).steps;
      expect(steps.find((s) => s.sweep === 'lease')!.ok).toBe(false);
      expect(steps.find((s) => s.sweep === 'event-retention')!.ok).toBe(true);
      const r = await readyz(t);
      expect(sweep(r.body, 'lease').lastFailureAt).not.toBeNull();
      expect(sweep(r.body, 'lease').lastSuccessAt).toBe(lastGood);
      expect(new Date(sweep(r.body, 'event-retention').lastSuccessAt).getTime()).toBeGreaterThan(new Date(lastGood).getTime());
      const m = parsePrometheus(await (await fetch(`${replica.base}/metrics`)).text());
      expect(m.value('coord_sweep_runs_total', { sweep: 'lease', result: 'failure' })).toBe(1);
      expect(m.value('coord_sweep_runs_total', { sweep: 'event-retention', result: 'success' })).toBe(1);
      expect(m.value('coord_sweep_last_failure_timestamp_seconds', { sweep: 'lease' })).toBeGreaterThan(1.7e9);
    } finally {
      await replica.close();
    }
  });
});

describe('judging sweep runs', () => {
  const run = (ageMs: number | null): SweepRun => ({
    sweep: 'lease',
    lastSuccessAt: ageMs === null ? null : new Date(),
    durationMs: ageMs === null ? null : 3,
    changed: ageMs === null ? null : 0,
    lastFailureAt: null,
    ageMs,
  });
  it('should call a never-run sweep stale only once the replica is older than the bound', () => {
    expect(judgeSweeps([run(null)], { staleAfterMs: 3000, uptimeMs: 2999, runsSweeps: true }).degraded).toBe(false);
    const late = judgeSweeps([run(null)], { staleAfterMs: 3000, uptimeMs: 3001, runsSweeps: true });
    expect(late.degraded).toBe(true);
    expect(late.detail).toContain('(this replica: on)');
  });
  it('should call a success stale only past the bound, whatever the replica’s age', () => {
    expect(judgeSweeps([run(3000)], { staleAfterMs: 3000, uptimeMs: 0, runsSweeps: false }).sweeps[0].stale).toBe(false);
    expect(judgeSweeps([run(3001)], { staleAfterMs: 3000, uptimeMs: 0, runsSweeps: false }).sweeps[0].stale).toBe(true);
  });
});
