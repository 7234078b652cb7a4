/**
 * Claim-cycle throughput (part 1): a backlog of ready items in one scope and N concurrent
 * agents, each looping "claim the next item" → "complete it" until the backlog is empty or the
 * run's time cap is reached. Measured in the bench process (a separate process from the Coord
 * server): cycles per second, and the latency of the claim call (`next`, pg-boss `fetch`).
 *
 * Contenders, all on the same embedded Postgres with the same settings:
 * - `coord-http`: Coord over HTTP (`POST /v1/todos/next`, `POST /v1/todos/{id}/done`), undici
 *   keep-alive pool, one session (bearer token) per agent.
 * - `raw-sql`: the physical limit of Coord's semantics: the same claim (partial index
 *   `todos_ready_idx`, `FOR UPDATE SKIP LOCKED`) and the same completion (owner/lease guard,
 *   cascade to dependents, event rows), one statement per request, through
 *   postgres.js with Coord's pool size.
 * - `pg-boss` (10.x): `insert` the backlog, then N loops of `fetch` + `complete`.
 * - `graphile-worker` (0.16.x): the backlog as jobs, a runner with concurrency N and a no-op task.
 * Diagnostics (the "where does the time go" table): `coord-http-no-group-commit` (a second
 * server on the same database with `COORD_GROUP_COMMIT=1`: every request its own round trip, the
 * before of the group-commit change), `coord-inproc` (Coord's own service functions
 * and auth lookup called in-process: Coord minus HTTP), `raw-sql-no-events` (`raw-sql`
 * without the event rows).
 *
 * Setup (creating the backlog, VACUUM ANALYZE, CHECKPOINT) is not measured. Coord's backlog is
 * inserted with SQL, as the rows `POST /v1/todos` would write (scope, position 1..n, created_by;
 * the `scopes` row bumped). Every run is verified: the client saw each item at most once, and the
 * database agrees (each claimed item done exactly once, revision 3; every other item untouched).
 * A double claim throws, which fails the whole benchmark.
 */
import { EventEmitter } from 'node:events';
import PgBoss from 'pg-boss';
import postgres from 'postgres';
import { Logger, run as runGraphile, runMigrations as migrateGraphile } from 'graphile-worker';
import type { Pool } from 'undici';
import { startCpu, type CpuPerCycle } from './lib/cpu.js';
import { PrincipalCache } from '../src/auth/principal-cache.js';
import { principalForToken } from '../src/auth/principals.repo.js';
import { testConfig } from '../src/config.js';
import { openDb, type Sql } from '../src/db/client.js';
import { claimNext } from '../src/todos/todos.claim.js';
import { transitionTodo } from '../src/todos/todos.transitions.js';
import type { Ctx } from '../src/todos/todos.context.js';
import { call, openPool } from './lib/http.js';
import type { BenchPostgres } from './lib/pg.js';
import { round, summarize, type Summary } from './lib/stats.js';

export const CONTENDERS = ['coord-http', 'raw-sql', 'pg-boss', 'graphile-worker'] as const;
export const DIAGNOSTICS = ['coord-http-two-trips', 'coord-http-no-group-commit', 'coord-inproc', 'raw-sql-no-events'] as const;
/** Coord over HTTP served by a second server from another checkout (`--compare`), same database. */
export const COMPARE = 'coord-http-compare' as const;
export type Contender = (typeof CONTENDERS)[number] | (typeof DIAGNOSTICS)[number] | typeof COMPARE;

/** Pool size given to every contender's Postgres client: Coord's default `COORD_DB_POOL_MAX`. */
export const POOL_MAX = 20;
/** Claim lease of Coord's defaults (30 min), in ms: the completion guard checks it. */
const LEASE_MS = 30 * 60_000;

