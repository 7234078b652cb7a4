/**
 * Task graph execution (goal 4): the time per call of the Task Graph v1 execution
 * routes at their large sizes, over HTTP against the real server, printed as p50 / p99 per call
 * kind (client wall time on 127.0.0.1) beside the server's own mean for the same calls (from its
 * `coord_http_request_duration_seconds` histogram, read from `/metrics` before and after).
 *
 * - **run** (`POST /v1/graphs/{id}/run`): a graph of `wave` independent subtasks with
 *   `maxConcurrency = wave` and an Intent Map (4 disjoint patterns per subtask, policy warn), so
 *   one run dispatches the whole wave under the graph lock: the plan, the write-intent check
 *   against every selected subtask, and per subtask a dispatch session, its token, the engine
 *   claim and the events. One sample per graph (`graphs` graphs).
 * - **complete** (`POST …/subtasks/{sid}/complete`): IMPLEMENTATION_DONE evidence with `paths`
 *   changed paths (committedChanges, status M, inside the subtask's write intent) for every
 *   dispatched subtask: body parse and validation, Scope Audit v1 over every path, the stored
 *   evidence, the engine's done and the session stop. The body is serialised before the clock
 *   starts.
 * - **claim** (`POST …/subtasks/{sid}/claim`): the same locked claim for one subtask at a time,
 *   by the owner, on one more graph of `wave` subtasks (a figure beside run's).
 * - **plan** (`GET /v1/graphs/{id}/plan`): Graph Preflight of a graph with every subtask READY and
 *   an Intent Map of disjoint wildcard patterns, so the wave derivation compares every candidate
 *   with every selected subtask, pattern by pattern. The goal names 256 subtasks × 256 patterns;
 *   the contract caps an Intent Map at 4,096 patterns in all (and 1 MiB), so that map is refused
 *   (the section checks it is, through `POST /v1/graphs/validate`, and prints the refusal) and
 *   the two largest legal shapes are timed instead: 256 subtasks × 16 patterns and 16 × 256.
 *
 * Every answer is checked (the wave selected in full, SUCCEEDED with no drift, the plan's wave).
 */
import { randomBytes } from 'node:crypto';
import type { Pool } from 'undici';
import { call } from './lib/http.js';
import { round, summarize, type Summary } from './lib/stats.js';

export interface GraphCall {
  /** run, complete, claim, plan */
  kind: string;
  /** The size in words. */
  what: string;
  client: Summary;
  /** The server's mean time for these calls (its latency histogram's sum / count), ms; null if unreadable. */
  serverMeanMs: number | null;
}

export interface GraphsResult {
  wave: number;
  paths: number;
  graphs: number;
  calls: GraphCall[];
  /** The issue's plan shape (subtasks × patterns) and what validate answered to it. */
  refusedPlan: { subtasks: number; patterns: number; status: number; message: string };
}

export interface GraphsOptions {
  /** Subtasks per run graph (= maxConcurrency, ≤ 32). */
  wave: number;
  /** Changed paths per completion. */
  paths: number;
  /** Run graphs (one run sample and `wave` completions each). */
  graphs: number;
  /** Plan shapes [subtasks, patterns per subtask], and calls per shape. */
  planShapes: [number, number][];
  planCalls: number;
  /** The issue's plan shape, expected to be refused by the contract. */
  refusedShape: [number, number];
}

const AGENT = 'codex';
const commit = () => randomBytes(20).toString('hex');
const sid = (i: number) => `s${String(i).padStart(3, '0')}`;
/** The 4 disjoint patterns of run subtask `s`. */
const runIntent = (s: string) => [`src/${s}/**`, `test/${s}/**`, `docs/${s}/*.md`, `packages/${s}/lib/**`];
/** `n` changed paths inside `s`'s write intent. */
function changedPaths(s: string, n: number): { status: 'M'; path: string }[] {
  const out: { status: 'M'; path: string }[] = [];
  for (let i = 0; i < n; i++) {
    const k = i % 4;
    const path =
      k === 0
        ? `src/${s}/mod${i % 97}/file${i}.ts`
        : k === 1
          ? `test/${s}/case${i % 31}/file${i}.test.ts`
          : k === 2
            ? `docs/${s}/page${i}.md`
            : `packages/${s}/lib/part${i % 13}/f${i}.js`;
    out.push({ status: 'M', path });
  }
  return out;
}

