/**
 * Benchmark goal 2, "Streams": 10,000 open SSE streams on one replica with server RSS ≤ 400 MB,
 * idle CPU under 2 % of a core, and commit-to-delivery p99 ≤ 50 ms to 1,000 subscribers of one
 * topic while the other 9,000 streams stay open.
 *
 * Against a Coord server of its own (bench/run.ts starts it with COORD_MAX_STREAMS and
 * COORD_MAX_STREAMS_PER_TEAM = streams and
 * the default heartbeat, 15 s), in one pass:
 *
 * 1. Baseline: the server's RSS (/proc) and V8 heap (`/metrics`), and its CPU over
 *    `baselineSeconds`, with no stream open.
 * 2. Opens `streams` streams from this process, 50 at a time (bench/lib/sse.ts: one socket each,
 *    so this process and the server each need about `streams` file descriptors; checked first).
 *    `latencySubscribers` follow the latency topic, the rest are spread round-robin over
 *    `otherTopics` topics; every topic is the scope of a root session created for the run and is
 *    read with that session's token. The server's own count (`coord_sse_open_streams`) must agree.
 * 3. (a) Memory 3 s after the last stream opened (and again after (b) and (c); the goal's figure is
 *    the largest RSS of the three); per stream = growth over the baseline at the first sample.
 * 4. (b) Idle: `idleSeconds` (one heartbeat interval, so every stream's heartbeat falls in the
 *    window once) with no events and no requests: the server's CPU time as % of one core, and the
 *    Postgres transactions committed on its database per second (heartbeat re-checks, topic polls).
 * 5. (c) Latency: `latencyEvents` single-event transactions on the latency topic, `intervalMs`
 *    apart, written and timed as in the events section (bench/events.ts: the acknowledged commit
 *    and ring to the parsed frame, one clock), over every (event, subscriber) pair. Every
 *    subscriber must get every event once, in order; the other streams must get none of them, and
 *    every stream must still be open afterwards.
 * 6. Closes every stream and waits (≤ 15 s) for the server to count them closed.
 *
 * On a shared 2-core machine the clients, the server and Postgres share the cores: read the load
 * average next to the figures.
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';
import type { Sql } from '../src/db/client.js';
import { Subscribers, write } from './events.js';
import { startCpu } from './lib/cpu.js';
import { fmt, mib } from './lib/format.js';
import { call, openPool } from './lib/http.js';
import { openMany, openSse, type SseStream } from './lib/sse.js';
import { round, summarize, type Summary } from './lib/stats.js';

export interface StreamsOptions {
  /** SSE streams open at once, latency subscribers included (goal: 10,000). */
  streams: number;
  /** Of them, the streams on the latency topic (goal: 1,000). */
  latencySubscribers: number;
  /** Topics the other streams are spread over (the server polls each topic with streams once a second). */
  otherTopics: number;
  /** The server's idle CPU with no stream open is measured over this many seconds. */
  baselineSeconds: number;
  /** The idle window with every stream open, s (the heartbeat interval, 15 s, or a multiple). */
  idleSeconds: number;
  /** Events written on the latency topic, one transaction each. */
  latencyEvents: number;
  /** Pause between two latency events, ms. */
  intervalMs: number;
}

/** Goal 2's figures (≈ 1 min on 2 cores). */
export const STREAMS_FULL: StreamsOptions = {
  streams: 10_000,
  latencySubscribers: 1000,
  otherTopics: 90,
  baselineSeconds: 5,
  idleSeconds: 15,
  latencyEvents: 150,
  intervalMs: 20,
};
/** `--quick`: a tenth of the streams and subscribers (≈ 30 s). */
export const STREAMS_QUICK: StreamsOptions = {
  streams: 1000,
  latencySubscribers: 100,
  otherTopics: 9,
  baselineSeconds: 5,
  idleSeconds: 15,
  latencyEvents: 60,
  intervalMs: 20,
};

/** Goal 2's bounds. */
export const STREAMS_GOALS = {
  /** Server RSS with the streams open, bytes (400 MB). */
  rssBytes: 400e6,
  /** Idle server CPU, % of one core (strictly under). */
  idleCpuPercent: 2,
  /** Commit-to-delivery p99 to the latency topic's subscribers, ms. */
  p99Ms: 50,
} as const;