export interface ClaimRun {
  contender: Contender;
  /** Concurrent agents (graphile-worker: runner concurrency). */
  n: number;
  /** Ready items at the start. */
  backlog: number;
  /** Completed claim cycles. */
  cycles: number;
  /** Wall time of the run, ms: first claim to last completion. */
  elapsedMs: number;
  /** Cycles per second. */
  perSecond: number;
  /** True when the backlog was emptied; false when the time cap ended the run (partial throughput). */
  emptied: boolean;
  /** Latency of the claim call (`next` / `fetch`), ms; null where the library does not expose it. */
  next: Summary | null;
  /** Latency of the completion call, ms; null where not exposed. */
  done: Summary | null;
  /** What the exactly-once check verified. */
  verified: string;
  /**
   * Coord's table only: index pages one ready-set probe (the `next` pick) reads at the end of the
   * run. Claimed items leave dead entries at the front of the partial index until VACUUM, so this
   * grows with the items claimed since the last vacuum, not with the backlog.
   */
  probePages?: number;
  /** CPU per cycle by process, and core utilisation, over the run (bench/lib/cpu.ts); null off Linux. */
  cpu?: CpuPerCycle | null;
  /** `coord-http` only: Coord servers (replicas on the one database) the agents were spread over, round-robin; absent = 1. */
  replicas?: number;
  /**
   * {@link ClaimBench.runChurned} only: claim cycles completed in the scope just before the timed
   * run (not measured), so the ready index carries what many claims leave behind; absent = none.
   */
  churned?: number;
}

interface Agent {
  id: string;
  token: string;
}

const quietGraphileLogger = new Logger(() => () => {});

/** Owns every contender's connections and the per-run setup/verify. */
export class ClaimBench {
  private coordSql!: Sql;
  private pool?: Pool;
  private agents: Agent[] = [];
  private rootId = '';
  private scope = '';
  private bossUrl = '';
  private gwUrl = '';

  constructor(
    private readonly pg: BenchPostgres,
    private readonly coordUrl: string,
    private readonly server: { base: string; adminToken: string; pid: number },
    private readonly maxAgents = 64,
    private readonly compare?: { base: string; pid: number },
    private readonly noGroupCommit?: { base: string; pid: number },
    /** Further replicas of `server` (same code, same database) for {@link runReplicas}. */
    private readonly replicas: { base: string; pid: number }[] = [],
  ) {}

  /** Every Coord server process: their CPU counts as server time, whichever one serves a run. */
  private get serverPids(): number[] {
    return [this.server, this.compare, this.noGroupCommit, ...this.replicas].filter((s) => s !== undefined).map((s) => s.pid);
  }

  /**
   * Scale-out (goal 5): `coord-http` with its `n` agents spread round-robin over the
   * first `count` Coord servers (the main one, then the replicas): every server takes claims for
   * the same scope from the same Postgres, and the exactly-once check covers them all.
   */
  async runReplicas(count: number, n: number, backlog: number, capMs: number): Promise<ClaimRun> {
    const servers = [this.server, ...this.replicas].slice(0, count);
    if (servers.length < count) throw new Error(`${count} replicas asked for, ${servers.length} started`);
    await this.setupCoordBacklog(backlog);
    return {
      ...(await this.runCoordFamily(
        'coord-http',
        n,
        backlog,
        capMs,
        servers.map((s) => s.base),
      )),
      replicas: count,
    };
  }

  /**
   * The claim cycle after churn (flat in backlog, goal 6): `backlog + churn` ready items, of which
   * `churn` are first claimed and completed over HTTP by every agent at once (two requests a
   * cycle, not measured; autovacuum runs meanwhile as it would in service), then `coord-http` is
   * timed with `n` agents on the `backlog` items left: the same run as a fresh `backlog`, after
   * `churn` completed cycles in the scope. Verified exactly-once over both stages.
   */
  async runChurned(n: number, backlog: number, churn: number, capMs: number): Promise<ClaimRun> {
    await this.setupCoordBacklog(backlog + churn);
    const agents = this.agents;
    const pool = openPool(this.server.base, agents.length);
    let claimed = 0;
    try {
      await Promise.all(
        agents.map(async (a) => {
          while (claimed < churn) {
            claimed++;
            const r = await call<{ claimed: boolean; item?: { id: string } }>(pool, 'POST', '/v1/todos/next', a.token, {});
            if (!r.body.claimed) throw new Error(`churn: next found nothing after ${claimed} claims of ${backlog + churn}`);
            const d = await call<{ item: { status: string } }>(pool, 'POST', `/v1/todos/${r.body.item!.id}/done`, a.token, {});
            if (d.body.item.status !== 'done') throw new Error(`churn: done of ${r.body.item!.id} answered ${d.body.item.status}`);
          }
        }),
      );
    } finally {
      await pool.close();
    }
    return { ...(await this.runCoordFamily('coord-http', n, backlog, capMs, undefined, claimed)), churned: claimed };
  }

