/**
 * `npm run chaos`: Coord under faults, checked against the database afterwards.
 *
 * Three replicas (the real `src/server.ts`, each its own process) share one durable embedded
 * Postgres (`fsync` on: an acknowledged commit must survive a crash). `--agents` sessions loop
 * `next` → `done` against them while a producer adds items and one SSE follower per replica
 * follows the topic through the SDK (which reconnects with `Last-Event-ID`). Every `--kill-every`
 * seconds a random replica is killed with SIGKILL and restarted on its port; once, half-way, the
 * Postgres postmaster gets SIGQUIT (immediate shutdown: what a crash leaves, crash recovery on the
 * next start) and is started again. Clients fail over to another replica on a network error and
 * retry a 503 after its `Retry-After`.
 *
 * Then it checks, from the database and what clients were told:
 * - double claims: an item claimed twice with no release (`todo`, `dependency-blocked`) between,
 *   in the event log's `(tx, id)` order, or completed twice;
 * - lost acknowledged writes: an add answered 201 whose item is missing, a `done` answered 200
 *   whose item is not done, a claim answered 200 with no `claimed` event of that owner and revision;
 * - event gaps and duplicates per follower: what it received against the topic's rows;
 * - 5xx outside the outage window (Postgres down until `--grace` seconds after it is back);
 * - a replica that exited by itself (it is restarted, and the run goes on).
 * It prints a report and exits 1 on any violation (2 when the harness itself failed).
 *
 * With `--failover`, Postgres is a primary with a synchronous standby (chaos/pg-pair.ts, Debian's
 * PostgreSQL) and the replicas' `DATABASE_URL` names both hosts with
 * `target_session_attrs=primary`; half-way the primary's processes get SIGKILL and, after
 * `--promote-after` seconds (an HA manager's detection time), the standby is promoted. The same
 * checks hold across the switch; the report adds how long writes were refused (`failover`).
 * `--async-standby` makes the standby asynchronous, to measure what a failover then loses.
 * A quarter of the way in, it first ends every connection of the replicas to the live primary (a
 * network blip, both servers alive: the requests on them get 503; from 2 s later any 5xx or any
 * event gap is a violation; the report's `blip`); `--no-blip` leaves it out. It found a driver
 * defect: connections came back on the standby (patches/README.md, porsager/postgres#1223).
 *
 * Flags: --duration <s> (300) --agents <n> (48) --replicas <n> (3) --kill-every <s> (20)
 *        --postgres-restart / --no-postgres-restart (on) --failover (off) --promote-after <s> (1)
 *        --async-standby (off) --blip / --no-blip (on with --failover)
 *        --grace <s> (15) --lease <s> (5) --keep (keep the temp folder and the replicas' logs)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import postgres from 'postgres';
import { createClient } from '../sdk/src/index.js';
import { freePort, startEmbeddedPostgres, type EmbeddedHandle } from '../src/db/embedded.js';
import { newToken } from '../src/lib/ids.js';
import { ensureBuilt } from '../scripts/build.mjs';
import { startPgPair, type PgPair } from './pg-pair.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values: opts } = parseArgs({
  options: {
    duration: { type: 'string', default: '300' },
    agents: { type: 'string', default: '48' },
    replicas: { type: 'string', default: '3' },
    'kill-every': { type: 'string', default: '20' },
    'postgres-restart': { type: 'boolean', default: true },
    'no-postgres-restart': { type: 'boolean', default: false },
    failover: { type: 'boolean', default: false },
    'async-standby': { type: 'boolean', default: false },
    blip: { type: 'boolean', default: true },
    'no-blip': { type: 'boolean', default: false },
    'promote-after': { type: 'string', default: '1' },
    grace: { type: 'string', default: '15' },
    lease: { type: 'string', default: '5' },
    keep: { type: 'boolean', default: false },
  },
});
const DURATION_MS = Number(opts.duration) * 1000;
const AGENTS = Number(opts.agents);
const REPLICAS = Number(opts.replicas);
const KILL_EVERY_MS = Number(opts['kill-every']) * 1000;
const FAILOVER = opts.failover;
const PROMOTE_AFTER_MS = Number(opts['promote-after']) * 1000;
const PG_RESTART = !FAILOVER && opts['postgres-restart'] && !opts['no-postgres-restart'];
const GRACE_MS = Number(opts.grace) * 1000;
const LEASE_S = Number(opts.lease);
const REQUEST_TIMEOUT_MS = 20_000;

const t0 = Date.now();
const log = (m: string) => console.error(`chaos +${((Date.now() - t0) / 1000).toFixed(1)}s: ${m}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const work = mkdtempSync(path.join(os.tmpdir(), 'coord-chaos-'));

// ---------------------------------------------------------------------------------------------
// Postgres and replicas

let pg: EmbeddedHandle | undefined;
let pair: PgPair | undefined;
let pairDir: string | undefined;
let pgPort = 0;
/** What the replicas and the checks connect to: the embedded server, or both hosts of the pair. */
let dbUrl = '';
const outages: { from: number; to: number }[] = [];
/** The failover, when there was one: when the primary died and when the standby took writes. */
let failover: { killedAt: number; promotedAt: number } | undefined;
/** The `--blip`, when it happened: when, and how many connections to the live primary it ended. */
let blip: { at: number; ended: number } | undefined;