function graphDoc(id: string, subtasks: number, maxConcurrency: number) {
  return {
    schemaVersion: 1,
    parentTask: { id, title: `Bench graph ${id}`, planner: AGENT, reviewer: AGENT },
    subtasks: Array.from({ length: subtasks }, (_, i) => ({ id: sid(i), implementer: AGENT, spec: `Do ${sid(i)}.`, dependsOn: [] })),
    maxConcurrency,
  };
}

function intentMap(id: string, subtasks: number, patterns: (s: string) => string[]) {
  return {
    schemaVersion: 1,
    parentTaskId: id,
    scopePolicy: 'warn',
    subtasks: Array.from({ length: subtasks }, (_, i) => ({ id: sid(i), writeIntent: patterns(sid(i)) })),
  };
}

/** `n` disjoint wildcard patterns of subtask `s` (every pair must be compared segment by segment). */
const planIntent = (n: number) => (s: string) => Array.from({ length: n }, (_, j) => `src/${s}/area${j}/**`);

/** One request with an already serialised JSON body (so client-side serialisation is not timed). */
async function postRaw(pool: Pool, path: string, token: string, body: string): Promise<{ status: number; body: any }> {
  const res = await pool.request({ method: 'POST', path, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body });
  const text = await res.body.text();
  return { status: res.statusCode, body: text ? JSON.parse(text) : undefined };
}