  /** Registers one root session and `maxAgents` agent sessions under it (their shared scope); prepares the queue databases. */
  async prepare(): Promise<void> {
    this.coordSql = openDb(this.coordUrl, { max: 4, applicationName: 'bench-setup' });
    const admin = openPool(this.server.base, 4);
    try {
      const root = await call(admin, 'POST', '/v1/sessions', this.server.adminToken, { name: 'bench-root' });
      this.rootId = root.body.session.id;
      this.scope = `session:${this.rootId}`;
      for (let i = 0; i < this.maxAgents; i++) {
        const s = await call(admin, 'POST', '/v1/sessions', this.server.adminToken, { name: `agent-${i}`, parentId: this.rootId });
        this.agents.push({ id: s.body.session.id, token: s.body.token });
      }
    } finally {
      await admin.close();
    }
    this.bossUrl = await this.pg.createDatabase('bench_pgboss');
    this.gwUrl = await this.pg.createDatabase('bench_graphile');
    const boss = new PgBoss({ connectionString: this.bossUrl, max: 2, supervise: false, schedule: false });
    await boss.start();
    await boss.stop({ graceful: false, wait: true });
    await migrateGraphile({ connectionString: this.gwUrl, logger: quietGraphileLogger });
  }

  /** Sets up the backlog (not measured), runs one contender, verifies exactly-once, and resets nothing (the next setup does). */
  async run(contender: Contender, n: number, backlog: number, capMs: number): Promise<ClaimRun> {
    if (n > this.agents.length) throw new Error(`at most ${this.agents.length} agents`);
    switch (contender) {
      case 'coord-http':
      case 'coord-http-two-trips':
      case 'coord-http-compare':
      case 'coord-http-no-group-commit':
      case 'coord-inproc':
      case 'raw-sql':
      case 'raw-sql-no-events':
        await this.setupCoordBacklog(backlog);
        return this.runCoordFamily(contender, n, backlog, capMs);
      case 'pg-boss':
        return this.runPgBoss(n, backlog, capMs);
      case 'graphile-worker':
        return this.runGraphile(n, backlog, capMs);
    }
  }

  async close(): Promise<void> {
    await this.pool?.close();
    await this.coordSql?.end({ timeout: 2 });
  }

  // ------------------------------------------------------------------------------------------
  // Coord's table: coord-http, coord-inproc, raw-sql, raw-sql-no-events

  private async setupCoordBacklog(backlog: number): Promise<void> {
    const sql = this.coordSql;
    await sql`truncate todo_dependencies, todos, events cascade`; // the bench database only
    await sql`
      insert into todos (id, scope, title, created_by, position)
      select 'td-' || lpad(to_hex(g), 16, '0'), ${this.scope}, 'bench item ' || g, ${this.rootId}, g
        from generate_series(1, ${backlog}::int) g`;
    // Delete, then insert: the same statements on this release's schema (scopes keyed by team and
    // scope) and on a previous release's (`--server-root`), in the default team either way.
    await sql`delete from scopes where scope = ${this.scope}`;
    await sql`insert into scopes (scope, last_position) values (${this.scope}, ${backlog})`;
    await sql.unsafe('vacuum analyze todos, events, todo_dependencies, sessions, users');
    await sql.unsafe('checkpoint');
  }

