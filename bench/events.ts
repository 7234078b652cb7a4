/**
 * Event delivery: commit-to-delivery latency on one topic with 1, 100 and 500 SSE
 * subscribers, and how many events per second one replica delivers to 100 subscribers.
 *
 * The writer is the bench process itself, appending events with Coord's own `appendEvents` in a
 * transaction of its own (so the measured path is exactly the outbox path: insert → NOTIFY at
 * commit → the server's LISTEN connection → one read per topic → fan-out to the streams). The
 * latency of an event is the time from the writer's COMMIT being acknowledged to a subscriber
 * having parsed the event from its socket; writer and subscribers share one clock
 * (`performance.now()` in this process). Every subscriber must receive every event once, in order.
 */
import type { Sql } from '../src/db/client.js';
import { withTx } from '../src/db/tx.js';
import { systemActor } from '../src/auth/actor.js';
import { appendEvents, streamKey } from '../src/events/events.repo.js';
import { DEFAULT_TEAM } from '../src/db/schema/teams.js';
import { openMany, openSse, type SseStream } from './lib/sse.js';
import { round, summarize, type Summary } from './lib/stats.js';

export interface LatencyRun {
  subscribers: number;
  events: number;
  /** Commit-to-delivery over every (event, subscriber) pair, ms. */
  latency: Summary;
}

export interface ThroughputRun {
  subscribers: number;
  events: number;
  /** Transactions the writer used (events per transaction = events / transactions). */
  transactions: number;
  /** Events of the topic delivered to every subscriber per second (first commit to last delivery). */
  eventsPerSecond: number;
  /** Frames written per second: eventsPerSecond × subscribers. */
  deliveriesPerSecond: number;
  /** How fast the writer committed, events/s (an upper bound the delivery cannot beat). */
  writerEventsPerSecond: number;
  /** False when the time cap ended the run before every subscriber had every event. */
  complete: boolean;
}

export interface EventsResult {
  latency: LatencyRun[];
  throughput: ThroughputRun[];
}

interface Target {
  base: string;
  token: string;
  topic: string;
  sql: Sql;
  /** Ring `coord_events` after each commit (the database has no NOTIFY trigger on `events`). */
  ringAfterCommit?: boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `count` subscribers of one topic that check every event of one run arrives once, in order (also bench/streams.ts). */
export class Subscribers {
  streams: SseStream[] = [];
  /** Next expected k per subscriber. */
  expected: number[];
  received = 0;
  problems: string[] = [];
  private waiters: { n: number; resolve: () => void }[] = [];

  constructor(
    readonly count: number,
    private readonly run: string,
    private readonly onDeliver: (k: number, at: number) => void,
  ) {
    this.expected = new Array(count).fill(0);
  }

  async open(t: Target): Promise<void> {
    this.streams = await openMany(this.count, 50, (i) =>
      openSse(t.base, t.token, t.topic, (e, at) => {
        if (e.event !== 'bench') return;
        const d = JSON.parse(e.data) as { run: string; k: number };
        if (d.run !== this.run) return;
        if (d.k !== this.expected[i]) this.problems.push(`subscriber ${i} got event ${d.k}, expected ${this.expected[i]}`);
        this.expected[i] = d.k + 1;
        this.received++;
        this.onDeliver(d.k, at);
        this.waiters = this.waiters.filter((w) => (this.received >= w.n ? (w.resolve(), false) : true));
      }),
    );
  }

  /** Resolves when `n` deliveries in total have arrived, or after `timeoutMs`; true when complete. */
  async until(n: number, timeoutMs: number): Promise<boolean> {
    if (this.received >= n) return true;
    let timer: NodeJS.Timeout | undefined;
    const done = await Promise.race([
      new Promise<boolean>((resolve) => this.waiters.push({ n, resolve: () => resolve(true) })),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs))),
    ]);
    clearTimeout(timer);
    return done;
  }

  close() {
    for (const s of this.streams) s.close();
  }
}

