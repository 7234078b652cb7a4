/**
 * `npm run bench`: Coord's performance in one run, as ratios against the physical limit and the
 * alternatives on the same machine (absolute times on shared machines drift; ratios much less).
 *
 *   npm run bench                 full run (10–15 min on 2 cores; 498 s on 2026-12-04): prints tables, writes
 *                                 bench/results/latest.json and bench/results/latest.md
 *   npm run bench -- --quick      a smaller matrix for development (writes bench/results/quick.*)
 *   npm run bench -- --profile    where the time goes: CPU profile of the server and
 *                                 pg_stat_statements during Coord's claim cycle (N=32, 20,000 items;
 *                                 --profile-n 1 profiles a lone agent instead)
 *   options: --cap <seconds>      time cap of one claim run (default 10; a capped run reports
 *                                 partial throughput and says so)
 *            --only <list>        comma-separated sections: claim,breakdown,replicas,ready,events,memory,bulk,auth,streams,scale,graphs
 *            --server-root <dir>  run the Coord server from another checkout (the migrations of
 *                                 this one are applied)
 *            --compare <dir>      also run a second Coord server from another checkout on the same
 *                                 database, as contender coord-http-compare interleaved with the
 *                                 others: a before/after table of a change under the same drift
 *
 * Everything runs on 127.0.0.1: an embedded Postgres in a temp folder (fsync=off,
 * synchronous_commit=off, full_page_writes=off, the same for every contender), Coord's real server
 * entry in a child process, and the clients in this process. Every process and folder it starts
 * is stopped and removed at the end, on failure, on Ctrl-C, and by a watchdog at twice the run's budget
 * (SECTION_BUDGET_S; a section that fails or is skipped is reported, the others still run).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { openDb } from '../src/db/client.js';
import { migrateDatabase } from '../src/db/migrate.js';
import { AUTH_FLOOD_HEAD, authFloodRows, authFloodRun, authFloodTitle, type AuthFloodResult } from './auth-flood.js';
import { bulkBench, type BulkResult } from './bulk.js';
import { bigScopeGoal, cpuGoal, flatBacklogGoal, graphGoal, scaleOutGoal, streamsGoal, type Goal } from './goals.js';
import { COMPARE, CONTENDERS, ClaimBench, DIAGNOSTICS, type ClaimRun, type Contender } from './claim.js';
import { eventsBench, type EventsResult } from './events.js';
import { graphsBench, type GraphsResult } from './graphs.js';
import { call, openPool } from './lib/http.js';
import { fmt, mib, ratio, table } from './lib/format.js';
import { describeMachine, type Machine } from './lib/machine.js';
import { startBenchPostgres, type BenchPostgres } from './lib/pg.js';
import { REPO_ROOT, startCoordServer, type CoordServer } from './lib/server.js';
import { round, type Summary } from './lib/stats.js';
import { rssWithStreams, sampleRss, type MemorySample } from './memory.js';
import { keepCpuProfile, summarizeCpuProfile, topStatements, type ProfileSummary, type StatementStat } from './profile.js';
import { readySetBench, type ReadySetResult } from './ready-set.js';
import { STREAMS_FULL, STREAMS_HEAD, STREAMS_QUICK, streamsBench, streamsRows, streamsTitle, type StreamsResult } from './streams.js';
import { scaleBench, type ScaleResult } from './scale.js';
import { newToken } from '../src/lib/ids.js';

const { values: opts } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
    'profile-n': { type: 'string' },
    cap: { type: 'string' },
    only: { type: 'string' },
    'server-root': { type: 'string' },
    compare: { type: 'string' },
  },
});
const serverRoot = opts['server-root'] ? path.resolve(opts['server-root']) : undefined;
const compareRoot = opts.compare ? path.resolve(opts.compare) : undefined;

const SECTIONS = ['memory', 'claim', 'breakdown', 'replicas', 'events', 'ready', 'bulk', 'auth', 'streams', 'scale', 'graphs'] as const;
type Section = (typeof SECTIONS)[number];
const only = new Set((opts.only ? opts.only.split(',') : SECTIONS).map((s) => s.trim()) as Section[]);
for (const s of only) if (!SECTIONS.includes(s)) throw new Error(`unknown section "${s}" (use ${SECTIONS.join(', ')})`);

const quick = opts.quick;
const capMs = Number(opts.cap ?? (quick ? 5 : 10)) * 1000;
if (!Number.isFinite(capMs) || capMs < 1000) throw new Error(`--cap takes a number of seconds ≥ 1 (got "${opts.cap}")`);
const BACKLOGS = quick ? [1000, 5000] : [1000, 20_000];
const AGENTS = quick ? [1, 32] : [1, 8, 32, 64];
const BREAKDOWN_N = 32;
/** Agents of the profiled run (`--profile-n`, default 32; 1 shows a lone agent's costs). */
const PROFILE_N = Number(opts['profile-n'] ?? 32);
/** Completed cycles in the scope before goal 6's second timing (ClaimBench.runChurned). */
const CHURN = quick ? 5000 : 20_000;
/** Items of each scale-out run (goal 5: 1, 2 and 3 replicas at N = BREAKDOWN_N). */
const REPLICA_BACKLOG = quick ? 5000 : 20_000;
/** Items of the bulk section (one request, and as many single adds). */
const BULK_ITEMS = quick ? 2000 : 10_000;
/** Goal 3: the big scope against the small one (the big one loaded with SQL). */
const SCALE = quick
  ? { smallItems: 1000, bigItems: 100_000, rounds: 4, nextPerRound: 25, pagePerRound: 10, readinessPerRound: 10, smallExports: 5, bigExports: 2 }
  : { smallItems: 1000, bigItems: 1_000_000, rounds: 6, nextPerRound: 50, pagePerRound: 20, readinessPerRound: 20, smallExports: 9, bigExports: 1 };
