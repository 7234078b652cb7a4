/**
 * The work gauges of `/metrics` (src/health/work.ts): what an operator alerts on, counted right
 * after real claims, blocks, dependencies, an expired lease, a silent session and a failed graph
 * subtask; and cheap: the statements behind them read as many buffers at 20,000 items as at 10.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LAST_SEEN_FLUSH_MS } from '../../src/sessions/sessions.liveness.js';
import { readWorkFacts } from '../../src/health/work.js';
import { addItem, Client, startTestApp, type TestApp } from '../helpers/app.js';
import { graphDoc, registerAgents, setSubtaskState } from '../graphs/graphs.helpers.js';
import { parsePrometheus } from '../helpers/prometheus.js';
import { buffersOf, explaining } from '../helpers/plans.js';

const LEASE_MS = 400;
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ todo: { claimLeaseMs: LEASE_MS } });
});
afterAll(async () => t?.close());

const scrape = async () => parsePrometheus(await (await fetch(`${t.base}/metrics`)).text());

describe('work gauges', () => {
  it('count items by kind and status, expired claims, silent holders, the stalest claim and failed subtasks', async () => {
    const team = (await t.admin.get('/v1/me')).body.teamId as string;
    const s = await t.session({ name: 'worker' });
    const ok = (r: { status: number; body: unknown }) => expect(r.status, JSON.stringify(r.body)).toBe(200);
    const first = await addItem(s.client, 'first');
    await addItem(s.client, 'waits', { dependsOn: [first.id] });
    const blocked = await addItem(s.client, 'blocked');
    const done = await addItem(s.client, 'done');
    await addItem(s.client, 'ready');
    ok(await s.client.post(`/v1/todos/${blocked.id}/claim`));
    ok(await s.client.post(`/v1/todos/${blocked.id}/block`, { note: 'needs a decision' }));
    ok(await s.client.post(`/v1/todos/${done.id}/claim`));
    ok(await s.client.post(`/v1/todos/${done.id}/done`));
    ok(await s.client.post(`/v1/todos/${first.id}/claim`));

    // A session with a heartbeat interval, silent for an hour, holding a claim it keeps alive.
    const silent = await t.admin.post('/v1/sessions', { name: 'silent', heartbeatIntervalMs: 5000 });
    expect(silent.status).toBe(201);
    const quiet = new Client(t.base, silent.body.token);
    const held = await addItem(quiet, 'held by a silent session');
    ok(await quiet.post(`/v1/todos/${held.id}/claim`));
    // Let `first`'s lease expire while `held` stays fresh; then the silence, as an hour would leave it.
    for (let i = 0; i < 3; i++) {
      await new Promise((r) => setTimeout(r, LEASE_MS / 2));
      ok(await quiet.post(`/v1/todos/${held.id}/heartbeat`));
    }
    // After the replica's last-seen flush of its calls (every LAST_SEEN_FLUSH_MS), which would undo the silence.
    await new Promise((r) => setTimeout(r, LAST_SEEN_FLUSH_MS + 200));
    await t.sql`update sessions set last_seen_at = now() - interval '1 hour' where id = ${silent.body.session.id}`;
    // Its claim stays fresh meanwhile (time is compressed here: the lease is short, the silence long).
    await t.sql`update todos set progress_at = now() where id = ${held.id}`;

    await registerAgents(t.admin, ['codex']);
    expect((await t.admin.post('/v1/graphs', graphDoc('task-gauged', [{ id: 'a' }, { id: 'b' }]))).status).toBe(201);
    await setSubtaskState(t.sql, 'task-gauged', 'a', 'FAILED', 'tests fail');

    const m = await scrape();
    const items = (kind: string, status: string) => m.value('coord_work_items', { team, kind, status });
    expect({
      ready: items('session', 'ready'),
      waiting: items('session', 'waiting'),
      in_progress: items('session', 'in_progress'),
      blocked: items('session', 'blocked'),
      done: items('session', 'done'),
    }).toEqual({ ready: 1, waiting: 1, in_progress: 2, blocked: 1, done: 1 });
    expect(items('graph', 'ready')).toBe(1);
    expect(m.value('coord_work_claims_expired', { team, kind: 'session' })).toBe(1);
    expect(m.value('coord_work_silent_sessions_holding', { team })).toBe(1);
    expect(m.value('coord_work_graph_subtasks_ended', { team, outcome: 'FAILED' })).toBe(1);
    expect(m.value('coord_work_stalest_claim_seconds', { team })).toBeGreaterThanOrEqual(LEASE_MS / 1000);
    // The oldest claim began before the stalest progress: heartbeats move progress, not the claim's start.
    expect(m.value('coord_work_oldest_claim_seconds', { team })).toBeGreaterThanOrEqual(m.value('coord_work_stalest_claim_seconds', { team })!);
    expect(m.types.get('coord_work_items')).toBe('gauge');

    // The expired claim is taken over by the next `next`: no longer expired, held by the taker.
    const taker = await t.session({ name: 'taker', parentId: s.id, by: s.client });
    const next = await taker.client.post('/v1/todos/next', {});
    ok(next);
    // (`held` stays fresh: on a loaded machine its short lease could run out by now.)
    await t.sql`update todos set progress_at = now() where id = ${held.id}`;
    const after = await scrape();
    expect(after.all('coord_work_claims_expired').filter((x) => x.labels.team === team && x.value > 0)).toEqual([]);
  });

  it('read as many buffers at 20,000 items as at 10: no statement reads a scope’s items', async () => {
    // One connection that reports the plan of every statement it runs, with the buffers it touched.
    const probe = await explaining(t.dbUrl);
    try {
      const buffers = async () => {
        await readWorkFacts(probe.sql, LEASE_MS);
        probe.take();
        await readWorkFacts(probe.sql, LEASE_MS);
        const plans = probe.take();
        expect(plans).toHaveLength(5);
        return plans.reduce((sum, p) => sum + buffersOf(p.plan), 0);
      };
      const [teamRow] = await t.sql<{ id: string }[]>`select id from teams order by created_at limit 1`;
      const seed = (scope: string, n: number) =>
        t.sql`insert into todos (id, team_id, scope, title, created_by, position)
              select 'td-' || md5(${scope} || g), ${teamRow.id}, ${scope}, 'item ' || g, 'bench', g from generate_series(1, ${n}::int) g`;
      await seed('session:gauge-small', 10);
      await t.sql`analyze todos`;
      const small = await buffers();
      await seed('session:gauge-big', 20_000);
      await t.sql`analyze todos`;
      const big = await buffers();
      expect(big, `buffers: ${small} with 10 more items, ${big} with 20,000 more`).toBeLessThanOrEqual(small + 10);
    } finally {
      await probe.end();
    }
  });
});