/** One transaction of events `ks` of `run` on the topic, then the ring (also bench/streams.ts). */
export async function write(t: Target, run: string, ks: number[]): Promise<void> {
  await withTx(t.sql, (tx) =>
    appendEvents(
      tx,
      DEFAULT_TEAM,
      ks.map((k) => ({ topic: t.topic, event: 'bench', subjectId: null, payload: { run, k } })),
      systemActor('bench'),
    ),
  );
  // A server built without the in-transaction NOTIFY trigger (bench proposal 2) expects every
  // writer to ring after commit, as its own replicas do; the bench writes like one of them.
  if (t.ringAfterCommit) await t.sql`select pg_notify('coord_events', ${streamKey(DEFAULT_TEAM, t.topic)})`;
}

/** Paced single-event transactions; latency over every delivery. */
async function latencyRun(t: Target, subscribers: number, events: number, intervalMs: number): Promise<LatencyRun> {
  const run = `lat-${subscribers}-${Date.now()}`;
  const commitAt: number[] = [];
  const early: { k: number; at: number }[] = [];
  const samples: number[] = [];
  const subs = new Subscribers(subscribers, run, (k, at) => {
    const c = commitAt[k];
    if (c === undefined) early.push({ k, at });
    else samples.push(at - c);
  });
  await subs.open(t);
  try {
    await sleep(300); // every stream has joined its topic's feed
    for (let k = 0; k < events; k++) {
      await write(t, run, [k]);
      commitAt[k] = performance.now();
      await sleep(intervalMs);
    }
    const complete = await subs.until(events * subscribers, 10_000);
    for (const e of early) samples.push(e.at - commitAt[e.k]);
    if (!complete) subs.problems.push(`only ${subs.received} of ${events * subscribers} deliveries arrived`);
    if (subs.problems.length) throw new Error(`EVENT DELIVERY CHECK FAILED (${subscribers} subscribers): ${subs.problems.slice(0, 3).join('; ')}`);
    return { subscribers, events, latency: summarize(samples) };
  } finally {
    subs.close();
  }
}

/** As fast as one writer can: `events` in transactions of `perTx`; delivered rate per topic. */
async function throughputRun(t: Target, subscribers: number, events: number, perTx: number, capMs: number): Promise<ThroughputRun> {
  const run = `tp-${subscribers}-${Date.now()}`;
  let lastAt = 0;
  const subs = new Subscribers(subscribers, run, (_k, at) => (lastAt = at));
  await subs.open(t);
  try {
    await sleep(300);
    const t0 = performance.now();
    const deadline = t0 + capMs;
    let written = 0;
    let transactions = 0;
    while (written < events && performance.now() < deadline) {
      const ks = Array.from({ length: Math.min(perTx, events - written) }, (_, i) => written + i);
      await write(t, run, ks);
      written += ks.length;
      transactions++;
    }
    const tWritten = performance.now();
    const complete = await subs.until(written * subscribers, Math.max(1000, deadline - performance.now()));
    if (subs.problems.length) throw new Error(`EVENT DELIVERY CHECK FAILED (throughput, ${subscribers} subscribers): ${subs.problems.slice(0, 3).join('; ')}`);
    const delivered = subs.received / subscribers;
    const seconds = ((complete ? lastAt : performance.now()) - t0) / 1000;
    return {
      subscribers,
      events: written,
      transactions,
      eventsPerSecond: round(delivered / seconds, 0),
      deliveriesPerSecond: round(subs.received / seconds, 0),
      writerEventsPerSecond: round(written / ((tWritten - t0) / 1000), 0),
      complete: complete && delivered === written,
    };
  } finally {
    subs.close();
  }
}

/**
 * Runs the latency series (1, 100, 500 subscribers; `events` paced single-event commits each) and
 * the throughput series (1 and 100 subscribers, 20,000 events in 100-event transactions).
 */
export async function eventsBench(
  t: Target,
  opts: { latencyEvents: number; intervalMs: number; throughputEvents: number; capMs: number },
): Promise<EventsResult> {
  const [{ n }] = await t.sql<
    { n: number }[]
  >`select count(*)::int as n from pg_trigger where tgrelid = 'events'::regclass and not tgisinternal and tgenabled <> 'D'`;
  t = { ...t, ringAfterCommit: n === 0 };
  const latency: LatencyRun[] = [];
  for (const s of [1, 100, 500]) latency.push(await latencyRun(t, s, opts.latencyEvents, opts.intervalMs));
  const throughput: ThroughputRun[] = [];
  for (const s of [1, 100]) throughput.push(await throughputRun(t, s, opts.throughputEvents, 100, opts.capMs));
  return { latency, throughput };
}