/** The server's heartbeat interval (COORD_SSE_HEARTBEAT's default; bench/lib/server.ts passes no COORD_* of the caller's). */
const HEARTBEAT_MS = 15_000;
const OPEN_PARALLEL = 50;
const SETTLE_MS = 3000;
/** Opening every stream must take less than this (a server that stops answering fails the section, not the watchdog). */
const OPEN_TIMEOUT_MS = 120_000;

/** Server memory: RSS from /proc, the V8 figures from the server's `/metrics` (prom-client's `nodejs_*`; NaN when absent). */
export interface StreamsMemory {
  rssBytes: number;
  heapUsedBytes: number;
  heapTotalBytes: number;
  /** C++ memory bound to JS objects (Buffers, …). */
  externalBytes: number;
}

export interface StreamsResult {
  streams: number;
  latencySubscribers: number;
  /** Topics in all: the latency topic and the others. */
  topics: number;
  /** Opening every stream: wall time from the first request to the last 200, ms, and streams/s. */
  open: { ms: number; perSecond: number };
  memory: {
    /** No stream open. */
    before: StreamsMemory;
    /** Every stream open: settled, after the idle window, after the latency run. */
    withStreams: StreamsMemory;
    afterIdle: StreamsMemory;
    afterLatency: StreamsMemory;
    /** The largest of the three RSS samples with every stream open, bytes: figure (a). */
    peakRssBytes: number;
    /** (withStreams − before) / streams, bytes. */
    perStream: { rssBytes: number; heapUsedBytes: number; externalBytes: number };
  };
  idle: {
    /** The window with every stream open, s (measured). */
    seconds: number;
    /** The server's CPU time (user + system) over the window, % of one core: figure (b). */
    serverCpuPercent: number;
    /** The same with no stream open (before opening them). */
    baselineCpuPercent: number;
    /** The streams' share, (serverCpuPercent − baselineCpuPercent), per stream heartbeat, µs (the topic polls included). */
    perHeartbeatUs: number;
    /** Transactions committed on the server's database per second during the window (Postgres reports them up to ~1 s late). */
    postgresTransactionsPerSecond: number;
    /** This process (the stream clients) and the rest of the machine (Postgres, other load), % of one core. */
    benchCpuPercent: number;
    restCpuPercent: number;
    /** 1-minute load average at the end of the window. */
    loadAverage: number;
  };
  latency: {
    subscribers: number;
    events: number;
    intervalMs: number;
    /** Commit-to-delivery over every (event, subscriber) pair, ms: figure (c), its p99. */
    latency: Summary;
    /** The run, first write to last delivery, s. */
    seconds: number;
    /** CPU over the run, % of one core: the server, this process (writer and subscribers), the rest. */
    serverCpuPercent: number;
    benchCpuPercent: number;
    restCpuPercent: number;
  };
  /** Wall time of the section (sessions, baseline, opening, idle, latency, closing), s. */
  durationSeconds: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `Max open files` of a process (Node raises its soft limit to the hard one at start); Infinity when unknown. */
function openFileLimit(pid: number | 'self'): number {
  try {
    return Number(/^Max open files\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'))?.[1] ?? Infinity);
  } catch {
    return Infinity;
  }
}

/** The server's RSS (read first: the scrape allocates), V8 heap and open-stream count. */
async function sample(server: { base: string; rssBytes(): number }): Promise<{ memory: StreamsMemory; openStreams: number }> {
  const rssBytes = server.rssBytes();
  const pool = openPool(server.base, 1);
  try {
    const res = await pool.request({ method: 'GET', path: '/metrics' });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`GET /metrics: HTTP ${res.statusCode}`);
    const get = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
    return {
      memory: {
        rssBytes,
        heapUsedBytes: get('nodejs_heap_size_used_bytes'),
        heapTotalBytes: get('nodejs_heap_size_total_bytes'),
        externalBytes: get('nodejs_external_memory_bytes'),
      },
      openStreams: get('coord_sse_open_streams'),
    };
  } finally {
    await pool.close();
  }
}

async function committedTransactions(sql: Sql): Promise<number> {
  const [r] = await sql<{ n: number }[]>`select xact_commit::float8 as n from pg_stat_database where datname = current_database()`;
  return r.n;
}

/** The server's, this process's and the rest's CPU over a window, % of one core (bench/lib/cpu.ts, as totals: one "cycle"). */
function cpuWindow(serverPid: number): () => { ms: number; server: number; bench: number; rest: number } {
  const t0 = performance.now();
  const stop = startCpu([serverPid]);
  return () => {
    const c = stop(1);
    const ms = performance.now() - t0;
    if (!c) throw new Error('streams: CPU time needs Linux /proc');
    const pct = (us: number) => round((us / (ms * 1000)) * 100, 2);
    return { ms, server: pct(c.serverUs), bench: pct(c.clientUs), rest: pct(c.postgresAndRestUs) };
  };
}

/**
 * Goal 2 against `server` (started with COORD_MAX_STREAMS ≥ `opts.streams`); `sql` is a pool on
 * its database (the latency writer). Throws when a limit is too low, when the server's stream
 * count disagrees, or when a subscriber misses, repeats or reorders an event.
 */
export async function streamsBench(
  server: { base: string; pid: number; adminToken: string; rssBytes(): number },
  sql: Sql,
  opts: StreamsOptions,
  progress: (m: string) => void = () => {},
): Promise<StreamsResult> {
  const t0 = performance.now();
  const { streams, latencySubscribers, otherTopics } = opts;
  const others = streams - latencySubscribers;
  if (latencySubscribers < 1 || otherTopics < 1 || others < otherTopics)
    throw new Error(`streams: need 1 ≤ latency subscribers and 1 ≤ other topics ≤ other streams (got ${streams} / ${latencySubscribers} / ${otherTopics})`);
  const need = streams + 500;
  for (const [who, pid] of [
    ['server', server.pid],
    ['bench', 'self'],
  ] as const) {
    const limit = openFileLimit(pid);
    if (limit < need)
      throw new Error(
        `streams: the ${who} process may open ${limit} files; ${fmt(streams)} streams need about ${fmt(need)}: raise the hard limit (ulimit -Hn, as root) before npm run bench`,
      );
  }

  // One root session per topic: the latency topic first.
  const admin = openPool(server.base, 8);
  const topics: { topic: string; token: string }[] = [];
  try {
    for (let i = 0; i <= otherTopics; i += 8) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(8, otherTopics + 1 - i) }, (_, j) =>
          call(admin, 'POST', '/v1/sessions', server.adminToken, { name: `streams-${i + j}` }),
        ),
      );
      for (const r of batch) topics.push({ topic: `todo:session:${r.body.session.id}`, token: r.body.token });
    }
  } finally {
    await admin.close();
  }
  const [latencyTopic, ...otherTopicList] = topics;

  const before = await sample(server);
  const baseline = before.openStreams;
  await sleep(500);
  const baseCpu = cpuWindow(server.pid);
  await sleep(opts.baselineSeconds * 1000);
  const base = baseCpu();

  const run = `streams-${streams}-${Date.now()}`;
  const commitAt: number[] = [];
  const early: { k: number; at: number }[] = [];
  const samples: number[] = [];
  const subs = new Subscribers(latencySubscribers, run, (k, at) => {
    const c = commitAt[k];
    if (c === undefined) early.push({ k, at });
    else samples.push(at - c);
  });
  const target = { base: server.base, token: latencyTopic.token, topic: latencyTopic.topic, sql, ringAfterCommit: true };
  let strays = 0;
  let rest: SseStream[] = [];
  try {
    progress(`streams: opening ${fmt(others)} streams on ${otherTopics} topics and ${fmt(latencySubscribers)} on the latency topic`);
    const tOpen = performance.now();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      (async () => {
        rest = await openMany(others, OPEN_PARALLEL, (i) => {
          const t = otherTopicList[i % otherTopics];
          return openSse(server.base, t.token, t.topic, (e) => void (e.event === 'bench' && strays++));
        });
        await subs.open(target);
      })(),
      new Promise(
        (_, reject) =>
          (timer = setTimeout(() => reject(new Error(`streams: opening ${fmt(streams)} streams took over ${OPEN_TIMEOUT_MS / 1000} s`)), OPEN_TIMEOUT_MS)),
      ),
    ]).finally(() => clearTimeout(timer));
    const openMs = performance.now() - tOpen;
    progress(`streams: ${fmt(streams)} open in ${fmt(openMs / 1000)} s; idle for ${opts.idleSeconds} s`);

    // (a) memory, settled, and the server's own count.
    await sleep(SETTLE_MS);
    const withStreams = await sample(server);
    if (withStreams.openStreams !== baseline + streams)
      throw new Error(`streams: the server reports ${withStreams.openStreams} open streams, expected ${baseline + streams}`);

    // (b) idle: no events, no requests (the scrape's own work over first).
    await sleep(500);
    const tx0 = await committedTransactions(sql);
    const idleCpu = cpuWindow(server.pid);
    await sleep(opts.idleSeconds * 1000);
    const idle = idleCpu();
    const tx1 = await committedTransactions(sql);
    const loadAverage = round(os.loadavg()[0], 2);
    const afterIdle = await sample(server);

    // (c) latency on one topic, every other stream open.
    progress(`streams: ${opts.latencyEvents} events to ${fmt(latencySubscribers)} subscribers, ${opts.intervalMs} ms apart`);
    const latCpu = cpuWindow(server.pid);
    for (let k = 0; k < opts.latencyEvents; k++) {
      await write(target, run, [k]);
      commitAt[k] = performance.now();
      await sleep(opts.intervalMs);
    }
    const complete = await subs.until(opts.latencyEvents * latencySubscribers, 15_000);
    const lat = latCpu();
    for (const e of early) samples.push(e.at - commitAt[e.k]);
    if (!complete) subs.problems.push(`only ${subs.received} of ${opts.latencyEvents * latencySubscribers} deliveries arrived`);
    if (strays) subs.problems.push(`${strays} latency events reached streams of other topics`);
    const afterLatency = await sample(server);
    if (afterLatency.openStreams !== baseline + streams)
      subs.problems.push(`the server reports ${afterLatency.openStreams} open streams after the latency run, expected ${baseline + streams}`);
    if (subs.problems.length) throw new Error(`STREAMS DELIVERY CHECK FAILED (${fmt(streams)} streams): ${subs.problems.slice(0, 3).join('; ')}`);

    const grew = (k: keyof StreamsMemory) => round((withStreams.memory[k] - before.memory[k]) / streams, 0) || 0; // no -0
    const heartbeats = (streams * idle.ms) / HEARTBEAT_MS;
    return {
      streams,
      latencySubscribers,
      topics: topics.length,
      open: { ms: round(openMs, 0), perSecond: round((streams / openMs) * 1000, 0) },
      memory: {
        before: before.memory,
        withStreams: withStreams.memory,
        afterIdle: afterIdle.memory,
        afterLatency: afterLatency.memory,
        peakRssBytes: Math.max(withStreams.memory.rssBytes, afterIdle.memory.rssBytes, afterLatency.memory.rssBytes),
        perStream: { rssBytes: grew('rssBytes'), heapUsedBytes: grew('heapUsedBytes'), externalBytes: grew('externalBytes') },
      },
      idle: {
        seconds: round(idle.ms / 1000, 1),
        serverCpuPercent: idle.server,
        baselineCpuPercent: base.server,
        perHeartbeatUs: round((((idle.server - base.server) / 100) * idle.ms * 1000) / heartbeats, 0),
        postgresTransactionsPerSecond: round((tx1 - tx0) / (idle.ms / 1000), 0),
        benchCpuPercent: idle.bench,
        restCpuPercent: idle.rest,
        loadAverage,
      },
      latency: {
        subscribers: latencySubscribers,
        events: opts.latencyEvents,
        intervalMs: opts.intervalMs,
        latency: summarize(samples),
        seconds: round(lat.ms / 1000, 1),
        serverCpuPercent: lat.server,
        benchCpuPercent: lat.bench,
        restCpuPercent: lat.rest,
      },
      durationSeconds: round((performance.now() - t0) / 1000, 0),
    };
  } finally {
    subs.close();
    for (const s of rest) s?.close();
    // Wait for the server to count them closed, so what runs next starts without them.
    for (const deadline = performance.now() + 15_000; performance.now() < deadline; await sleep(250)) {
      if (
        (await sample(server).then(
          (x) => x.openStreams,
          () => baseline,
        )) === baseline
      )
        break;
    }
  }
}