/** Goal 4: Task Graph execution call sizes. */
const GRAPHS = quick
  ? {
      wave: 8,
      paths: 1000,
      graphs: 4,
      planShapes: [
        [64, 16],
        [16, 64],
      ] as [number, number][],
      planCalls: 10,
      refusedShape: [256, 256] as [number, number],
    }
  : {
      wave: 32,
      paths: 10_000,
      graphs: 20,
      planShapes: [
        [256, 16],
        [16, 256],
      ] as [number, number][],
      planCalls: 20,
      refusedShape: [256, 256] as [number, number],
    };
const RESULTS_DIR = path.join(REPO_ROOT, 'bench', 'results');

// graphile-worker's best showing: do not even format its per-job success log line.
process.env.NO_LOG_SUCCESS = '1';

const progress = (m: string) => console.error(`bench: ${m}`);

// ------------------------------------------------------------------------------------------
// Clean-up on every exit path

let pg: BenchPostgres | undefined;
let server: CoordServer | undefined;
let compareServer: CoordServer | undefined;
let noGroupCommitServer: CoordServer | undefined;
let bulkServer: CoordServer | undefined;
let authServer: CoordServer | undefined;
let streamsServer: CoordServer | undefined;
/** Replicas 2 and 3 of the scale-out section (the same code as `server`, on the same database). */
let replicaServers: CoordServer[] = [];
const cleanup = async () => {
  await Promise.all(replicaServers.map((s) => s.stop().catch(() => {})));
  await bulkServer?.stop().catch(() => {});
  await authServer?.stop().catch(() => {});
  await streamsServer?.stop().catch(() => {});
  await server?.stop().catch(() => {});
  await compareServer?.stop().catch(() => {});
  await noGroupCommitServer?.stop().catch(() => {});
  await pg?.stop().catch(() => {});
};
const abort = (why: string, code: number) => {
  progress(why);
  void cleanup().finally(() => process.exit(code));
};
process.on('SIGINT', () => abort('interrupted; stopping the server and Postgres', 130));
process.on('SIGTERM', () => abort('terminated; stopping the server and Postgres', 143));
/**
 * Seconds each section may take on a loaded 2-core machine (about 3× what it takes on an idle
 * one; --quick halves them). Their sum for the sections run is the run's budget: once it is spent,
 * the sections not started yet are skipped and reported as such, and the run still writes its
 * results. Only twice the budget kills the run (a section that hangs).
 */
const SECTION_BUDGET_S: Record<Section, number> = {
  memory: 60,
  claim: 900,
  breakdown: 300,
  replicas: 240,
  events: 150,
  ready: 120,
  bulk: 180,
  auth: 150,
  streams: 300,
  scale: 420,
  graphs: 300,
};
const budgetMs = [...only].reduce((sum, s) => sum + SECTION_BUDGET_S[s], 120) * (quick ? 500 : 1000);
let budgetSpent = false;
const budgetTimer = setTimeout(() => {
  budgetSpent = true;
  progress(`budget: ${Math.round(budgetMs / 60_000)} minutes spent; the sections not started yet are skipped`);
}, budgetMs);
const watchdog = setTimeout(() => abort(`watchdog: twice the budget (${Math.round((2 * budgetMs) / 60_000)} minutes) spent; giving up`, 1), 2 * budgetMs);

/** A section that failed or was skipped: the run goes on without it and the report says so. */
interface SectionTrouble {
  /** The section, or `claim+breakdown` and the like for the claim benchmark's shared set-up. */
  section: string;
  outcome: 'failed' | 'skipped: budget spent';
  error?: string;
  seconds: number;
}
const troubles: SectionTrouble[] = [];

/**
 * Runs one section when it was asked for: an error ends that section only (recorded in
 * `troubles`, printed, the goals it feeds read `not run`), and once the budget is spent a section
 * is skipped instead of started.
 */
async function section(names: Section | Section[], fn: () => Promise<void>): Promise<void> {
  const asked = [names].flat().filter((n) => only.has(n));
  if (!asked.length) return;
  const name = asked.join('+') as Section;
  if (budgetSpent) {
    troubles.push({ section: name, outcome: 'skipped: budget spent', seconds: 0 });
    progress(`${name}: skipped (the run's budget is spent)`);
    return;
  }
  const t0 = performance.now();
  try {
    await fn();
  } catch (err) {
    const seconds = round((performance.now() - t0) / 1000, 0);
    troubles.push({ section: name, outcome: 'failed', error: (err as Error)?.stack ?? String(err), seconds });
    progress(`${name}: FAILED after ${seconds} s: ${(err as Error)?.message ?? err}; going on with the next section`);
  }
}

// ------------------------------------------------------------------------------------------

interface Results {
  date: string;
  mode: 'full' | 'quick';
  durationSeconds: number;
  machine: Machine;
  /** 1-minute load average before and after the run: other work on the machine skews absolute figures. */
  loadAverage: { before: number; after: number };
  settings: Record<string, unknown>;
  /** The goals (bench/goals.ts) measured by this run (a goal whose section did not run reads `not run`). */
  goals: Goal[];
  /** Sections that failed or were skipped for want of budget (empty when every section asked for ran). */
  troubles: SectionTrouble[];
  claim: ClaimRun[];
  /** Goal 6's second half: `coord-http` at the largest backlog after as many completed cycles in the scope (ClaimBench.runChurned). */
  churned: ClaimRun[];
  ratios: {
    backlog: number;
    n: number;
    coordOverRawSql: number | null;
    coordOverPgBoss: number | null;
    coordOverGraphileWorker: number | null;
    /** With --compare: the second server's throughput / this one's. */
    compareOverCoord?: number | null;
  }[];
  breakdown: ClaimRun[];
  /** Goal 5: the claim cycle at N = 32 with the agents spread over 1, 2 and 3 servers on one Postgres. */
  replicas: ClaimRun[];
  readySet?: ReadySetResult;
  events?: EventsResult;
  bulk?: BulkResult;
  /** A legitimate client under a flood of bad tokens, with the failed-authentication limit on and off. */
  auth?: AuthFloodResult;
  /** Goal 2: many open SSE streams on one server (bench/streams.ts). */
  streams?: StreamsResult;
  /** Goal 3: big scope against small, and how long the section took (s). */
  scale?: ScaleResult & { seconds: number };
  /** Goal 4: Task Graph execution timings, and how long the section took (s). */
  graphs?: GraphsResult & { seconds: number };
  memory: (MemorySample & { rssMiB: number })[];
}