async function startPostgres(): Promise<void> {
  if (FAILOVER) {
    // Its own folder, which the postgres OS user (the servers' owner when run as root) can reach.
    pairDir = mkdtempSync(path.join(os.tmpdir(), 'coord-chaos-pg-'));
    chmodSync(pairDir, 0o755);
    pair = await startPgPair(pairDir, log, { synchronous: !opts['async-standby'] });
    dbUrl = pair.url;
    return;
  }
  pg = await startEmbeddedPostgres({ dataDir: path.join(work, 'db'), persistent: true, port: pgPort || undefined, log: () => {} });
  pgPort = pg.port;
  dbUrl = pg.url;
}

/** SIGQUIT to the postmaster: immediate shutdown, no checkpoint; the next start runs crash recovery. */
async function crashPostgres(): Promise<void> {
  const pid = Number(readFileSync(path.join((pg as EmbeddedHandle).clusterDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  process.kill(pid, 'SIGQUIT');
  for (let i = 0; i < 200; i++) {
    try {
      process.kill(pid, 0);
      await sleep(50);
    } catch {
      return;
    }
  }
  throw new Error(`postmaster ${pid} did not exit after SIGQUIT`);
}

interface Replica {
  index: number;
  port: number;
  base: string;
  child?: ChildProcess;
  up: boolean;
  starts: number;
  /** Set while the harness itself kills it. */
  killing?: boolean;
  /** Set while {@link restartReplica} brings it back. */
  restarting?: boolean;
}
const unexpectedExits: string[] = [];

const adminToken = newToken();
const replicas: Replica[] = [];

function replicaEnv(r: Replica): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('COORD_') && k !== 'DATABASE_URL' && k !== 'PORT') env[k] = v;
  const dataDir = path.join(work, `replica-${r.index}`);
  mkdirSync(dataDir, { recursive: true });
  return {
    ...env,
    DATABASE_URL: dbUrl,
    PORT: String(r.port),
    HOST: '127.0.0.1',
    COORD_DATA_DIR: dataDir,
    COORD_ADMIN_TOKEN: adminToken,
    COORD_LOG_LEVEL: 'warn',
    COORD_TODO_CLAIM_LEASE: `${LEASE_S}s`,
    COORD_TODO_SWEEP_INTERVAL: '1s',
  };
}

async function startReplica(r: Replica): Promise<void> {
  const out = createWriteStream(path.join(work, `replica-${r.index}.log`), { flags: 'a' });
  const child = spawn(process.execPath, ['--enable-source-maps', (await ensureBuilt()).server], {
    cwd: ROOT,
    env: replicaEnv(r),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.pipe(out);
  child.stderr!.pipe(out);
  r.child = child;
  r.starts += 1;
  child.on('exit', (code, signal) => {
    if (r.child !== child) return;
    r.up = false;
    // A replica that dies on its own (not our SIGKILL) is a defect: say so, and bring it back.
    if (!r.killing && !stopping && !r.restarting) {
      const tail = readFileSync(path.join(work, `replica-${r.index}.log`), 'utf8')
        .split('\n')
        .filter(Boolean)
        .slice(-12)
        .join(' | ');
      unexpectedExits.push(
        `replica ${r.index} exited by itself (${signal ?? `code ${code}`}) at +${((Date.now() - t0) / 1000).toFixed(1)}s: ${tail.slice(0, 1500)}`,
      );
      log(`replica ${r.index}: exited by itself; restarting`);
      void restartReplica(r);
    }
  });
  r.killing = false;
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null)
      throw new Error(`replica ${r.index} exited with ${child.exitCode} while starting (log: ${path.join(work, `replica-${r.index}.log`)})`);
    try {
      const res = await fetch(`${r.base}/readyz`, { signal: AbortSignal.timeout(2000) });
      if (res.status === 200) {
        r.up = true;
        return;
      }
    } catch {
      /* not listening yet */
    }
    await sleep(100);
  }
  throw new Error(`replica ${r.index} not ready within 60 s`);
}

/**
 * Brings a replica that died by itself back: a start while Postgres is still down fails (the
 * server needs its database to start), so it retries until one succeeds, one restart at a time.
 */
async function restartReplica(r: Replica): Promise<void> {
  r.restarting = true;
  try {
    while (!stopping && !r.up) {
      await sleep(500);
      await startReplica(r).catch((err) => log(`replica ${r.index}: restart failed, retrying: ${(err as Error).message}`));
    }
  } finally {
    r.restarting = false;
  }
}

function killReplica(r: Replica): void {
  r.up = false;
  r.killing = true;
  r.child?.kill('SIGKILL');
}

// ---------------------------------------------------------------------------------------------
// Clients

interface Sample {
  at: number;
  status: number;
  route: string;
  replica: number;
  /** The problem+json `code` of the answer (`busy`, `database_unavailable`, …), when it had one. */
  code?: string;
}
const fiveXx: Sample[] = [];

/** The problem `code` of an error answer's body, or undefined when it is not problem+json. */
function problemCode(text: string): string | undefined {
  try {
    const code = (JSON.parse(text) as { code?: unknown }).code;
    return typeof code === 'string' ? code : undefined;
  } catch {
    return undefined;
  }
}
const stats = { requests: 0, networkErrors: 0, timeouts: 0, retried503: 0 };

type Outcome = { status: number; body: any; replica: number; retryAfter?: number } | { status: 0; error: string; replica: number; retryAfter?: undefined };

/** One request to replica `i`: a status and JSON body, or status 0 on a network error/timeout. */
async function request(i: number, method: string, route: string, urlPath: string, token: string, body?: unknown): Promise<Outcome> {
  const r = replicas[i];
  stats.requests += 1;
  try {
    const res = await fetch(r.base + urlPath, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const text = await res.text();
    if (res.status >= 500) fiveXx.push({ at: Date.now(), status: res.status, route, replica: i, code: problemCode(text) });
    if (res.status === 503) stats.retried503 += 1;
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = text;
    }
    const retryAfter = Number(res.headers.get('retry-after'));
    return { status: res.status, body: parsed, replica: i, ...(res.status === 503 && retryAfter > 0 ? { retryAfter } : {}) };
  } catch (err) {
    const e = err as Error;
    if (e.name === 'TimeoutError') stats.timeouts += 1;
    else stats.networkErrors += 1;
    return { status: 0, error: `${e.name}: ${e.message}`, replica: i };
  }
}

/**
 * Sends until an answer that is not "try again": a network error fails over to the next replica,
 * a 503 waits (its `Retry-After`, at most 1 s) and retries. `stop` ends the retries (then the
 * outcome is unknown: status 0).
 */
async function send(start: number, method: string, route: string, urlPath: string, token: string, body?: unknown): Promise<Outcome> {
  let i = start;
  for (let attempt = 0; ; attempt++) {
    const o = await request(i, method, route, urlPath, token, body);
    if (o.status !== 0 && o.status !== 503) return o;
    if (stopping) return o;
    if (o.status === 0) i = (i + 1) % replicas.length;
    await sleep(o.retryAfter ? Math.min(1000, o.retryAfter * 1000) : Math.min(1000, 50 * 2 ** Math.min(attempt, 5)));
  }
}

// What clients were told.
const ackedAdds = new Set<string>();
const ackedClaims: { id: string; owner: string; revision: number }[] = [];
const ackedDones: { id: string; owner: string }[] = [];
/** When each acknowledged write (an add's 201, a done's 200) was answered. */
const acks: number[] = [];
let stopping = false;

let added = 0;
/** Adds items while the backlog (acknowledged adds not yet done) is under 300; `lane` picks its first replica. */
async function producer(lane: number, rootToken: string, scope: string): Promise<void> {
  let i = lane;
  while (!stopping) {
    if (ackedAdds.size - ackedDones.length > 300) {
      await sleep(50);
      continue;
    }
    const o = await send(i++ % replicas.length, 'POST', 'POST /v1/todos', '/v1/todos', rootToken, { title: `chaos item ${added++}`, scope });
    if (o.status === 201) {
      ackedAdds.add(o.body.item.id);
      acks.push(Date.now());
    }
  }
}

async function agent(k: number, id: string, token: string, scope: string): Promise<void> {
  let home = k % replicas.length;
  while (!stopping) {
    const o = await send(home, 'POST', 'POST /v1/todos/next', '/v1/todos/next', token, { scope });
    home = o.replica;
    if (o.status !== 200 || !o.body?.claimed) {
      await sleep(o.status === 200 ? 100 : 20);
      continue;
    }
    const item = o.body.item as { id: string; owner: string; revision: number };
    ackedClaims.push({ id: item.id, owner: item.owner, revision: item.revision });
    if (item.owner !== id) throw new Error(`agent ${id} was told it claimed ${item.id} for ${item.owner}`);
    await sleep(Math.random() * 30);
    const d = await send(home, 'POST', 'POST /v1/todos/{id}/done', `/v1/todos/${item.id}/done`, token);
    if (d.status === 200) {
      ackedDones.push({ id: item.id, owner: id });
      acks.push(Date.now());
    }
  }
}

interface Follower {
  replica: number;
  received: number[];
  resyncs: number;
  reconnects: number;
  stream?: { close(): void };
  done?: Promise<void>;
}

function follow(replica: number, token: string, topic: string): Follower {
  const f: Follower = { replica, received: [], resyncs: 0, reconnects: 0 };
  const client = createClient({ baseUrl: replicas[replica].base, token });
  const stream = client.events.follow(topic, {
    after: 0,
    minDelayMs: 100,
    maxDelayMs: 1000,
    idleTimeoutMs: 10_000,
    onReconnect: () => {
      f.reconnects += 1;
      log(`follower on replica ${replica}: reconnecting after ${f.received.at(-1) ?? 0}`);
    },
  });
  f.stream = stream;
  f.done = (async () => {
    for await (const e of stream) {
      if (e.event === 'resync') f.resyncs += 1;
      else if (e.seq !== undefined) f.received.push(e.seq);
    }
  })().catch((err) => log(`follower on replica ${replica} ended: ${(err as Error).message}`));
  return f;
}

// ---------------------------------------------------------------------------------------------
// The run

async function chaos(): Promise<void> {
  // The schedule counts from when the load starts, not from the script's start: starting the
  // servers can take longer than half the run on a loaded machine, and a failover before the first
  // write would check nothing.
  const start = Date.now();
  let nextKill = start + KILL_EVERY_MS;
  let pgDone = !PG_RESTART && !FAILOVER;
  const pgAt = start + DURATION_MS / 2;
  const end = start + DURATION_MS;
  while (Date.now() < end) {
    if (!blip && FAILOVER && opts.blip && !opts['no-blip'] && Date.now() >= start + DURATION_MS / 4) {
      // The requests running on the ended connections fail (57P01: 503); after 2 s, any 5xx means
      // the replicas reconnected somewhere they cannot write.
      const at = Date.now();
      blip = { at, ended: await (pair as PgPair).dropClients() };
      log(`Postgres: ended ${blip.ended} connections to the primary (both servers alive)`);
      outages.push({ from: at, to: Date.now() + 2000 });
      continue;
    }
    if (!pgDone && FAILOVER && Date.now() >= pgAt) {
      pgDone = true;
      const from = Date.now();
      log('Postgres: SIGKILL to every process of the primary');
      (pair as PgPair).killPrimary();
      await sleep(PROMOTE_AFTER_MS);
      await (pair as PgPair).promoteStandby();
      const to = Date.now();
      failover = { killedAt: from, promotedAt: to };
      outages.push({ from, to: to + GRACE_MS });
      log(`Postgres: standby promoted ${((to - from) / 1000).toFixed(1)} s after the primary died`);
      continue;
    }
    if (!pgDone && Date.now() >= pgAt) {
      pgDone = true;
      const from = Date.now();
      log('Postgres: SIGQUIT (crash)');
      await crashPostgres();
      await sleep(2000);
      await startPostgres();
      const to = Date.now();
      outages.push({ from, to: to + GRACE_MS });
      log(`Postgres: back after ${((to - from) / 1000).toFixed(1)} s (crash recovery done)`);
      continue;
    }
    if (Date.now() >= nextKill) {
      nextKill = Date.now() + KILL_EVERY_MS;
      const r = replicas[Math.floor(Math.random() * replicas.length)];
      if (r.restarting || !r.up) continue;
      log(`replica ${r.index}: SIGKILL`);
      killReplica(r);
      await sleep(1000);
      await startReplica(r).catch((err) => log(`replica ${r.index}: restart failed: ${(err as Error).message}`));
      if (r.up) log(`replica ${r.index}: back`);
    }
    await sleep(200);
  }
}

/**
 * The failover as clients saw it: writes acknowledged before and after the primary died, the 503s
 * (how many, first and last, in seconds after the death), and the write stall: the longest time
 * without an acknowledged write from the death on (`stall`: from the last write acknowledged
 * before it to the first after it), which is how long writes were unavailable.
 */
function failoverReport(f: { killedAt: number; promotedAt: number }) {
  const s = (ms: number) => Math.round(ms / 100) / 10;
  const sorted = [...acks].sort((x, y) => x - y);
  let stall = { from: f.killedAt, to: f.killedAt };
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i] <= f.killedAt) continue;
    const from = Math.max(sorted[i - 1], f.killedAt - 60_000);
    if (sorted[i] - from > stall.to - stall.from) stall = { from, to: sorted[i] };
  }
  const refused = fiveXx.filter((x) => x.at >= f.killedAt && x.status === 503);
  return {
    promoteAfterS: s(f.promotedAt - f.killedAt),
    writesAcknowledgedBefore: sorted.filter((a) => a <= f.killedAt).length,
    writesAcknowledgedAfter: sorted.filter((a) => a > f.killedAt).length,
    answered503: refused.length,
    first503S: refused.length ? s(refused[0].at - f.killedAt) : null,
    last503S: refused.length ? s(refused[refused.length - 1].at - f.killedAt) : null,
    writeStallS: s(stall.to - stall.from),
    writeStallFromS: s(stall.from - f.killedAt),
    writesResumedS: s(stall.to - f.killedAt),
    fiveXxOtherThan503: fiveXx.filter((x) => x.at >= f.killedAt && x.status !== 503).length,
  };
}