// ------------------------------------------------------------------------------------------
// Output (bench/run.ts prints these rows as a table and as markdown)

export const STREAMS_HEAD = ['figure', 'measured', 'goal', 'met'];

const mb = (b: number) => `${fmt(b / 1e6)} MB`;

/** Goal 2's three figures against their bounds, then the figures that say where the memory and CPU go. */
export function streamsRows(r: StreamsResult): string[][] {
  const g = STREAMS_GOALS;
  const m = r.memory;
  const lat = r.latency.latency;
  const met = (ok: boolean) => (ok ? 'yes' : 'no');
  return [
    [
      `server RSS, ${fmt(r.streams)} streams open (peak of 3 samples)`,
      `${mb(m.peakRssBytes)} (settled ${mb(m.withStreams.rssBytes)}, after idle ${mb(m.afterIdle.rssBytes)}, after latency ${mb(m.afterLatency.rssBytes)}; ${mb(m.before.rssBytes)} before)`,
      `≤ ${mb(g.rssBytes)}`,
      met(m.peakRssBytes <= g.rssBytes),
    ],
    [
      `idle server CPU over ${fmt(r.idle.seconds)} s`,
      `${fmt(r.idle.serverCpuPercent)} % of a core (${fmt(r.idle.baselineCpuPercent)} % with no stream)`,
      `< ${g.idleCpuPercent} %`,
      met(r.idle.serverCpuPercent < g.idleCpuPercent),
    ],
    [
      `commit-to-delivery, ${fmt(r.latency.subscribers)} subscribers of one topic`,
      `p99 ${fmt(lat.p99)} ms (p50 ${fmt(lat.p50)}, max ${fmt(lat.max)})`,
      `p99 ≤ ${g.p99Ms} ms`,
      met(lat.p99 <= g.p99Ms),
    ],
    [
      'CPU during the latency run',
      `${fmt(r.latency.seconds)} s: server ${fmt(r.latency.serverCpuPercent)} % (${fmt(((r.latency.serverCpuPercent / 100) * r.latency.seconds * 1000) / r.latency.events)} ms per event), bench (writer and subscribers) ${fmt(r.latency.benchCpuPercent)} %, rest of the machine ${fmt(r.latency.restCpuPercent)} % of a core`,
      '',
      '',
    ],
    ['opening the streams', `${fmt(r.open.ms / 1000)} s (${fmt(r.open.perSecond)}/s)`, '', ''],
    [
      'memory per stream',
      `${fmt(m.perStream.rssBytes / 1024)} KiB RSS, ${fmt(m.perStream.heapUsedBytes / 1024)} KiB V8 heap used, ${fmt(m.perStream.externalBytes / 1024)} KiB external; ` +
        `V8 heap used ${fmt(mib(m.before.heapUsedBytes))} → ${fmt(mib(m.withStreams.heapUsedBytes))} MiB (after idle ${fmt(mib(m.afterIdle.heapUsedBytes))}, after latency ${fmt(mib(m.afterLatency.heapUsedBytes))})`,
      '',
      '',
    ],
    [
      'idle cost of the streams',
      `${fmt(r.idle.perHeartbeatUs)} µs of server CPU per stream heartbeat (every ${HEARTBEAT_MS / 1000} s; ${r.topics} topic polls/s included); ` +
        `${fmt(r.idle.postgresTransactionsPerSecond)} Postgres transactions/s; meanwhile the bench clients ${fmt(r.idle.benchCpuPercent)} %, the rest of the machine (Postgres, other load) ${fmt(r.idle.restCpuPercent)} % of a core; load average ${r.idle.loadAverage}`,
      '',
      '',
    ],
  ];
}

export const streamsTitle = (r: StreamsResult) =>
  `Streams (goal 2): ${fmt(r.streams)} SSE streams on one server over ${r.topics} topics, ${fmt(r.latencySubscribers)} on one; ${r.latency.events} events ${r.latency.intervalMs} ms apart, every one delivered once, in order (${r.durationSeconds} s)`;