async function main(): Promise<void> {
  const started = performance.now();
  const load0 = os.loadavg()[0];
  progress(`starting embedded Postgres (fsync=off) and the Coord server${opts.profile ? ' (profile mode)' : ''}`);
  pg = await startBenchPostgres({ pgStatStatements: opts.profile });
  const coordUrl = await pg.createDatabase('coord');
  await migrateDatabase(coordUrl);
  if (opts.profile) return profile(pg, coordUrl);
  // Every server on this database gets the same COORD_ADMIN_TOKEN: a start with another value
  // would revoke the token the servers already running were given (docs/guides/teams-and-tokens.md "Tokens").
  const adminToken = newToken();
  server = await startCoordServer({ databaseUrl: coordUrl, root: serverRoot, adminToken });
  if (serverRoot) progress(`Coord server from ${serverRoot}`);
  if (compareRoot) {
    compareServer = await startCoordServer({ databaseUrl: coordUrl, root: compareRoot, adminToken });
    progress(`second Coord server (coord-http-compare) from ${compareRoot}`);
  }
  if (only.has('breakdown')) {
    // The before of group commit, on the same database: every next/done its own round trip.
    noGroupCommitServer = await startCoordServer({ databaseUrl: coordUrl, root: serverRoot, adminToken, env: { COORD_GROUP_COMMIT: '1' } });
  }
  if (only.has('replicas')) {
    replicaServers = await Promise.all([1, 2].map(() => startCoordServer({ databaseUrl: coordUrl, root: serverRoot, adminToken })));
  }
  const machine = await describeMachine(pg.admin);
  progress(`${machine.cores} cores, ${machine.postgres}, Node ${machine.node}; load average ${load0.toFixed(2)}`);

  const memory: MemorySample[] = [];
  if (only.has('memory')) memory.push(await sampleRss(server, 'idle (after start)', 1500));

  // One root session with an agent for the event and memory benchmarks.
  const admin = openPool(server.base, 8);
  const evRoot = await call(admin, 'POST', '/v1/sessions', server.adminToken, { name: 'events-root' });
  const evAgent = await call(admin, 'POST', '/v1/sessions', server.adminToken, { name: 'events-agent', parentId: evRoot.body.session.id });
  const topic = `todo:session:${evRoot.body.session.id}`;

  if (only.has('memory')) {
    progress('memory: opening 1,000 SSE streams');
    memory.push(await rssWithStreams(server, evAgent.body.token, topic, 1000));
  }

  const claim: ClaimRun[] = [];
  const churned: ClaimRun[] = [];
  const breakdown: ClaimRun[] = [];
  const replicas: ClaimRun[] = [];
  await section(['claim', 'breakdown', 'replicas'], async () => {
    const bench = new ClaimBench(pg!, coordUrl, server!, Math.max(...AGENTS, BREAKDOWN_N), compareServer, noGroupCommitServer, replicaServers);
    const contenders: Contender[] = [...CONTENDERS, ...(compareServer ? [COMPARE] : [])];
    await bench.prepare();
    try {
      progress('claim: warm-up (not recorded)');
      for (const c of [...contenders, ...(only.has('breakdown') ? DIAGNOSTICS : [])]) await bench.run(c, 8, 1000, 3000);
      const runOne = async (c: Contender, n: number, backlog: number, into: ClaimRun[]) => {
        const r = await bench.run(c, n, backlog, capMs);
        into.push(r);
        progress(
          `claim ${c.padEnd(26)} n=${String(n).padStart(2)} backlog=${String(backlog).padStart(5)}: ${fmt(r.perSecond).padStart(6)}/s` +
            `${r.next ? `  next p50 ${fmt(r.next.p50)} ms p99 ${fmt(r.next.p99)} ms` : ''}${r.emptied ? '' : `  (capped: ${r.cycles} of ${backlog})`}`,
        );
      };
      // Interleaved: every cell runs all contenders back to back, so drift hits them alike.
      for (const backlog of BACKLOGS) {
        if (only.has('claim')) for (const n of AGENTS) for (const c of contenders) await runOne(c, n, backlog, claim);
        if (only.has('breakdown')) {
          const diag: Contender[] = [
            'coord-http',
            'coord-http-two-trips',
            ...(compareServer ? [COMPARE] : []),
            'coord-http-no-group-commit',
            'coord-inproc',
            'raw-sql',
            'raw-sql-no-events',
          ];
          for (const c of diag) await runOne(c, BREAKDOWN_N, backlog, breakdown);
        }
      }
      if (only.has('claim')) {
        // Goal 6 after churn: the largest backlog again, timed after CHURN completed cycles in the scope.
        const backlog = Math.max(...BACKLOGS);
        for (const n of [1, BREAKDOWN_N]) {
          const r = await bench.runChurned(n, backlog, CHURN, capMs);
          churned.push(r);
          progress(
            `claim coord-http after ${fmt(r.churned ?? 0)} cycles n=${String(n).padStart(2)} backlog=${String(backlog).padStart(5)}: ${fmt(r.perSecond).padStart(6)}/s` +
              `${r.next ? `  next p50 ${fmt(r.next.p50)} ms p99 ${fmt(r.next.p99)} ms` : ''}  probe pages ${r.probePages ?? '–'}${r.emptied ? '' : `  (capped: ${r.cycles} of ${backlog})`}`,
          );
        }
      }
      if (only.has('replicas')) {
        // Goal 5: 1, 2 and 3 servers on one Postgres, twice each, interleaved (1 2 3 1 2 3).
        for (let round = 0; round < 2; round++) {
          for (const k of [1, 2, 3]) {
            const r = await bench.runReplicas(k, BREAKDOWN_N, REPLICA_BACKLOG, capMs);
            replicas.push(r);
            progress(
              `replicas ${k}: n=${BREAKDOWN_N} backlog=${fmt(REPLICA_BACKLOG)}: ${fmt(r.perSecond)}/s  next p99 ${fmt(r.next?.p99 ?? NaN)} ms${r.emptied ? '' : `  (capped: ${r.cycles})`}`,
            );
          }
        }
      }
    } finally {
      await bench.close();
    }
    if (only.has('memory')) memory.push(await sampleRss(server!, 'after the claim benchmark', 1500));
  });

  let events: EventsResult | undefined;
  await section('events', async () => {
    progress('events: commit-to-delivery latency with 1 / 100 / 500 subscribers, then throughput');
    const sql = openDb(coordUrl, { max: 2, applicationName: 'bench-events' });
    try {
      events = await eventsBench(
        { base: server!.base, token: evAgent.body.token, topic, sql },
        { latencyEvents: quick ? 60 : 150, intervalMs: 20, throughputEvents: quick ? 5000 : 20_000, capMs: 30_000 },
      );
    } finally {
      await sql.end({ timeout: 2 });
    }
  });

  let readySet: ReadySetResult | undefined;
  await section('ready', async () => {
    progress('ready set: 2,000 items / 4,000 edges, then 10,000 items / 20,000 edges');
    const sql = openDb(coordUrl, { max: 2, applicationName: 'bench-ready' });
    try {
      readySet = await readySetBench(sql, admin, server!.adminToken);
    } finally {
      await sql.end({ timeout: 2 });
    }
  });

  let scale: Results['scale'];
  await section('scale', async () => {
    progress(`scale: ${fmt(SCALE.bigItems)} items (loaded with SQL) against ${fmt(SCALE.smallItems)}`);
    const t0 = performance.now();
    const sql = openDb(coordUrl, { max: 2, applicationName: 'bench-scale' });
    try {
      scale = { ...(await scaleBench(sql, admin, server!.adminToken, SCALE, progress)), seconds: round((performance.now() - t0) / 1000, 0) };
    } finally {
      await sql.end({ timeout: 2 });
    }
  });

  let graphs: Results['graphs'];
  await section('graphs', async () => {
    const t0 = performance.now();
    graphs = { ...(await graphsBench(admin, server!.adminToken, GRAPHS, progress)), seconds: round((performance.now() - t0) / 1000, 0) };
  });
  await admin.close();

  let bulk: BulkResult | undefined;
  await section('bulk', async () => {
    progress(`bulk: ${fmt(BULK_ITEMS)} items in one POST /v1/todos/bulk against ${fmt(BULK_ITEMS)} single POST /v1/todos (8 in flight)`);
    // A server of its own: list_limit and the body limit raised so that one request holds every item.
    bulkServer = await startCoordServer({
      databaseUrl: coordUrl,
      root: serverRoot,
      adminToken,
      env: { COORD_TODO_LIST_LIMIT: String(BULK_ITEMS), COORD_BODY_LIMIT: String(64 * 2 ** 20) },
    });
    bulk = await bulkBench(bulkServer, { items: BULK_ITEMS, inFlight: 8, runs: 3 });
    progress(`bulk: single adds ${fmt(bulk.single.ms)} ms, one bulk request p50 ${fmt(bulk.bulk.p50)} ms: ${bulk.speedup}× faster`);
    await bulkServer.stop();
  });

  let auth: AuthFloodResult | undefined;
  await section('auth', async () => {
    const flood = quick ? 2000 : 6000;
    progress(`auth: GET /v1/me alone and under ${fmt(flood)} random-token requests, failed-authentication limit on and off`);
    auth = { flood, attackers: 300, runs: [] };
    for (const [name, limit] of [
      ['limit on (default)', undefined],
      ['limit off', '0'],
    ] as const) {
      // Each its own server: the limit's counts and the principal cache start empty.
      authServer = await startCoordServer({
        databaseUrl: coordUrl,
        root: serverRoot,
        adminToken,
        env: limit === undefined ? {} : { COORD_AUTH_FAILURE_LIMIT: limit },
      });
      const run = await authFloodRun(name, authServer, { flood, attackers: 300, quietRequests: quick ? 300 : 1000 });
      auth.runs.push(run);
      progress(
        `auth: ${name}: p99 ${fmt(run.quiet.p99)} ms quiet, ${fmt(run.flood.p99)} ms under the flood (${run.p99Ratio}×), ${fmt(run.lookups)} database lookups`,
      );
      await authServer.stop();
    }
  });

  let streams: StreamsResult | undefined;
  await section('streams', async () => {
    // Goal 2 on a server of its own: its stream caps (the replica's and one team's) raised to the
    // run's streams, its RSS and CPU its own.
    const o = quick ? STREAMS_QUICK : STREAMS_FULL;
    streamsServer = await startCoordServer({
      databaseUrl: coordUrl,
      root: serverRoot,
      adminToken,
      env: { COORD_MAX_STREAMS: String(o.streams), COORD_MAX_STREAMS_PER_TEAM: String(o.streams) },
    });
    const sql = openDb(coordUrl, { max: 2, applicationName: 'bench-streams' });
    try {
      streams = await streamsBench(streamsServer, sql, o, progress);
    } finally {
      await sql.end({ timeout: 2 });
      await streamsServer.stop();
    }
  });

  await server.stop();
  await Promise.all(replicaServers.map((s) => s.stop()));
  await compareServer?.stop();
  await noGroupCommitServer?.stop();
  await pg.stop();
  const results: Results = {
    date: new Date().toISOString(),
    mode: quick ? 'quick' : 'full',
    durationSeconds: round((performance.now() - started) / 1000, 0),
    machine,
    loadAverage: { before: round(load0, 2), after: round(os.loadavg()[0], 2) },
    settings: {
      postgres: 'embedded, fsync=off, synchronous_commit=off, full_page_writes=off (startEmbeddedPostgres fast: true), the same for every contender',
      capSecondsPerRun: capMs / 1000,
      backlogs: BACKLOGS,
      agents: AGENTS,
      poolMaxPerContender: 20,
      coordServer:
        'src/server.ts in a child process, Coord defaults (pool 20, claim lease 30 min, emit_events all), COORD_MAX_STREAMS=2000, COORD_RATE_LIMIT=0',
      ...(serverRoot ? { serverRoot } : {}),
      ...(compareRoot ? { compareRoot } : {}),
      clients:
        'this process: undici keep-alive pool (one socket per agent) for Coord; postgres.js for raw SQL; pg-boss 10.4.2; graphile-worker 0.16.6 (NO_LOG_SUCCESS=1)',
      setupNotMeasured: 'backlogs are inserted with SQL (Coord: the rows POST /v1/todos writes), then VACUUM ANALYZE and CHECKPOINT',
    },
    goals: [
      cpuGoal(claim, BREAKDOWN_N, Math.max(...BACKLOGS)),
      streamsGoal(streams),
      bigScopeGoal(scale),
      graphGoal(graphs),
      scaleOutGoal(replicas),
      flatBacklogGoal(claim, churned, AGENTS, Math.min(...BACKLOGS), Math.max(...BACKLOGS)),
    ],
    troubles,
    claim,
    churned,
    ratios: ratios(claim),
    breakdown,
    replicas,
    readySet,
    events,
    bulk,
    auth,
    streams,
    scale,
    graphs,
    memory: memory.map((m) => ({ ...m, rssMiB: mib(m.rssBytes) })),
  };
  report(results);
  mkdirSync(RESULTS_DIR, { recursive: true });
  const stem = quick || opts.only || serverRoot || compareRoot ? 'quick' : 'latest';
  writeFileSync(path.join(RESULTS_DIR, `${stem}.json`), `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(path.join(RESULTS_DIR, `${stem}.md`), markdown(results));
  progress(`wrote bench/results/${stem}.json and bench/results/${stem}.md in ${results.durationSeconds} s`);
}

function ratios(claim: ClaimRun[]): Results['ratios'] {
  const out: Results['ratios'] = [];
  for (const backlog of BACKLOGS) {
    for (const n of AGENTS) {
      const get = (c: Contender) => claim.find((r) => r.contender === c && r.n === n && r.backlog === backlog)?.perSecond;
      const coord = get('coord-http');
      if (coord === undefined) continue;
      const rr = (x: number | undefined) => (x ? round(coord / x, 2) : null);
      const cmp = get(COMPARE);
      out.push({
        backlog,
        n,
        coordOverRawSql: rr(get('raw-sql')),
        coordOverPgBoss: rr(get('pg-boss')),
        coordOverGraphileWorker: rr(get('graphile-worker')),
        ...(cmp !== undefined ? { compareOverCoord: round(cmp / coord, 2) } : {}),
      });
    }
  }
  return out;
}

// ------------------------------------------------------------------------------------------
// Output

function claimRows(runs: ClaimRun[]) {
  return runs.map((r) => [
    r.contender,
    r.n,
    r.backlog,
    r.perSecond,
    r.next ? r.next.p50 : '–',
    r.next ? r.next.p99 : '–',
    r.done ? r.done.p50 : '–',
    r.probePages ?? '–',
    r.emptied ? 'emptied' : `capped at ${fmt(r.cycles)}`,
  ]);
}
const CLAIM_HEAD = ['contender', 'N', 'backlog', 'cycles/s', 'next p50 ms', 'next p99 ms', 'done p50 ms', 'probe pages', 'run'];
const CPU_HEAD = ['contender', 'backlog', 'cycles/s', 'server µs', 'Postgres + rest µs', 'client µs', 'total µs', 'cores busy'];

const GOAL_HEAD = ['goal', 'what', 'measured', 'target', 'met'];
const goalRows = (goals: Goal[]) => goals.map((g) => [String(g.goal), g.name, g.figure, g.target, g.met === null ? '–' : g.met ? 'yes' : 'no']);

const REPLICAS_TITLE = `Scale-out: the claim cycle at N=${BREAKDOWN_N} with the agents spread over 1, 2 and 3 servers on one Postgres (every run verified exactly-once)`;
const REPLICAS_HEAD = [
  'servers',
  'backlog',
  'cycles/s',
  'next p50 ms',
  'next p99 ms',
  'servers µs',
  'Postgres + rest µs',
  'client µs',
  'total µs',
  'cores busy',
  'run',
];

/** Goal 5's rows, in run order (each server count appears once per round). */
function replicaRows(runs: ClaimRun[]): (string | number)[][] {
  return runs.map((x) => [
    x.replicas ?? 1,
    x.backlog,
    x.perSecond,
    x.next ? x.next.p50 : '–',
    x.next ? x.next.p99 : '–',
    x.cpu ? x.cpu.serverUs : '–',
    x.cpu ? x.cpu.postgresAndRestUs : '–',
    x.cpu ? x.cpu.clientUs : '–',
    x.cpu ? x.cpu.totalUs : '–',
    x.cpu ? `${x.cpu.busyPercent} %` : '–',
    x.emptied ? 'emptied' : `capped at ${fmt(x.cycles)}`,
  ]);
}

/** CPU per cycle of the runs at the breakdown's N: the claim section's contenders, then the diagnostics. */
function cpuRows(r: Results): (string | number)[][] {
  const runs = [...r.claim.filter((x) => x.n === BREAKDOWN_N), ...r.breakdown.filter((x) => !r.claim.some((c) => c.contender === x.contender))];
  return runs
    .filter((x) => x.cpu)
    .sort((a, b) => a.backlog - b.backlog)
    .map((x) => [x.contender, x.backlog, x.perSecond, x.cpu!.serverUs, x.cpu!.postgresAndRestUs, x.cpu!.clientUs, x.cpu!.totalUs, `${x.cpu!.busyPercent} %`]);
}
const CPU_TITLE = `CPU per cycle at N=${BREAKDOWN_N} (µs of CPU time per next → done cycle, by process; cores busy = share of all cores over the run)`;

const SCALE_HEAD = ['operation', 'small p50', 'small p99', 'big p50', 'big p99', 'compared', 'big / small', 'goal ≤ 2×'];
const scaleTitle = (s: ScaleResult & { seconds: number }) =>
  `Big scopes (goal 3): ${fmt(s.big.items)} items against ${fmt(s.small.items)}, one agent over HTTP, ms (section ${s.seconds} s; loaded with ${s.loadedWith}; ` +
  `load ${fmt(s.big.loadMs)} ms for the big scope, not timed)`;
function scaleRows(s: ScaleResult): (string | number)[][] {
  const row = (what: string, a: Summary, b: Summary, i: number) => [
    what,
    a.p50,
    a.p99,
    b.p50,
    b.p99,
    s.ratios[i].stat,
    `${s.ratios[i].ratio}×`,
    s.ratios[i].met ? 'met' : 'NOT met',
  ];
  const ex = (x: ScaleResult['small'], f: 'markdown' | 'json') =>
    `${fmt(x.export[f].itemsPerSecond)} items/s (p50 ${fmt(x.export[f].runs.p50)} ms of ${x.export[f].runs.n}, ${fmt(x.export[f].bytes / 1024)} KiB)`;
  const exRow = (f: 'markdown' | 'json', i: number) => [
    `GET /v1/scopes/{scope}/export?format=${f}`,
    ex(s.small, f),
    '',
    ex(s.big, f),
    '',
    s.ratios[i].stat,
    `${s.ratios[i].ratio}×`,
    s.ratios[i].met ? 'met' : 'NOT met',
  ];
  return [
    row('POST /v1/todos/next', s.small.next, s.big.next, 0),
    row('GET /v1/todos?limit=100', s.small.firstPage, s.big.firstPage, 1),
    row('GET /v1/todos?status=todo&limit=100', s.small.firstTodoPage, s.big.firstTodoPage, 2),
    row('GET /v1/todos/{id}/readiness', s.small.readiness, s.big.readiness, 3),
    row('GET /v1/scopes (counts)', s.small.scopeCounts, s.big.scopeCounts, 4),
    exRow('markdown', 5),
    exRow('json', 6),
  ];
}
const GRAPHS_HEAD = ['call', 'size', 'n', 'p50 ms', 'p99 ms', 'max ms', 'server mean ms'];
const graphsTitle = (g: GraphsResult & { seconds: number }) =>
  `Task graph execution (goal 4): client time per call over HTTP, and the server's own mean (section ${g.seconds} s)`;
const graphsRows = (g: GraphsResult) => g.calls.map((c) => [c.kind, c.what, c.client.n, c.client.p50, c.client.p99, c.client.max, c.serverMeanMs ?? '–']);
const graphsNote = (g: GraphsResult) =>
  `plan of ${g.refusedPlan.subtasks} subtasks × ${g.refusedPlan.patterns} patterns (the goal's shape): refused by the contract, HTTP ${g.refusedPlan.status}: ${g.refusedPlan.message}`;

const BULK_HEAD = ['how', 'p50', 'max', 'items/s'];
function bulkRows(b: BulkResult): (string | number)[][] {
  const perSecond = (ms: number) => round((b.items / ms) * 1000, 0);
  return [
    [`${fmt(b.items)} × POST /v1/todos (${b.inFlight} in flight)`, b.single.ms, b.single.ms, b.single.perSecond],
    ['1 × POST /v1/todos/bulk', b.bulk.p50, b.bulk.max, perSecond(b.bulk.p50)],
    ['1 × POST /v1/todos/bulk, dependency chain by ref', b.bulkChain.p50, b.bulkChain.max, perSecond(b.bulkChain.p50)],
  ];
}

function report(r: Results): void {
  const out: string[] = [];
  out.push(
    `Coord benchmark ${r.date} (${r.mode}, ${r.durationSeconds} s) on ${r.machine.cores} cores (${r.machine.cpuModel}), ${r.machine.postgres}, Node ${r.machine.node}`,
  );
  out.push(
    `Postgres: fsync=off, synchronous_commit=off, full_page_writes=off for every contender. Load average ${r.loadAverage.before} before, ${r.loadAverage.after} after.`,
  );
  out.push('', 'Goals', table(GOAL_HEAD, goalRows(r.goals)));
  if (r.troubles.length)
    out.push(
      '',
      'Sections that did not finish (their goals read `not run`)',
      table(
        ['section', 'outcome', 'after s', 'error'],
        r.troubles.map((x) => [x.section, x.outcome, x.seconds, (x.error ?? '').split('\n')[0]]),
      ),
    );
  if (r.claim.length) {
    out.push('', 'Claim cycle throughput (next → done until the backlog is empty; every run verified exactly-once)', table(CLAIM_HEAD, claimRows(r.claim)));
    if (r.churned?.length)
      out.push(
        '',
        `The same after churn: coord-http timed after ${fmt(r.churned[0].churned ?? 0)} completed cycles in the scope (goal 6)`,
        table(CLAIM_HEAD, claimRows(r.churned)),
      );
    out.push(
      '',
      'Ratios (Coord over HTTP throughput / other)',
      table(
        ['backlog', 'N', 'Coord/raw-SQL', 'Coord/pg-boss', 'Coord/graphile-worker', ...(compareServer ? ['compare/Coord'] : [])],
        r.ratios.map((x) => [
          x.backlog,
          x.n,
          x.coordOverRawSql ? `${x.coordOverRawSql}×` : '–',
          x.coordOverPgBoss ? `${x.coordOverPgBoss}×` : '–',
          x.coordOverGraphileWorker ? `${x.coordOverGraphileWorker}×` : '–',
          ...(compareServer ? [x.compareOverCoord ? `${x.compareOverCoord}×` : '–'] : []),
        ]),
      ),
    );
  }
  if (r.breakdown.length)
    out.push('', `Where the time goes at N=${BREAKDOWN_N} (coord-inproc = Coord's service functions without HTTP)`, table(CLAIM_HEAD, claimRows(r.breakdown)));
  const cpu = cpuRows(r);
  if (cpu.length) out.push('', CPU_TITLE, table(CPU_HEAD, cpu));
  if (r.replicas.length) out.push('', REPLICAS_TITLE, table(REPLICAS_HEAD, replicaRows(r.replicas)));
  if (r.readySet) {
    out.push(
      '',
      'Ready set at scale (HTTP, one agent; ms)',
      table(
        [
          'items',
          'edges',
          'ready',
          'next p50',
          'next p99',
          'filtered next p50',
          'filtered next p99',
          'first page p50',
          'first page p99',
          'done→1,000 ready p50',
          'reopen→1,000 blocked p50',
        ],
        r.readySet.runs.map((x) => [
          x.items,
          x.edges,
          x.ready,
          x.next.p50,
          x.next.p99,
          x.nextFiltered.p50,
          x.nextFiltered.p99,
          x.firstPage.p50,
          x.firstPage.p99,
          x.doneReadies1000.p50,
          x.reopenBlocks1000.p50,
        ]),
      ),
      `growth 10,000 / 2,000 items (p50): next ${r.readySet.growth.next}×, filtered next ${r.readySet.growth.nextFiltered}×, first page ${r.readySet.growth.firstPage}×, done ${r.readySet.growth.doneReadies1000}×, reopen ${r.readySet.growth.reopenBlocks1000}×`,
    );
  }
  if (r.events) {
    out.push(
      '',
      'Events: commit-to-SSE-delivery latency on one topic (ms)',
      table(
        ['subscribers', 'events', 'p50', 'p99', 'max'],
        r.events.latency.map((x) => [x.subscribers, x.events, x.latency.p50, x.latency.p99, x.latency.max]),
      ),
      '',
      'Events: delivery throughput of one replica (one topic, 100 events per transaction)',
      table(
        ['subscribers', 'events', 'events/s per subscriber', 'frames/s', 'writer events/s', 'complete'],
        r.events.throughput.map((x) => [
          x.subscribers,
          x.events,
          x.eventsPerSecond,
          x.deliveriesPerSecond,
          x.writerEventsPerSecond,
          x.complete ? 'yes' : 'capped',
        ]),
      ),
    );
  }
  if (r.bulk) {
    out.push(
      '',
      `Bulk add: ${fmt(r.bulk.items)} items (ms; bulk over ${r.bulk.bulk.n} runs)`,
      table(BULK_HEAD, bulkRows(r.bulk)),
      `one bulk request is ${r.bulk.speedup}× faster than the single adds`,
    );
  }
  if (r.auth) out.push('', authFloodTitle(r.auth), table(AUTH_FLOOD_HEAD, authFloodRows(r.auth)));
  if (r.streams) out.push('', streamsTitle(r.streams), table(STREAMS_HEAD, streamsRows(r.streams)));
  if (r.scale) out.push('', scaleTitle(r.scale), table(SCALE_HEAD, scaleRows(r.scale)));
  if (r.graphs) out.push('', graphsTitle(r.graphs), table(GRAPHS_HEAD, graphsRows(r.graphs)), graphsNote(r.graphs));
  if (r.memory.length)
    out.push(
      '',
      'Server memory (RSS)',
      table(
        ['when', 'RSS MiB'],
        r.memory.map((m) => [m.label, m.rssMiB]),
      ),
    );
  console.log(out.join('\n'));
}

function mdTable(headers: string[], rows: (string | number)[][]): string {
  const cell = (c: string | number) => (typeof c === 'number' ? fmt(c) : c);
  return [`| ${headers.join(' | ')} |`, `|${headers.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.map(cell).join(' | ')} |`)].join('\n');
}

/** The same figures as markdown, for the README's Performance section. */
function markdown(r: Results): string {
  const out: string[] = [];
  out.push(
    `Measured ${r.date.slice(0, 10)} with \`npm run bench\` (${r.mode}, ${r.durationSeconds} s): ${r.machine.cores} cores (${r.machine.cpuModel}), ` +
      `${r.machine.memoryGiB} GiB, ${r.machine.postgres} with fsync=off for every contender, Node ${r.machine.node}; ` +
      `load average ${r.loadAverage.before} before / ${r.loadAverage.after} after (the machine is shared). Time cap per claim run: ${r.settings.capSecondsPerRun} s.`,
  );
  out.push('', '**Goals**', '', mdTable(GOAL_HEAD, goalRows(r.goals)));
  if (r.troubles.length)
    out.push(
      '',
      '**Sections that did not finish** (their goals read `not run`)',
      '',
      mdTable(
        ['section', 'outcome', 'after s', 'error'],
        r.troubles.map((x) => [x.section, x.outcome, x.seconds, (x.error ?? '').split('\n')[0]]),
      ),
    );
  if (r.ratios.length) {
    const get = (c: Contender, n: number, b: number) => r.claim.find((x) => x.contender === c && x.n === n && x.backlog === b);
    out.push(
      '',
      '**Claim cycle** (cycles/s; `next` p99 in ms for Coord)',
      '',
      mdTable(
        ['backlog', 'N', 'Coord (HTTP)', 'Coord next p99', 'raw SQL', 'pg-boss', 'graphile-worker', 'Coord/raw', 'Coord/pg-boss', 'Coord/graphile'],
        r.ratios.map((x) => {
          const c = get('coord-http', x.n, x.backlog);
          const cap = (run: ClaimRun | undefined) => (run ? `${fmt(run.perSecond)}${run.emptied ? '' : '*'}` : '–');
          return [
            x.backlog,
            x.n,
            cap(c),
            c?.next ? c.next.p99 : '–',
            cap(get('raw-sql', x.n, x.backlog)),
            cap(get('pg-boss', x.n, x.backlog)),
            cap(get('graphile-worker', x.n, x.backlog)),
            ratio(x.coordOverRawSql ?? undefined, 1),
            ratio(x.coordOverPgBoss ?? undefined, 1),
            ratio(x.coordOverGraphileWorker ?? undefined, 1),
          ];
        }),
      ),
      '',
      '\\* the run hit its time cap before the backlog was empty: partial throughput.',
    );
  }
  if (r.breakdown.length) {
    out.push('', `**Where the time goes** (N=${BREAKDOWN_N})`, '', mdTable(CLAIM_HEAD, claimRows(r.breakdown)));
  }
  const cpu = cpuRows(r);
  if (cpu.length) out.push('', `**${CPU_TITLE}**`, '', mdTable(CPU_HEAD, cpu));
  if (r.replicas.length) out.push('', `**${REPLICAS_TITLE}**`, '', mdTable(REPLICAS_HEAD, replicaRows(r.replicas)));
  if (r.readySet) {
    out.push(
      '',
      '**Ready set at scale** (one agent over HTTP, ms p50 / p99)',
      '',
      mdTable(
        ['items / edges', 'ready', 'next', 'next (tags: gpu)', 'first page (100)', 'done readying 1,000', 'reopen blocking 1,000'],
        r.readySet.runs.map((x) => [
          `${fmt(x.items)} / ${fmt(x.edges)}`,
          x.ready,
          `${fmt(x.next.p50)} / ${fmt(x.next.p99)}`,
          `${fmt(x.nextFiltered.p50)} / ${fmt(x.nextFiltered.p99)}`,
          `${fmt(x.firstPage.p50)} / ${fmt(x.firstPage.p99)}`,
          `${fmt(x.doneReadies1000.p50)} / ${fmt(x.doneReadies1000.p99)}`,
          `${fmt(x.reopenBlocks1000.p50)} / ${fmt(x.reopenBlocks1000.p99)}`,
        ]),
      ),
    );
  }
  if (r.events) {
    out.push(
      '',
      '**Events** (commit to SSE delivery, one topic)',
      '',
      mdTable(
        ['subscribers', 'p50 ms', 'p99 ms'],
        r.events.latency.map((x) => [x.subscribers, x.latency.p50, x.latency.p99]),
      ),
      '',
      mdTable(
        ['subscribers', 'events/s per subscriber', 'frames/s'],
        r.events.throughput.map((x) => [x.subscribers, x.eventsPerSecond, x.deliveriesPerSecond]),
      ),
    );
  }
  if (r.bulk) out.push('', `**Bulk add** (${fmt(r.bulk.items)} items, ms; ${r.bulk.speedup}× faster in one request)`, '', mdTable(BULK_HEAD, bulkRows(r.bulk)));
  if (r.auth) out.push('', `**${authFloodTitle(r.auth)}**`, '', mdTable(AUTH_FLOOD_HEAD, authFloodRows(r.auth)));
  if (r.streams) out.push('', `**${streamsTitle(r.streams)}**`, '', mdTable(STREAMS_HEAD, streamsRows(r.streams)));
  if (r.scale) out.push('', `**${scaleTitle(r.scale)}**`, '', mdTable(SCALE_HEAD, scaleRows(r.scale)));
  if (r.graphs) out.push('', `**${graphsTitle(r.graphs)}**`, '', mdTable(GRAPHS_HEAD, graphsRows(r.graphs)), '', graphsNote(r.graphs));
  if (r.memory.length)
    out.push(
      '',
      '**Server RSS**',
      '',
      mdTable(
        ['when', 'MiB'],
        r.memory.map((m) => [m.label, m.rssMiB]),
      ),
    );
  return `${out.join('\n')}\n`;
}

// ------------------------------------------------------------------------------------------
// Profile mode

async function profile(pgc: BenchPostgres, coordUrl: string): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'coord-bench-prof-'));
  try {
    server = await startCoordServer({ databaseUrl: coordUrl, cpuProfDir: dir, root: serverRoot });
    const sql = openDb(coordUrl, { max: 1, applicationName: 'bench-profile' });
    let statements: StatementStat[] = [];
    let run: ClaimRun;
    try {
      await sql`create extension if not exists pg_stat_statements`;
      const bench = new ClaimBench(pgc, coordUrl, server, Math.max(PROFILE_N, 8));
      await bench.prepare();
      try {
        await bench.run('coord-http', 8, 1000, 3000);
        await sql`select pg_stat_statements_reset()`;
        run = await bench.run('coord-http', PROFILE_N, 20_000, capMs);
        statements = await topStatements(sql);
      } finally {
        await bench.close();
      }
    } finally {
      await sql.end({ timeout: 2 });
    }
    await server.stop();
    const cpu: ProfileSummary = summarizeCpuProfile(dir);
    const out = { date: new Date().toISOString(), run, cpu, statements };
    mkdirSync(RESULTS_DIR, { recursive: true });
    keepCpuProfile(dir, path.join(RESULTS_DIR, 'server.cpuprofile'));
    writeFileSync(path.join(RESULTS_DIR, 'profile.json'), `${JSON.stringify(out, null, 2)}\n`);
    console.log(
      [
        `Profile of Coord's claim cycle: N=${PROFILE_N}, backlog 20,000: ${fmt(run.perSecond)} cycles/s, next p50 ${run.next?.p50} ms p99 ${run.next?.p99} ms, done p50 ${run.done?.p50} ms`,
        '',
        `Server CPU (${fmt(cpu.wallMs)} ms profiled, idle ${cpu.idlePercent} %), self time by area`,
        table(
          ['area', '% samples'],
          cpu.byArea.map((a) => [a.area, a.percent]),
        ),
        '',
        'Hottest functions (self time)',
        table(
          ['function', 'where', '%'],
          cpu.topFunctions.map((f) => [f.fn, f.where, f.percent]),
        ),
        '',
        'Postgres statements during the run (pg_stat_statements, by total time)',
        table(
          ['calls', 'mean ms', 'total ms', 'rows/call', 'query'],
          statements.map((s) => [s.calls, s.meanMs, s.totalMs, s.rowsPerCall, s.query]),
        ),
      ].join('\n'),
    );
    progress('wrote bench/results/profile.json');
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await pgc.stop();
  }
}

main()
  .then(() => {
    clearTimeout(watchdog);
    clearTimeout(budgetTimer);
  })
  .catch(async (err) => {
    clearTimeout(watchdog);
    clearTimeout(budgetTimer);
    console.error(`bench: FAILED: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    await cleanup();
    process.exit(1);
  });