  /** `prior`: items already claimed and done in the scope before this run ({@link runChurned}), counted by the check. */
  private async runCoordFamily(contender: Contender, n: number, backlog: number, capMs: number, replicaBases?: string[], prior = 0): Promise<ClaimRun> {
    const agents = this.agents.slice(0, n);
    let claim: (a: Agent) => Promise<string | undefined>;
    let complete: (a: Agent, id: string) => Promise<Completed>;
    let cleanup = async () => {};
    let warm = async () => {};
    if (
      contender === 'coord-http' ||
      contender === 'coord-http-two-trips' ||
      contender === 'coord-http-compare' ||
      contender === 'coord-http-no-group-commit'
    ) {
      const base = {
        'coord-http': this.server.base,
        'coord-http-two-trips': this.server.base,
        'coord-http-compare': this.compare?.base,
        'coord-http-no-group-commit': this.noGroupCommit?.base,
      }[contender];
      if (!base) throw new Error(`${contender} needs its own server (--compare, or the breakdown section)`);
      const bases = replicaBases ?? [base];
      // One keep-alive pool per server; agent i talks to server i mod k for the whole run.
      const pools = bases.map((b, i) => openPool(b, Math.ceil((n - i) / bases.length)));
      const poolOf = new Map(agents.map((a, i) => [a, pools[i % pools.length]]));
      cleanup = async () => void (await Promise.all(pools.map((p) => p.close())));
      // Open the n keep-alive sockets and fill the servers' token caches before the clock starts.
      warm = async () => void (await Promise.all(agents.map((a) => call(poolOf.get(a)!, 'GET', '/v1/me', a.token))));
      claim = async (a) => {
        const r = await call<{ claimed: boolean; item?: { id: string } }>(poolOf.get(a)!, 'POST', '/v1/todos/next', a.token, {});
        return r.body.claimed ? r.body.item!.id : undefined;
      };
      // `coord-http` cycles as an agent should (the SDK's work loop): each `done` claims the next
      // item in the same request. The others make two requests a cycle (`next`, then `done`), as
      // a server of an earlier release must be driven (`--compare`).
      const oneTrip = contender === 'coord-http';
      complete = async (a, id) => {
        const r = await call<{ item: { status: string }; next?: { claimed: boolean; item?: { id: string } } }>(
          poolOf.get(a)!,
          'POST',
          `/v1/todos/${id}/done`,
          a.token,
          oneTrip ? { next: {} } : {},
        );
        if (r.body.item.status !== 'done') throw new Error(`done of ${id} answered status ${r.body.item.status}`);
        if (oneTrip) return { next: r.body.next?.claimed ? r.body.next.item!.id : null };
      };
    } else if (contender === 'coord-inproc') {
      // Coord's own service functions and auth lookup (with the server's principal cache),
      // without HTTP, Fastify or zod.
      const sql = openDb(this.coordUrl, { max: POOL_MAX, applicationName: 'bench-inproc' });
      const config = testConfig();
      const principals = new PrincipalCache(config.principalCacheMs); // as the server: token → principal, 5 s
      cleanup = () => sql.end({ timeout: 2 });
      const ctxFor = async (a: Agent): Promise<Ctx> => {
        const principal = await principalForToken(sql, a.token, principals);
        if (!principal) throw new Error('agent token not accepted');
        return { sql, config, principal };
      };
      warm = async () => {
        await openConnections(sql, Math.min(n, POOL_MAX));
        await Promise.all(agents.map(ctxFor));
      };
      claim = async (a) => (await claimNext(await ctxFor(a))).item?.id;
      complete = async (a, id) => void (await transitionTodo(await ctxFor(a), id, 'done'));
    } else {
      const events = contender !== 'raw-sql-no-events';
      const sql = postgres(this.coordUrl, { max: Math.min(n, POOL_MAX), onnotice: () => {}, connection: { application_name: 'bench-raw' } });
      cleanup = () => sql.end({ timeout: 2 });
      warm = () => openConnections(sql, Math.min(n, POOL_MAX));
      const team = await teamColumn(sql);
      claim = async (a) => (await rawClaim(sql, team, this.scope, a.id, events))[0]?.id;
      complete = async (a, id) => {
        const r = await rawComplete(sql, id, a.id, events);
        if (r.length !== 1) throw new Error(`raw completion of ${id} by ${a.id} matched ${r.length} rows`);
      };
    }
    try {
      await warm();
      const cpuEnd = startCpu(this.serverPids);
      const r = await agentLoops(agents, claim, complete, capMs);
      const cpu = cpuEnd(r.cycles);
      const verified = await this.verifyCoord(contender, backlog, r, n, prior);
      return { ...result(contender, n, backlog, r, verified), probePages: await this.probePages(), cpu };
    } finally {
      await cleanup();
    }
  }

  private async probePages(): Promise<number> {
    const team = await teamColumn(this.coordSql);
    const [row] = await this.coordSql.unsafe(
      `explain (analyze, buffers, format json)
       select id from todos where ${team ? `team_id = '${team}' and` : ''} scope = $1 and status = 'todo' and owner is null and unfinished_deps = 0
        order by priority desc, position, id limit 1`,
      [this.scope],
    );
    const plan = (row as Record<string, { Plan: Record<string, number> }[]>)['QUERY PLAN'][0].Plan;
    return (plan['Shared Hit Blocks'] ?? 0) + (plan['Shared Read Blocks'] ?? 0);
  }