/** The blip as clients saw it: connections ended, the 503s it caused (how many, the last in seconds after it). */
function blipReport(b: { at: number; ended: number }) {
  const refused = fiveXx.filter((x) => x.at >= b.at && x.at <= b.at + 2000 && x.status === 503);
  return {
    connectionsEnded: b.ended,
    answered503: refused.length,
    last503S: refused.length ? Math.round((refused[refused.length - 1].at - b.at) / 100) / 10 : null,
  };
}

function inOutage(at: number): boolean {
  return outages.some((o) => at >= o.from && at <= o.to);
}

async function verify(scope: string, topic: string, followers: Follower[]): Promise<{ violations: string[]; report: Record<string, unknown> }> {
  const sql = postgres(dbUrl, { max: 2, onnotice: () => {}, types: { bigint: postgres.BigInt } });
  try {
    const events = await sql<{ id: number; tx: string; at: number; event: string; subject_id: string; payload: { owner?: string; revision?: number } }[]>`
      select e.id::float8 as id, e.tx::text as tx, extract(epoch from e.created_at)::float8 * 1000 as at, e.event, e.subject_id, e.payload
        from events e where e.topic = ${topic} order by e.tx, e.id`;
    const items = new Map((await sql<{ id: string; status: string }[]>`select id, status from todos where scope = ${scope}`).map((r) => [r.id, r.status]));
    const violations: string[] = [];

    // Double claims and double completions, in the log's order.
    const holder = new Map<string, string | null>();
    const doneCount = new Map<string, number>();
    const claimedBy = new Set<string>();
    let doubleClaims = 0;
    let doubleDones = 0;
    for (const e of events) {
      const id = e.subject_id;
      if (e.event === 'claimed') {
        if (holder.get(id)) {
          doubleClaims += 1;
          if (doubleClaims <= 5) violations.push(`double claim: ${id} claimed by ${e.payload.owner} while ${holder.get(id)} held it (event ${e.id})`);
        }
        holder.set(id, e.payload.owner ?? '?');
        claimedBy.add(`${id} ${e.payload.owner} ${e.payload.revision}`);
      } else if (e.event === 'todo' || e.event === 'dependency-blocked' || e.event === 'removed') {
        holder.set(id, null);
      } else if (e.event === 'done') {
        holder.set(id, null);
        doneCount.set(id, (doneCount.get(id) ?? 0) + 1);
      }
    }
    for (const [id, n] of doneCount) {
      if (n > 1) {
        doubleDones += 1;
        if (doubleDones <= 5) violations.push(`double completion: ${id} done ${n} times`);
      }
    }
    const doneByAck = new Map<string, number>();
    for (const d of ackedDones) doneByAck.set(d.id, (doneByAck.get(d.id) ?? 0) + 1);
    for (const [id, n] of doneByAck) if (n > 1) violations.push(`double completion acknowledged: ${id} to ${n} agents`);

    // Lost acknowledged writes.
    const lost: string[] = [];
    for (const id of ackedAdds) if (!items.has(id)) lost.push(`add ${id}: answered 201, not stored`);
    for (const d of ackedDones) if (items.get(d.id) !== 'done') lost.push(`done ${d.id}: answered 200, stored ${items.get(d.id) ?? 'missing'}`);
    for (const c of ackedClaims)
      if (!claimedBy.has(`${c.id} ${c.owner} ${c.revision}`))
        lost.push(`claim ${c.id} by ${c.owner} at revision ${c.revision}: answered 200, no such claimed event`);
    for (const l of lost.slice(0, 10)) violations.push(`lost acknowledged write: ${l}`);

    // Followers against the log.
    const expected = events.map((e) => e.id);
    // Each event's place in the log's order, and the event by id: built once for every follower.
    const pos = new Map(expected.map((id, i) => [id, i]));
    const byId = new Map(events.map((e) => [e.id, e]));
    const perFollower = followers.map((f) => {
      const got = new Set(f.received);
      const duplicates = f.received.length - got.size;
      const gaps = expected.filter((id) => !got.has(id)).length;
      let outOfOrder = 0;
      const disorder: string[] = [];
      for (let i = 1; i < f.received.length; i++) {
        if ((pos.get(f.received[i]) ?? -1) > (pos.get(f.received[i - 1]) ?? -1)) continue;
        outOfOrder += 1;
        const [a, b] = [byId.get(f.received[i - 1]), byId.get(f.received[i])];
        const at = (e: typeof a) => (e ? `${e.id} (tx ${e.tx}, ${e.event}, written at +${((e.at - t0) / 1000).toFixed(2)}s)` : '?');
        if (disorder.length < 3) disorder.push(`  received ${at(b)} after ${at(a)}`);
      }
      if (gaps || duplicates || outOfOrder || f.resyncs) {
        violations.push(`follower on replica ${f.replica}: ${gaps} gaps, ${duplicates} duplicates, ${outOfOrder} out of order, ${f.resyncs} resyncs`);
        // Where the first gaps are: each missing event, when it was written and what the follower got around it.
        violations.push(...disorder);
        for (const e of events.filter((x) => !got.has(x.id)).slice(0, 5)) {
          const i = pos.get(e.id) ?? 0;
          const around = f.received.filter((id) => Math.abs((pos.get(id) ?? -1e9) - i) <= 2);
          violations.push(
            `  missing event ${e.id} (tx ${e.tx}, ${e.event}) written at +${((e.at - t0) / 1000).toFixed(2)}s; received around it: ${around.join(' ')}`,
          );
        }
      }
      return { replica: f.replica, received: f.received.length, gaps, duplicates, outOfOrder, resyncs: f.resyncs, reconnects: f.reconnects };
    });

    for (const e of unexpectedExits) violations.push(e);

    // 5xx outside the outage window.
    const outside = fiveXx.filter((s) => !inOutage(s.at));
    for (const s of outside.slice(0, 10))
      violations.push(
        `${s.status}${s.code ? ` ${s.code}` : ''} outside the outage window: ${s.route} on replica ${s.replica} at +${((s.at - t0) / 1000).toFixed(1)}s`,
      );

    const report = {
      durationS: Math.round((Date.now() - t0) / 1000),
      agents: AGENTS,
      replicas: REPLICAS,
      replicaStarts: replicas.map((r) => r.starts),
      postgresRestarts: outages.length - (blip ? 1 : 0),
      outageWindowsS: outages.map((o) => [Math.round((o.from - t0) / 100) / 10, Math.round((o.to - t0) / 100) / 10]),
      requests: stats.requests,
      networkErrors: stats.networkErrors,
      timeouts: stats.timeouts,
      answered503: stats.retried503,
      unexpectedReplicaExits: unexpectedExits.length,
      fiveXxInOutage: fiveXx.length - outside.length,
      fiveXxOutsideOutage: outside.length,
      adds: ackedAdds.size,
      claims: ackedClaims.length,
      dones: ackedDones.length,
      takeOvers: events.filter((e) => e.event === 'todo' && (e.payload as { reason?: string }).reason === 'lease-expired').length,
      events: events.length,
      doubleClaims,
      doubleCompletions: doubleDones,
      lostAcknowledgedWrites: lost.length,
      followers: perFollower,
      ...(failover ? { failover: failoverReport(failover) } : {}),
      ...(blip ? { blip: blipReport(blip) } : {}),
    };
    return { violations, report };
  } finally {
    await sql.end({ timeout: 5 });
  }
}

