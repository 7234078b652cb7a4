/**
 * `/metrics`: Prometheus text from prom-client, one registry per app, with the series
 * an operator needs after real claims, `next` calls, an SSE stream and a sweep.
 */
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSweep } from '../../src/sweeps/sweeps.js';
import { addItem, startTestApp, type TestApp } from '../helpers/app.js';
import { parsePrometheus } from '../helpers/prometheus.js';
import { openSse } from '../helpers/sse.js';

let t: TestApp;
let other: TestApp;
beforeAll(async () => {
  t = await startTestApp();
  other = await startTestApp();
});
afterAll(async () => {
  await t?.close();
  await other?.close();
});

async function scrape(app: TestApp) {
  const res = await fetch(`${app.base}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
  return parsePrometheus(await res.text());
}

describe('metrics exposition', () => {
  it('should count claims, next outcomes, HTTP requests by route pattern, SSE streams and deliveries, and sweeps', async () => {
    const root = await t.session();
    const a = await t.session({ parentId: root.id, by: root.client });
    const b = await t.session({ parentId: root.id, by: root.client });
    const stream = await openSse(`${t.base}/v1/events?topic=todo:session:${root.id}`, root.token);
    try {
      const first = await addItem(root.client, 'first');
      await addItem(root.client, 'second');
      expect((await a.client.post(`/v1/todos/${first.id}/claim`)).status).toBe(200);
      expect((await b.client.post(`/v1/todos/${first.id}/claim`)).body.code).toBe('already_claimed');
      expect((await b.client.post('/v1/todos/next', {})).body.claimed).toBe(true);
      expect((await b.client.post('/v1/todos/next', {})).body).toEqual({ claimed: false });
      await stream.until((ev) => ev.filter((e) => e.event === 'claimed').length === 2);
      await runSweep(t.sql, t.config);

      const m = await scrape(t);
      expect(m.value('coord_claim_requests_total', { operation: 'claim', outcome: 'claimed' })).toBe(1);
      expect(m.value('coord_claim_requests_total', { operation: 'claim', outcome: 'already_claimed' })).toBe(1);
      expect(m.value('coord_claim_requests_total', { operation: 'next', outcome: 'claimed' })).toBe(1);
      expect(m.value('coord_claim_requests_total', { operation: 'next', outcome: 'empty' })).toBe(1);

      // Route patterns, never raw URLs (no item id in any label).
      expect(m.value('coord_http_requests_total', { route: '/v1/todos/:id/claim', method: 'POST', status: '409' })).toBe(1);
      expect(m.value('coord_http_requests_total', { route: '/v1/todos/next', method: 'POST', status: '200' })).toBe(2);
      expect(m.samples.filter((s) => s.labels.route?.includes(first.id))).toEqual([]);
      expect(m.value('coord_http_request_duration_seconds_count', { route: '/v1/todos/next', method: 'POST', status: '200' })).toBe(2);
      expect(m.value('coord_http_request_duration_seconds_bucket', { route: '/v1/todos/next', method: 'POST', status: '200', le: '+Inf' })).toBe(2);
      // The open stream is not in the latency histogram: its duration is the stream's life.
      expect(m.all('coord_http_request_duration_seconds_count', { route: '/v1/events' })).toEqual([]);

      expect(m.value('coord_sse_open_streams')).toBe(1);
      expect(m.value('coord_sse_topics')).toBe(1);
      expect(m.value('coord_sse_streams_opened_total')).toBe(1);
      expect(m.value('coord_sse_events_delivered_total')).toBeGreaterThanOrEqual(4); // 2 added, 2 claimed
      expect(m.value('coord_event_listen_connects_total')).toBeGreaterThanOrEqual(1);
      const [{ n }] = await t.sql<{ n: number }[]>`select max(id)::float8 as n from events`;
      expect(m.value('coord_events_written_total')).toBeGreaterThanOrEqual(Number(n));

      for (const sweep of ['lease', 'retention', 'event-retention']) {
        expect(m.value('coord_sweep_runs_total', { sweep, result: 'success' })).toBe(1);
        expect(m.value('coord_sweep_duration_seconds_count', { sweep })).toBe(1);
        expect(m.value('coord_sweep_last_success_timestamp_seconds', { sweep })).toBeGreaterThan(1.7e9);
        expect(m.value('coord_sweep_stale', { sweep })).toBe(0);
      }
      expect(m.value('coord_sweep_changes_total', { sweep: 'lease' })).toBe(0);
      expect(m.value('coord_sweep_interval_seconds')).toBe(60);

      expect(m.value('coord_db_pool_max')).toBe(20);
      expect(m.value('coord_db_transaction_start_seconds_count')).toBeGreaterThan(0);
      expect(m.value('coord_db_connections', { state: 'active' })).toBeGreaterThanOrEqual(1); // the scrape's own query
      expect(m.value('process_resident_memory_bytes')).toBeGreaterThan(0);
      expect(m.types.get('nodejs_eventloop_lag_seconds')).toBe('gauge');
    } finally {
      stream.close();
    }
  });

  it('should count the next of a done that asked for one as a next, claimed or empty', async () => {
    const s = await t.session();
    const a = await addItem(s.client, 'first');
    await addItem(s.client, 'second');
    const before = await scrape(t);
    const n = (m: Awaited<ReturnType<typeof scrape>>, outcome: string) => m.value('coord_claim_requests_total', { operation: 'next', outcome }) ?? 0;
    expect((await s.client.post(`/v1/todos/${a.id}/claim`)).status).toBe(200);
    const done = await s.client.post(`/v1/todos/${a.id}/done`, { next: {} });
    expect(done.body.next.claimed).toBe(true);
    const last = await s.client.post(`/v1/todos/${done.body.next.item.id}/done`, { next: {} });
    expect(last.body.next).toEqual({ claimed: false });
    expect((await s.client.post(`/v1/todos/${a.id}/done`, { next: {} })).status).toBe(409);
    const after = await scrape(t);
    expect(n(after, 'claimed') - n(before, 'claimed')).toBe(1);
    expect(n(after, 'empty') - n(before, 'empty')).toBe(1);
  });

  it('should follow Prometheus naming: coord_ prefix, counters end in _total, histograms in _seconds', async () => {
    const m = await scrape(t);
    const coord = [...m.types].filter(([name]) => name.startsWith('coord_'));
    expect(coord.length).toBeGreaterThan(20);
    for (const [name, type] of coord) {
      if (type === 'counter') expect(name).toMatch(/_total$/);
      if (type === 'histogram') expect(name).toMatch(/_seconds$/);
    }
    // The names kept from the hand-written exposition.
    for (const name of [
      'coord_sse_open_streams',
      'coord_sse_topics',
      'coord_event_listen_connects_total',
      'coord_group_commit_next_batches_total',
      'coord_group_commit_done_requests_total',
    ]) {
      expect(m.types.has(name), name).toBe(true);
    }
  });

  it('should pass `promtool check metrics` for Coord’s own series', async () => {
    // promtool (Debian's prometheus package; .ci/run installs it when absent) reads the scrape on stdin
    // and prints one finding per line, `name: problem`. prom-client's process_* and nodejs_* series
    // are not ours; none of coord_* may have a finding.
    const text = await (await fetch(`${t.base}/metrics`)).text();
    expect(text).toContain('coord_claim_requests_total');
    const promtool = process.env.COORD_PROMTOOL ?? 'promtool';
    const out = await new Promise<{ code: number | null; output: string }>((resolve, reject) => {
      const child = spawn(promtool, ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.on('data', (d) => (output += d));
      child.stderr.on('data', (d) => (output += d));
      child.on('error', (err) => reject(new Error(`${promtool} did not start (${err.message}): install Debian's prometheus package, as .ci/run does`)));
      child.on('close', (code) => resolve({ code, output }));
      child.stdin.end(text);
    });
    const ours = out.output.split('\n').filter((line) => line.startsWith('coord_'));
    expect(ours).toEqual([]);
    // Anything else it found is prom-client's own default series, named in the note.
    for (const line of out.output.split('\n').filter((l) => l.trim() && !l.startsWith('coord_'))) expect(line).toMatch(/^(process_|nodejs_)/);
  });

  it('should keep each app’s counters in its own registry when one process builds several apps', async () => {
    const mine = await scrape(t);
    const theirs = await scrape(other);
    // One claim in the first test, one in the done-with-next test.
    expect(mine.value('coord_claim_requests_total', { operation: 'claim', outcome: 'claimed' })).toBe(2);
    // The other app claimed nothing: its claimed outcomes exist, at 0 (so a rate rule sees them).
    expect(theirs.all('coord_claim_requests_total').map((x) => x.value)).toEqual([0, 0]);
    expect(theirs.all('coord_sweep_runs_total')).toEqual([]);
    // Process metrics describe the one process: both report them.
    expect(theirs.value('process_resident_memory_bytes')).toBeGreaterThan(0);
  });

  it('should still answer with this replica’s series when the database cannot be read, leaving out the fleet’s', async () => {
    const root = await other.session();
    await other.sql.end({ timeout: 1 });
    const m = await scrape(other);
    expect(m.value('coord_http_requests_total', { route: '/v1/sessions', method: 'POST', status: '201' })).toBe(1);
    expect(m.all('coord_sweep_last_success_timestamp_seconds')).toEqual([]);
    expect(m.all('coord_sweep_stale')).toEqual([]);
    expect(root.id).toMatch(/^s-/);
  });
});