  private async verifyCoord(contender: Contender, backlog: number, r: LoopResult, n: number, prior = 0): Promise<string> {
    const { seen, held } = r;
    // `prior` items were done before this run by any agent: they count as done, the scope holds them too.
    const cycles = r.cycles + prior;
    const owners = (prior ? this.agents : this.agents.slice(0, n)).map((a) => a.id);
    const [c] = await this.coordSql<{ done3: number; untouched: number; held: number; total: number; claimed_ev: number; done_ev: number }[]>`
      select count(*) filter (where status = 'done' and revision = 3 and owner = any(${owners}::text[]))::int as done3,
             count(*) filter (where status = 'todo' and revision = 1 and owner is null)::int as untouched,
             count(*) filter (where status = 'in-progress' and revision = 2 and owner = any(${owners}::text[]))::int as held,
             count(*)::int as total,
             (select count(*) from events where event = 'claimed')::int as claimed_ev,
             (select count(*) from events where event = 'done')::int as done_ev
        from todos where scope = ${this.scope}`;
    const problems: string[] = [];
    if (seen.size !== r.cycles + held) problems.push(`client saw ${seen.size} distinct items in ${r.cycles} cycles and ${held} claims held at the cap`);
    backlog += prior;
    if (c.total !== backlog) problems.push(`scope holds ${c.total} items, expected ${backlog}`);
    if (c.done3 !== cycles) problems.push(`${c.done3} items are done at revision 3, expected ${cycles}`);
    if (c.held !== held) problems.push(`${c.held} items are claimed and not done, expected ${held} (claimed by the last done before the cap)`);
    if (c.untouched !== backlog - cycles - held) problems.push(`${c.untouched} items untouched, expected ${backlog - cycles - held}`);
    const withEvents = contender !== 'raw-sql-no-events';
    if (withEvents && (c.claimed_ev !== cycles + held || c.done_ev !== cycles))
      problems.push(`events: ${c.claimed_ev} claimed / ${c.done_ev} done, expected ${cycles + held} / ${cycles}`);
    if (problems.length) throw new Error(`EXACTLY-ONCE CHECK FAILED for ${contender} (n=${n}, backlog=${backlog}): ${problems.join('; ')}`);
    return `${cycles} items claimed once each and done at revision 3${prior ? ` (${prior} before the timed run)` : ''}${held ? `, ${held} claimed by the last done before the cap` : ''}; ${backlog - cycles - held} untouched${withEvents ? '; one claimed and one done event per cycle' : ''}`;
  }

  // ------------------------------------------------------------------------------------------
  // pg-boss 10

