/**
 * Prometheus metrics (prom-client): one registry per app, so the many apps a test process builds
 * never collide, plus one process-wide registry for the process metrics.
 *
 * Two kinds of series, and they aggregate differently (docs/operations.md lists every one):
 * - **This replica's**: HTTP requests, claim outcomes, SSE streams and deliveries, group commit,
 *   the sweep ticks this replica ran, transaction start waits. Counters: `sum()` them across
 *   replicas.
 * - **The fleet's**, read from Postgres at each scrape: the sweeps' last success (the sweep runs
 *   on one replica per tick, so only the database knows), events written, Coord's connections.
 *   Every replica reports the same value: `max()` them, never `sum()`. When the database cannot
 *   be read, the gauges are left out of that scrape rather than reported stale, and the counter
 *   keeps its last value.
 *
 * Process metrics (`process_*`, `nodejs_*`) come from `collectDefaultMetrics` into a registry
 * shared by every app of the process: they describe the process, and prom-client installs
 * process-wide observers for them (a GC observer, an event-loop-delay monitor) with no way to
 * remove them, so one set per app would leak one set per app built.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Sql } from '../db/client.js';
import { judgeSweeps, readSweepRuns, STALE_AFTER_INTERVALS } from './sweeps.health.js';

let processRegistry: Registry | undefined;

/** The process-wide registry of `collectDefaultMetrics` (created with the first app's metrics). */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/**
 * The state of the work at a scrape (read by src/health/work.ts; the fleet's, like the sweep
 * facts): per team, and per scope kind where named, never per item or session.
 */
export interface WorkFacts {
  /** Items by scope kind and status class: ready (stored todo, no unfinished dependency), waiting (on a dependency), in_progress, blocked, done. */
  items: { team: string; kind: string; status: 'ready' | 'waiting' | 'in_progress' | 'blocked' | 'done'; n: number }[];
  /** In-progress claims past their lease (database clock), taken over or not yet, by scope kind. */
  expiredClaims: { team: string; kind: string; n: number }[];
  /** Seconds since the least recent progress of any in-progress claim. */
  stalestClaim: { team: string; seconds: number }[];
  /** Seconds since the oldest in-progress claim began. */
  oldestClaim: { team: string; seconds: number }[];
  /** Active sessions silent past their heartbeat interval that still hold an in-progress item. */
  silentHolders: { team: string; n: number }[];
  /** Task Graph v1 subtasks with a terminal outcome (FAILED, STOPPED, BLOCKED). */
  subtaskOutcomes: { team: string; outcome: string; n: number }[];
}

/** What the app's gauges read when scraped. */
export interface MetricSources {
  sql: Sql;
  /** Open SSE streams on this replica. */
  openStreams: () => number;
  /** Topics with a live feed on this replica. */
  topics: () => number;
  /** Times this replica's LISTEN connection (re)subscribed. */
  listenCount: () => number;
  /** Group commit batches and requests carried, per kind (src/todos/todos.batch.ts). */
  groupCommit: () => { next?: { batches: number; requests: number }; done?: { batches: number; requests: number } };
  /** Postgres pool size of this replica (`COORD_DB_POOL_MAX`). */
  poolMax: number;
  /** `[todo] sweep_interval` in ms. */
  sweepIntervalMs: number;
  /** Whether this replica runs the sweep job (`COORD_SWEEPS`). */
  runsSweeps: boolean;
  /** performance.now() when the app was built (the sweeps' start-up grace). */
  startedAt: number;
  /** The work gauges' facts (src/health/work.ts); absent: no work gauges. */
  work?: () => Promise<WorkFacts>;
}

/** Request latency buckets (seconds): the claim cycle's p99 is 5–40 ms on 2 cores (README). */
const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Sweep step buckets (seconds): an idle step takes about a millisecond, a batch of 1,000 rows much longer. */
const SWEEP_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60];
/** Transaction start buckets (seconds): a free connection answers BEGIN in well under a millisecond. */
const TX_START_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5];

/** An app's metrics: its registry and the instruments the hooks and modules update. */
export class Metrics {
  readonly registry = new Registry();