async function main(): Promise<number> {
  log(
    `${REPLICAS} replicas, ${AGENTS} agents, ${DURATION_MS / 1000} s, a replica killed every ${KILL_EVERY_MS / 1000} s${PG_RESTART ? ', one Postgres crash-restart' : ''}${FAILOVER ? `, one failover to the ${opts['async-standby'] ? 'asynchronous' : 'synchronous'} standby` : ''}; work folder ${work}`,
  );
  await startPostgres();
  for (let i = 0; i < REPLICAS; i++) {
    const port = await freePort();
    replicas.push({ index: i, port, base: `http://127.0.0.1:${port}`, up: false, starts: 0 });
  }
  await Promise.all(replicas.map((r) => startReplica(r)));
  log('replicas ready');

  const root = await send(0, 'POST', 'POST /v1/sessions', '/v1/sessions', adminToken, { name: 'chaos-root' });
  if (root.status !== 201) throw new Error(`root session: ${root.status} ${JSON.stringify((root as { body?: unknown }).body)}`);
  const rootToken = root.body.token as string;
  const scope = `session:${root.body.session.id}`;
  const topic = `todo:${scope}`;
  const sessions = await Promise.all(
    Array.from({ length: AGENTS }, async (_, k) => {
      const s = await send(k % REPLICAS, 'POST', 'POST /v1/sessions', '/v1/sessions', rootToken, { name: `agent-${k}` });
      if (s.status !== 201) throw new Error(`agent session: ${s.status}`);
      return { id: s.body.session.id as string, token: s.body.token as string };
    }),
  );
  const followers = replicas.map((r) => follow(r.index, rootToken, topic));
  const load = [...[0, 1, 2, 3].map((lane) => producer(lane, rootToken, scope)), ...sessions.map((s, k) => agent(k, s.id, s.token, scope))];
  await chaos();
  stopping = true;
  log('load stopping');
  await Promise.all(load);

  // Let every follower catch up with the log (they reconnect on their own).
  const sql = postgres(dbUrl, { max: 1, onnotice: () => {} });
  const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from events where topic = ${topic}`;
  await sql.end();
  const until = Date.now() + 30_000;
  while (Date.now() < until && followers.some((f) => new Set(f.received).size < n)) await sleep(200);
  for (const f of followers) f.stream?.close();

  const { violations, report } = await verify(scope, topic, followers);
  console.log(JSON.stringify(report, null, 2));
  if (violations.length) {
    console.log(`chaos: ${violations.length} violation(s):`);
    for (const v of violations) console.log(`  - ${v}`);
    return 1;
  }
  console.log(
    `chaos: clean (${report.claims} claims, 0 double claims, 0 lost acknowledged writes, 0 event gaps or duplicates, 0 5xx outside the outage window)`,
  );
  return 0;
}

async function cleanup(): Promise<void> {
  stopping = true;
  for (const r of replicas) r.child?.kill('SIGKILL');
  await pg?.stop().catch(() => {});
  pair?.stop();
  if (pairDir && !opts.keep) rmSync(pairDir, { recursive: true, force: true });
  if (!opts.keep) rmSync(work, { recursive: true, force: true });
  else console.error(`chaos: kept ${work}`);
}

const watchdog = setTimeout(() => {
  console.error('chaos: watchdog fired (run took too long)');
  void cleanup().finally(() => process.exit(2));
}, DURATION_MS + 180_000);
watchdog.unref();
process.on('SIGINT', () => void cleanup().finally(() => process.exit(130)));

main()
  .then(async (code) => {
    await cleanup();
    process.exit(code);
  })
  .catch(async (err) => {
    console.error(`chaos: harness failed: ${(err as Error).stack ?? String(err)}`);
    await cleanup();
    process.exit(2);
  });