  private async runPgBoss(n: number, backlog: number, capMs: number): Promise<ClaimRun> {
    const queue = 'bench';
    const boss = new PgBoss({
      connectionString: this.bossUrl,
      max: Math.min(n, POOL_MAX),
      supervise: false,
      schedule: false,
      application_name: 'bench-pgboss',
    });
    boss.on('error', (err) => console.error(`bench: pg-boss error: ${err.message}`));
    await boss.start();
    const admin = postgres(this.bossUrl, { max: 1, onnotice: () => {} });
    try {
      // The previous run's jobs first: pg-boss refuses to drop a queue whose partition holds jobs.
      if ((await admin`select to_regclass('pgboss.job') as t`)[0].t) await admin`delete from pgboss.job where name = ${queue}`;
      await boss.deleteQueue(queue);
      await boss.createQueue(queue, { name: queue, policy: 'standard' });
      for (let i = 0; i < backlog; i += 5000) {
        const size = Math.min(5000, backlog - i);
        await boss.insert(Array.from({ length: size }, (_, k) => ({ name: queue, data: { i: i + k + 1 } })));
      }
      {
        await admin.unsafe('vacuum analyze pgboss.job');
        await admin.unsafe('checkpoint');
        const agents = this.agents.slice(0, n);
        // Open its pool's connections before the clock starts, as for the other contenders.
        await Promise.all(Array.from({ length: Math.min(n, POOL_MAX) }, () => boss.getDb().executeSql('select pg_sleep(0.01)', [])));
        const cpuEnd = startCpu(this.serverPids);
        const r = await agentLoops(
          agents,
          async () => {
            for (;;) {
              const [job] = await boss.fetch<{ i: number }>(queue);
              if (job) return job.id;
              // pg-boss's fetch also answers [] when its query failed; only an empty queue ends the loop.
              if ((await boss.getQueueSize(queue)) === 0) return undefined;
            }
          },
          async (_a, id) => boss.complete(queue, id),
          capMs,
        );
        const cpu = cpuEnd(r.cycles);
        const rows = await admin<{ state: string; n: number }[]>`select state::text, count(*)::int as n from pgboss.job where name = ${queue} group by state`;
        const by = Object.fromEntries(rows.map((x) => [x.state, x.n]));
        const problems: string[] = [];
        if (r.seen.size !== r.cycles) problems.push(`client saw ${r.seen.size} distinct jobs in ${r.cycles} cycles`);
        if ((by.completed ?? 0) !== r.cycles) problems.push(`${by.completed ?? 0} jobs completed, expected ${r.cycles}`);
        if ((by.created ?? 0) !== backlog - r.cycles) problems.push(`${by.created ?? 0} jobs still created, expected ${backlog - r.cycles}`);
        if (by.active) problems.push(`${by.active} jobs left active`);
        if (problems.length) throw new Error(`EXACTLY-ONCE CHECK FAILED for pg-boss (n=${n}, backlog=${backlog}): ${problems.join('; ')}`);
        return { ...result('pg-boss', n, backlog, r, `${r.cycles} jobs fetched once each and completed; ${backlog - r.cycles} still created`), cpu };
      }
    } finally {
      await admin.end();
      await boss.stop({ graceful: false, wait: true, timeout: 5000 });
    }
  }

  // ------------------------------------------------------------------------------------------
  // graphile-worker 0.16

  private async runGraphile(n: number, backlog: number, capMs: number): Promise<ClaimRun> {
    const admin = postgres(this.gwUrl, { max: 1, onnotice: () => {} });
    try {
      await admin.unsafe('truncate graphile_worker._private_jobs, graphile_worker._private_job_queues');
      await admin`
        select graphile_worker.add_jobs(array(
          select row('bench', json_build_object('i', g), null, null, null, null, null, null)::graphile_worker.job_spec
            from generate_series(1, ${backlog}::int) g))`;
      await admin.unsafe('vacuum analyze graphile_worker._private_jobs');
      await admin.unsafe('checkpoint');

      const seen = new Set<string>();
      const dups: string[] = [];
      let completed = 0;
      let failed = 0;
      let first = 0;
      let last = 0;
      const events = new EventEmitter();
      let stopping = false;
      // eslint-disable-next-line prefer-const
      let runner: Awaited<ReturnType<typeof runGraphile>>;
      // CPU from the first job's start to the last one's completion (or the cap), as the throughput.
      let cpuEnd: ((cycles: number) => CpuPerCycle | null) | undefined;
      let cpu: CpuPerCycle | null = null;
      const stop = () => {
        if (stopping) return;
        stopping = true;
        cpu = cpuEnd?.(completed) ?? null;
        void runner?.stop();
      };
      events.on('job:start', () => {
        if (!first) {
          first = performance.now();
          cpuEnd = startCpu(this.serverPids);
        }
      });
      events.on('job:complete', ({ error }: { error: unknown }) => {
        if (error) failed++;
        else completed++;
        last = performance.now();
        if (completed + failed >= backlog) stop();
      });
      const cap = setTimeout(stop, capMs);
      runner = await runGraphile({
        connectionString: this.gwUrl,
        concurrency: n,
        // One more than the other contenders' pool: the runner keeps one connection for LISTEN.
        maxPoolSize: Math.min(n, POOL_MAX) + 1,
        noHandleSignals: true,
        pollInterval: 1000,
        logger: quietGraphileLogger,
        events: events as never,
        taskList: {
          bench: async (payload) => {
            const key = String((payload as { i: number }).i);
            if (seen.has(key)) dups.push(key);
            else seen.add(key);
          },
        },
      });
      if (stopping) void runner.stop();
      await runner.promise;
      clearTimeout(cap);
      const [c] = await admin<{ remaining: number; locked: number; failed: number }[]>`
        select count(*)::int as remaining,
               count(*) filter (where locked_at is not null)::int as locked,
               count(*) filter (where attempts > 0)::int as failed
          from graphile_worker._private_jobs`;
      const problems: string[] = [];
      if (dups.length) problems.push(`${dups.length} jobs ran twice (first: ${dups[0]})`);
      if (failed) problems.push(`${failed} jobs failed`);
      if (seen.size !== completed) problems.push(`${seen.size} distinct jobs ran, ${completed} completed`);
      if (c.remaining !== backlog - completed) problems.push(`${c.remaining} jobs remain, expected ${backlog - completed}`);
      if (c.locked) problems.push(`${c.locked} jobs left locked`);
      if (problems.length) throw new Error(`EXACTLY-ONCE CHECK FAILED for graphile-worker (n=${n}, backlog=${backlog}): ${problems.join('; ')}`);
      const elapsedMs = last - first;
      return {
        contender: 'graphile-worker',
        n,
        backlog,
        cycles: completed,
        elapsedMs: round(elapsedMs, 1),
        perSecond: round(completed / (elapsedMs / 1000), 1),
        emptied: completed === backlog,
        next: null,
        done: null,
        verified: `${completed} jobs ran once each and were removed; ${backlog - completed} remain queued`,
        cpu,
      };
    } finally {
      await admin.end();
    }
  }
}