  /** Requests answered, by route pattern (never the raw URL), method and status. */
  readonly httpRequests = new Counter({
    name: 'coord_http_requests_total',
    help: 'HTTP requests answered by this replica, by route pattern ("unmatched" for no route), method and status.',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [this.registry],
  });
  /** Request latency; SSE streams are left out (their duration is the stream's life). */
  readonly httpDuration = new Histogram({
    name: 'coord_http_request_duration_seconds',
    help: 'Time from receiving a request to finishing its response, in seconds, by route pattern, method and status (SSE streams excluded).',
    labelNames: ['route', 'method', 'status'] as const,
    buckets: HTTP_BUCKETS,
    registers: [this.registry],
  });
  /** Claims and `next` calls by outcome: `claimed`, `empty` (next found nothing), or the problem code. */
  readonly claimRequests = new Counter({
    name: 'coord_claim_requests_total',
    help: 'POST /v1/todos/{id}/claim (operation="claim") and POST /v1/todos/next (operation="next", also the next of a POST /v1/todos/{id}/done that asked for one) answered by this replica, by outcome: claimed, empty (next found nothing eligible), or the problem code (already_claimed, dependency_blocked, …).',
    labelNames: ['operation', 'outcome'] as const,
    registers: [this.registry],
  });
  /** Requests to authenticated routes refused before their handler ran, by why (auth.plugin.ts). */
  readonly authRefusals = new Counter({
    name: 'coord_auth_refusals_total',
    help: 'Requests to /v1 routes and /mcp refused by authentication on this replica, by reason: missing (no bearer token), database (the database refused the token: a lookup), cached (refused again from the refusal cache: no lookup), rate_limited (the address is over COORD_AUTH_FAILURE_LIMIT: 429, no lookup).',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly sseOpened = new Counter({
    name: 'coord_sse_streams_opened_total',
    help: 'SSE streams (GET /v1/events) this replica has opened.',
    registers: [this.registry],
  });
  /** Streams ended, by why (events.routes.ts `StreamEnd`). */
  readonly sseClosed = new Counter({
    name: 'coord_sse_streams_closed_total',
    help: 'SSE streams this replica ended, by reason: client (the client closed it), revoked (its session stopped, its token was revoked or lost access), expired (its token expired), slow (more than 1 MiB behind), stalled (nothing written for a whole heartbeat interval while data waited), max_age (COORD_SSE_MAX_AGE reached), shutdown, error.',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly sseDelivered = new Counter({
    name: 'coord_sse_events_delivered_total',
    help: 'Events this replica has written to SSE streams (one per event per stream).',
    registers: [this.registry],
  });
  readonly sweepRuns = new Counter({
    name: 'coord_sweep_runs_total',
    help: 'Sweep steps this replica ran, by sweep and result (success, failure).',
    labelNames: ['sweep', 'result'] as const,
    registers: [this.registry],
  });
  readonly sweepDuration = new Histogram({
    name: 'coord_sweep_duration_seconds',
    help: 'Duration of the sweep steps this replica ran, in seconds, by sweep.',
    labelNames: ['sweep'] as const,
    buckets: SWEEP_BUCKETS,
    registers: [this.registry],
  });
  readonly sweepChanges = new Counter({
    name: 'coord_sweep_changes_total',
    help: 'Rows changed by the sweep steps this replica ran, by sweep: sweep="lease" counts lease expiries (items reopened), "retention" done items deleted, "event-retention" events deleted, … (docs/operations.md).',
    labelNames: ['sweep'] as const,
    registers: [this.registry],
  });
  readonly txStart = new Histogram({
    name: 'coord_db_transaction_start_seconds',
    help: 'Time from asking for a transaction to running its first statement, in seconds: the wait for a free pool connection plus the BEGIN round trip (every withTx attempt on this replica).',
    buckets: TX_START_BUCKETS,
    registers: [this.registry],
  });

  /** The fleet's sweep and database facts, refreshed by {@link expose} before each scrape. */
  private readonly fleet = {
    lastSuccess: this.fleetGauge(
      'coord_sweep_last_success_timestamp_seconds',
      'Unix time of the last successful run of each sweep, on any replica (from Postgres; the same on every replica).',
      ['sweep'],
    ),
    lastDuration: this.fleetGauge('coord_sweep_last_duration_seconds', 'Duration of the last successful run of each sweep, in seconds (from Postgres).', [
      'sweep',
    ]),
    lastChanges: this.fleetGauge('coord_sweep_last_changes', 'Rows the last successful run of each sweep changed (from Postgres).', ['sweep']),
    lastFailure: this.fleetGauge(
      'coord_sweep_last_failure_timestamp_seconds',
      'Unix time of the last failed run of each sweep, on any replica (from Postgres; absent when it never failed).',
      ['sweep'],
    ),
    stale: this.fleetGauge(
      'coord_sweep_stale',
      `1 when a sweep has not succeeded within ${STALE_AFTER_INTERVALS} × sweep_interval (what /readyz reports as degraded), else 0.`,
      ['sweep'],
    ),
    eventsWritten: new Counter({
      name: 'coord_events_written_total',
      help: 'Events written by the whole fleet: the newest event sequence number (from Postgres; the same on every replica; a rolled-back write also uses one).',
      registers: [this.registry],
    }),
    workItems: this.fleetGauge(
      'coord_work_items',
      'Work items by team id, scope kind (session, scenario, graph, metagit) and stored status: ready (todo, nothing to wait for), waiting (todo, on an unfinished dependency), in_progress (claimed; an expired claim counts here until taken over or swept, see coord_work_claims_expired), blocked (set by an owner; a graph subtask FAILED, STOPPED or BLOCKED too), done. From per-scope counts, not a count of the items.',
      ['team', 'kind', 'status'],
    ),
    claimsExpired: this.fleetGauge(
      'coord_work_claims_expired',
      'In-progress claims past their lease (claim_lease, database clock) that nobody has taken over or swept yet, by team id and scope kind; absent when there are none (the healthy case).',
      ['team', 'kind'],
    ),
    stalestClaim: this.fleetGauge(
      'coord_work_stalest_claim_seconds',
      'Seconds since the least recent progress (claim or heartbeat) of any in-progress claim, by team id; absent for a team with no claim.',
      ['team'],
    ),
    oldestClaim: this.fleetGauge(
      'coord_work_oldest_claim_seconds',
      'Seconds since the oldest in-progress claim began (however much progress it has made since), by team id; absent for a team with no claim.',
      ['team'],
    ),
    silentHolders: this.fleetGauge(
      'coord_work_silent_sessions_holding',
      'Active sessions silent past their heartbeat interval that still hold in-progress items (claims within their lease), by team id (the session-liveness sweep stops them and reopens their claims); absent for a team with none.',
      ['team'],
    ),
    subtasksEnded: this.fleetGauge(
      'coord_work_graph_subtasks_ended',
      'Task Graph v1 subtasks with a terminal outcome now, by team id and outcome (FAILED, STOPPED, BLOCKED; a resumed subtask leaves it); a RUNNING subtask whose lease expired counts in coord_work_claims_expired{kind="graph"} until recorded FAILED.',
      ['team', 'outcome'],
    ),
    connections: this.fleetGauge(
      'coord_db_connections',
      'Connections to this database named "coord" (every replica\'s pool and LISTEN connection), by pg_stat_activity state.',
      ['state'],
    ),
  };

  constructor(private readonly sources: MetricSources) {
    // The claimed outcomes exist from the start at 0, so a rule on their rate sees a replica that
    // has claimed nothing yet (an absent series would make `rate(…) == 0` evaluate to nothing).
    for (const operation of ['claim', 'next'] as const) this.claimRequests.inc({ operation, outcome: 'claimed' }, 0);
    // Start the process collectors now: their CPU counter and GC/event-loop observers count from
    // the moment they are created, so waiting for the first scrape would miss the start-up.
    processMetrics();
    const s = sources;
    const gauge = (name: string, help: string, read: () => number) =>
      new Gauge({
        name,
        help,
        registers: [this.registry],
        collect() {
          this.set(read());
        },
      });
    const total = (name: string, help: string, read: () => number) =>
      new Counter({
        name,
        help,
        registers: [this.registry],
        collect() {
          this.reset();
          this.inc(read());
        },
      });
    gauge('coord_sse_open_streams', 'SSE streams open on this replica.', s.openStreams);
    gauge('coord_sse_topics', 'Topics with a live feed (at least one open stream) on this replica.', s.topics);
    total('coord_event_listen_connects_total', "Times this replica's event LISTEN connection has (re)connected.", s.listenCount);
    total('coord_group_commit_next_batches_total', 'Group commit batches of next calls (src/db/group-commit.ts).', () => s.groupCommit().next?.batches ?? 0);
    total(
      'coord_group_commit_next_requests_total',
      'next calls carried by group commit batches; requests over batches is the mean batch size.',
      () => s.groupCommit().next?.requests ?? 0,
    );
    total('coord_group_commit_done_batches_total', "Group commit batches of the owner's done calls.", () => s.groupCommit().done?.batches ?? 0);
    total('coord_group_commit_done_requests_total', 'done calls carried by group commit batches.', () => s.groupCommit().done?.requests ?? 0);
    gauge('coord_db_pool_max', 'Postgres pool size of this replica (COORD_DB_POOL_MAX).', () => s.poolMax);
    gauge('coord_sweep_interval_seconds', "This replica's [todo] sweep_interval, in seconds.", () => s.sweepIntervalMs / 1000);
  }

  private fleetGauge(name: string, help: string, labelNames: string[]) {
    return new Gauge({ name, help, labelNames, registers: [this.registry] });
  }

  /** Content type of {@link expose}'s text (Prometheus text format 0.0.4). */
  get contentType(): string {
    return this.registry.contentType;
  }

  /**
   * The exposition text: process metrics, then this app's. Reads the fleet's facts from Postgres
   * first; when that fails, the fleet series are left out of this scrape.
   */
  async expose(): Promise<string> {
    // Concurrent scrapes share one: the fleet gauges are reset and refilled per scrape.
    this.scrape ??= (async () => {
      try {
        await this.refreshFleet();
        return await Registry.merge([processMetrics(), this.registry]).metrics();
      } finally {
        this.scrape = undefined;
      }
    })();
    return this.scrape;
  }

  private scrape: Promise<string> | undefined;

  private async refreshFleet(): Promise<void> {
    const f = this.fleet;
    // Labelled gauges without a fresh value are left out; the unlabelled counter keeps its last
    // value (prom-client would print a reset one as 0, which rate() reads as a counter reset).
    const work = [f.workItems, f.claimsExpired, f.stalestClaim, f.oldestClaim, f.silentHolders, f.subtasksEnded];
    for (const g of [f.lastSuccess, f.lastDuration, f.lastChanges, f.lastFailure, f.stale, f.connections, ...work]) g.reset();
    const { sql } = this.sources;
    let facts;
    try {
      facts = await Promise.all([
        readSweepRuns(sql),
        sql<{ n: number | null }[]>`select pg_sequence_last_value('events_id_seq')::float8 as n`,
        sql<{ state: string; n: number }[]>`
          select coalesce(state, 'unknown') as state, count(*)::int as n from pg_stat_activity
           where datname = current_database() and application_name = 'coord' group by 1`,
        this.sources.work?.(),
      ]);
    } catch {
      return;
    }
    const [runs, [seq], conns, w] = facts;
    const judged = judgeSweeps(runs, {
      staleAfterMs: STALE_AFTER_INTERVALS * this.sources.sweepIntervalMs,
      uptimeMs: performance.now() - this.sources.startedAt,
      runsSweeps: this.sources.runsSweeps,
    });
    runs.forEach((r, i) => {
      const labels = { sweep: r.sweep };
      if (r.lastSuccessAt) f.lastSuccess.set(labels, r.lastSuccessAt.getTime() / 1000);
      if (r.durationMs !== null) f.lastDuration.set(labels, r.durationMs / 1000);
      if (r.changed !== null) f.lastChanges.set(labels, r.changed);
      if (r.lastFailureAt) f.lastFailure.set(labels, r.lastFailureAt.getTime() / 1000);
      f.stale.set(labels, judged.sweeps[i].stale ? 1 : 0);
    });
    f.eventsWritten.reset();
    f.eventsWritten.inc(Number(seq?.n ?? 0));
    for (const c of conns) f.connections.set({ state: c.state }, c.n);
    if (w) {
      for (const x of w.items) f.workItems.set({ team: x.team, kind: x.kind, status: x.status }, x.n);
      for (const x of w.expiredClaims) f.claimsExpired.set({ team: x.team, kind: x.kind }, x.n);
      for (const x of w.stalestClaim) f.stalestClaim.set({ team: x.team }, x.seconds);
      for (const x of w.oldestClaim) f.oldestClaim.set({ team: x.team }, x.seconds);
      for (const x of w.silentHolders) f.silentHolders.set({ team: x.team }, x.n);
      for (const x of w.subtaskOutcomes) f.subtasksEnded.set({ team: x.team, outcome: x.outcome }, x.n);
    }
  }
}