/** Sum and count of the server's latency histogram per `METHOD route` (status 200 and 201), from `/metrics`. */
async function serverTimes(pool: Pool): Promise<Map<string, { sum: number; count: number }>> {
  const out = new Map<string, { sum: number; count: number }>();
  const res = await pool.request({ method: 'GET', path: '/metrics' });
  const text = await res.body.text();
  if (res.statusCode !== 200) return out;
  for (const line of text.split('\n')) {
    const m = /^coord_http_request_duration_seconds_(sum|count)\{([^}]*)\} (\S+)$/.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries([...m[2].matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (labels.status !== '200' && labels.status !== '201') continue;
    const key = `${labels.method} ${labels.route}`;
    const e = out.get(key) ?? { sum: 0, count: 0 };
    e[m[1] as 'sum' | 'count'] += Number(m[3]);
    out.set(key, e);
  }
  return out;
}

/** The server's mean ms for `key` between two readings (null when it cannot be read or no call was counted). */
function serverMean(
  before: Map<string, { sum: number; count: number }>,
  after: Map<string, { sum: number; count: number }>,
  key: string,
  expected: number,
): number | null {
  const a = after.get(key);
  const b = before.get(key) ?? { sum: 0, count: 0 };
  if (!a || a.count - b.count !== expected) return null;
  return round(((a.sum - b.sum) / (a.count - b.count)) * 1000, 2);
}

const RUN = 'POST /v1/graphs/:id/run';
const COMPLETE = 'POST /v1/graphs/:id/subtasks/:sid/complete';
const CLAIM = 'POST /v1/graphs/:id/subtasks/:sid/claim';
const PLAN = 'GET /v1/graphs/:id/plan';

/** Runs the section as a fresh owner session (the graphs' creator) on `pool`'s server. */
export async function graphsBench(pool: Pool, adminToken: string, o: GraphsOptions, progress: (m: string) => void = () => {}): Promise<GraphsResult> {
  if (o.wave < 1 || o.wave > 32) throw new Error('graphs: the wave is 1..32 subtasks (maxConcurrency)');
  const agent = await call(pool, 'POST', '/v1/agents', adminToken, { id: AGENT }, [201, 409]);
  if (agent.status === 409 && agent.body?.code !== 'agent_exists') throw new Error(`graphs: agent ${AGENT}: ${JSON.stringify(agent.body)}`);
  const owner = (await call(pool, 'POST', '/v1/sessions', adminToken, { name: 'graphs-owner' })).body.token as string;
  const tag = randomBytes(3).toString('hex');
  const create = async (id: string, subtasks: number, maxConcurrency: number, patterns: (s: string) => string[]) => {
    const r = await postRaw(
      pool,
      '/v1/graphs',
      owner,
      JSON.stringify({ graph: graphDoc(id, subtasks, maxConcurrency), intentMap: intentMap(id, subtasks, patterns) }),
    );
    if (r.status !== 201) throw new Error(`graphs: create ${id}: HTTP ${r.status} ${JSON.stringify(r.body).slice(0, 500)}`);
  };

  // Setup (not timed): the run graphs and the claim graph.
  const runIds = Array.from({ length: o.graphs }, (_, g) => `task-bench-${tag}-wave-${g}`);
  for (const id of runIds) await create(id, o.wave, o.wave, runIntent);
  const claimId = `task-bench-${tag}-claim`;
  await create(claimId, o.wave, o.wave, runIntent);
  // Warm-up (not recorded): a small graph through run and complete.
  const warmId = `task-bench-${tag}-warm`;
  await create(warmId, 2, 2, runIntent);
  const warmBase = commit();
  const warm = await call(pool, 'POST', `/v1/graphs/${warmId}/run`, owner, { baseCommit: warmBase });
  for (const d of warm.body.dispatches) {
    const body = JSON.stringify({
      attempt: d.attempt,
      graphBaseCommit: warmBase,
      implementationCommit: commit(),
      committedChanges: changedPaths(d.subtaskId, 100),
      dirtyChanges: [],
      dirtyWorktreeAvailable: true,
    });
    const r = await postRaw(pool, `/v1/graphs/${warmId}/subtasks/${d.subtaskId}/complete`, owner, body);
    if (r.status !== 200) throw new Error(`graphs: warm-up complete: HTTP ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
  }

  const calls: GraphCall[] = [];
  // run: one sample per graph; complete: every dispatched subtask, each graph right after its run.
  progress(`graphs: run × ${o.graphs} (waves of ${o.wave}), then complete × ${o.graphs * o.wave} with ${o.paths.toLocaleString('en-US')} changed paths each`);
  const runMs: number[] = [];
  const completeMs: number[] = [];
  const base = commit();
  let s0 = await serverTimes(pool);
  const bodies = new Map<string, string>();
  for (const id of runIds) {
    const t0 = performance.now();
    const r = await call(pool, 'POST', `/v1/graphs/${id}/run`, owner, { baseCommit: base });
    runMs.push(performance.now() - t0);
    if (r.body.selected.length !== o.wave || r.body.dispatches.length !== o.wave)
      throw new Error(`graphs: run of ${id} selected ${r.body.selected.length} of ${o.wave}`);
    for (const d of r.body.dispatches as { subtaskId: string; attempt: number }[]) {
      let body = bodies.get(d.subtaskId);
      if (body === undefined) {
        body = JSON.stringify({
          graphBaseCommit: base,
          implementationCommit: '@',
          committedChanges: changedPaths(d.subtaskId, o.paths),
          dirtyChanges: [],
          dirtyWorktreeAvailable: true,
        });
        bodies.set(d.subtaskId, body);
      }
      const payload = `{"attempt":${d.attempt},${body.slice(1).replace('"@"', `"${commit()}"`)}`;
      const t1 = performance.now();
      const c = await postRaw(pool, `/v1/graphs/${id}/subtasks/${d.subtaskId}/complete`, owner, payload);
      completeMs.push(performance.now() - t1);
      if (c.status !== 200 || c.body.state !== 'SUCCEEDED' || c.body.scopeEvidence?.drift !== false) {
        throw new Error(`graphs: complete ${id}/${d.subtaskId}: HTTP ${c.status} ${JSON.stringify(c.body).slice(0, 500)}`);
      }
    }
  }
  let s1 = await serverTimes(pool);
  calls.push({
    kind: 'run',
    what: `a wave of ${o.wave} subtasks (4 patterns each)`,
    client: summarize(runMs),
    serverMeanMs: serverMean(s0, s1, RUN, runMs.length),
  });
  calls.push({
    kind: 'complete',
    what: `evidence of ${o.paths.toLocaleString('en-US')} changed paths`,
    client: summarize(completeMs),
    serverMeanMs: serverMean(s0, s1, COMPLETE, completeMs.length),
  });

  progress(`graphs: claim × ${o.wave} (one subtask at a time)`);
  const claimMs: number[] = [];
  s0 = await serverTimes(pool);
  for (let i = 0; i < o.wave; i++) {
    const t0 = performance.now();
    const r = await call(pool, 'POST', `/v1/graphs/${claimId}/subtasks/${sid(i)}/claim`, owner, { baseCommit: base });
    claimMs.push(performance.now() - t0);
    if (r.body.dispatch?.subtaskId !== sid(i)) throw new Error(`graphs: claim of ${sid(i)} answered ${JSON.stringify(r.body).slice(0, 300)}`);
  }
  s1 = await serverTimes(pool);
  calls.push({
    kind: 'claim',
    what: `one subtask of ${o.wave}, the others running`,
    client: summarize(claimMs),
    serverMeanMs: serverMean(s0, s1, CLAIM, claimMs.length),
  });

  for (const [subtasks, patterns] of o.planShapes) {
    const id = `task-bench-${tag}-plan-${subtasks}x${patterns}`;
    await create(id, subtasks, 32, planIntent(patterns));
    progress(`graphs: plan × ${o.planCalls}: ${subtasks} subtasks × ${patterns} patterns`);
    const ms: number[] = [];
    await call(pool, 'GET', `/v1/graphs/${id}/plan`, owner); // warm-up
    s0 = await serverTimes(pool);
    for (let i = 0; i < o.planCalls; i++) {
      const t0 = performance.now();
      const r = await call(pool, 'GET', `/v1/graphs/${id}/plan`, owner);
      ms.push(performance.now() - t0);
      const want = Math.min(32, subtasks);
      if (r.body.plan?.wave?.selected?.length !== want)
        throw new Error(`graphs: plan of ${id} selected ${JSON.stringify(r.body.plan?.wave?.selected)?.slice(0, 200)}, expected ${want}`);
    }
    s1 = await serverTimes(pool);
    calls.push({
      kind: 'plan',
      what: `${subtasks} subtasks × ${patterns} patterns (all READY)`,
      client: summarize(ms),
      serverMeanMs: serverMean(s0, s1, PLAN, ms.length),
    });
  }

  // The issue's shape: refused by the contract (4,096 patterns in all, 1 MiB).
  const [rs, rp] = o.refusedShape;
  const rid = `task-bench-${tag}-plan-refused`;
  const refused = await postRaw(
    pool,
    '/v1/graphs/validate',
    owner,
    JSON.stringify({ graph: graphDoc(rid, rs, 32), intentMap: intentMap(rid, rs, planIntent(rp)) }),
  );
  if (refused.status === 200) throw new Error(`graphs: validate accepted ${rs} × ${rp} patterns; time that shape instead`);
  return {
    wave: o.wave,
    paths: o.paths,
    graphs: o.graphs,
    calls,
    refusedPlan: { subtasks: rs, patterns: rp, status: refused.status, message: String(refused.body?.message ?? refused.body?.code ?? '') },
  };
}