// --------------------------------------------------------------------------------------------

interface LoopResult {
  cycles: number;
  elapsedMs: number;
  emptied: boolean;
  seen: Set<string>;
  /** Items the last completion of an agent claimed when the time cap stopped it: claimed, not worked. */
  held: number;
  nextMs: number[];
  doneMs: number[];
}

/**
 * Opens `count` connections of a postgres.js pool (count concurrent queries), so connection set-up
 * (TCP, SCRAM authentication) is not measured as claim latency.
 */
async function openConnections(sql: postgres.Sql, count: number): Promise<void> {
  await Promise.all(Array.from({ length: count }, () => sql`select pg_sleep(0.01)`));
}

/**
 * Runs one loop per agent: claim → (record, refusing a second sighting) → complete, until the
 * claim comes back empty or `capMs` has passed. A claim seen twice throws at once.
 */
/** What a completion answered: nothing more (the loop claims with `claim`), or the id it claimed next (null: none was left). */
type Completed = undefined | void | { next: string | null };

/**
 * Every agent cycles claim → complete until nothing is left or `capMs` ran out. A completion that
 * also claims (`done` with `next`) hands the loop its next item: that cycle has no separate claim,
 * and its one request's time counts as both the `done` and the `next` latency (what the agent
 * waits for its next item).
 */
async function agentLoops(
  agents: Agent[],
  claim: (a: Agent) => Promise<string | undefined>,
  complete: (a: Agent, id: string) => Promise<Completed>,
  capMs: number,
): Promise<LoopResult> {
  const seen = new Set<string>();
  const nextMs: number[] = [];
  const doneMs: number[] = [];
  let cycles = 0;
  let held = 0;
  let emptied = false;
  const t0 = performance.now();
  const deadline = t0 + capMs;
  let tEnd = t0;
  await Promise.all(
    agents.map(async (a) => {
      let chained: string | null | undefined; // claimed by the last completion
      // An item in hand is worked even after another agent found the backlog empty.
      while (performance.now() < deadline && (!emptied || typeof chained === 'string')) {
        let id: string | undefined;
        const c0 = performance.now();
        if (chained !== undefined) id = chained ?? undefined;
        else {
          id = await claim(a);
          nextMs.push(performance.now() - c0);
        }
        const c1 = performance.now();
        if (id === undefined) {
          emptied = true;
          break;
        }
        if (seen.has(id)) throw new Error(`DOUBLE CLAIM: item ${id} was handed out twice`);
        seen.add(id);
        const done = await complete(a, id);
        const c2 = performance.now();
        doneMs.push(c2 - c1);
        chained = done?.next;
        if (chained !== undefined) nextMs.push(c2 - c1);
        cycles++;
        tEnd = c2;
      }
      if (typeof chained === 'string') {
        // Stopped by the cap holding a claim its last completion made.
        if (seen.has(chained)) throw new Error(`DOUBLE CLAIM: item ${chained} was handed out twice`);
        seen.add(chained);
        held++;
      }
    }),
  );
  return { cycles, elapsedMs: tEnd - t0, emptied, seen, held, nextMs, doneMs };
}

function result(contender: Contender, n: number, backlog: number, r: LoopResult, verified: string): ClaimRun {
  return {
    contender,
    n,
    backlog,
    cycles: r.cycles,
    elapsedMs: round(r.elapsedMs, 1),
    perSecond: round(r.cycles / (r.elapsedMs / 1000), 1),
    emptied: r.cycles === backlog,
    next: summarize(r.nextMs),
    done: summarize(r.doneMs),
    verified,
  };
}

/**
 * The default team's condition on `todos` when the schema has teams (this release), none on a
 * schema from before them (`--server-root` of an older checkout).
 */
async function teamColumn(sql: postgres.Sql): Promise<string | null> {
  const [c] = await sql`select 1 from information_schema.columns where table_name = 'todos' and column_name = 'team_id'`;
  return c ? 'tm-default' : null;
}

/**
 * Coord's claim, one statement: pick with SKIP LOCKED on the ready index in the claim order (team,
 * scope, priority desc, position, id: the statement Coord runs, src/todos/todos.repo.ts), guarded
 * update, event row.
 */
function rawClaim(sql: postgres.Sql, team: string | null, scope: string, self: string, events: boolean) {
  return sql<{ id: string }[]>`
    with pick as (
      select id from todos
       where ${team ? sql`team_id = ${team} and` : sql``} scope = ${scope} and status = 'todo' and owner is null and unfinished_deps = 0
         and (assignee is null or assignee = ${self})
       order by priority desc, position, id
       limit 1
       for update skip locked),
    c as (
      update todos t set status = 'in-progress', owner = ${self}, revision = t.revision + 1, updated_at = now(), progress_at = now()
        from pick
       where t.id = pick.id and t.status = 'todo' and t.owner is null and t.unfinished_deps = 0
      returning t.id, t.scope, t.owner, t.revision),
    ev as (
      insert into events (topic, event, subject_id, payload)
      select 'todo:' || c.scope, 'claimed', c.id,
             jsonb_build_object('event', 'claimed', 'id', c.id, 'scope', c.scope, 'status', 'in-progress', 'owner', c.owner, 'revision', c.revision)
        from c where ${events})
    select id, revision from c`;
}

/**
 * Coord's completion, one statement: the owner/state/lease guard, the cascade to dependents
 * (readiness count, revision bump on the ones that become ready), and the `done` plus
 * `unblocked` event rows.
 */
function rawComplete(sql: postgres.Sql, id: string, self: string, events: boolean) {
  return sql<{ id: string }[]>`
    with u as (
      update todos t set status = 'done', revision = t.revision + 1, updated_at = now(), progress_at = null
       where t.id = ${id} and t.owner is not distinct from ${self} and t.status = any('{in-progress,blocked}'::text[])
         and not (t.status = 'in-progress' and t.progress_at + make_interval(secs => ${LEASE_MS}::float8 / 1000) <= now())
      returning t.id, t.scope, t.owner, t.revision),
    d as (
      update todos t
         set unfinished_deps = t.unfinished_deps - 1,
             revision = t.revision + case when t.status = 'todo' and t.unfinished_deps = 1 then 1 else 0 end,
             updated_at = case when t.status = 'todo' and t.unfinished_deps = 1 then now() else t.updated_at end
        from todo_dependencies e, u
       where e.dependency_id = u.id and t.id = e.todo_id
      returning t.id, t.scope, t.revision, (t.status = 'todo' and t.unfinished_deps = 0) as ready),
    ev as (
      insert into events (topic, event, subject_id, payload)
      select 'todo:' || u.scope, 'done', u.id,
             jsonb_build_object('event', 'done', 'id', u.id, 'scope', u.scope, 'status', 'done', 'owner', u.owner, 'revision', u.revision)
        from u where ${events}
      union all
      select 'todo:' || d.scope, 'unblocked', d.id,
             jsonb_build_object('event', 'unblocked', 'id', d.id, 'scope', d.scope, 'status', 'todo', 'revision', d.revision)
        from d where ${events} and d.ready)
    select id from u`;
}
