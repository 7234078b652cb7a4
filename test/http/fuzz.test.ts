/**
 * A fuzz generated from the OpenAPI document.
 *
 * Every operation of the document the app serves (`app.swagger()` of the code under test, so a
 * new route is fuzzed the day it is added) is one test of RUNS requests. Each test first builds a
 * fresh world (world.ts: its own sessions and the objects of the route's family; the other
 * families' objects belong to a shared base world, so they are foreign ids here), so whatever one
 * batch stops, removes or claims cannot starve the next. Each request is a schema-valid request
 * sampled from the operation's JSON Schemas with the world's real ids, then mutated one to three
 * times (openapi-fuzz.ts): wrong types, missing and extra
 * fields, huge and invalid strings (lone surrogates, NUL, ~1 MB), bad and foreign ids, crafted
 * cursors, other content types, bodies over the limit, broken, missing and other-role tokens,
 * malformed path parameters, other spellings of the request target (percent-encoded, doubled
 * slashes, dot segments, upper case, a trailing slash). `POST /mcp` (JSON-RPC, not in the document) gets the same treatment
 * through its tools. Every answer must hold:
 *
 * - no 5xx;
 * - an error is `application/problem+json` whose `code` is in docs/errors.md with that status,
 *   and is one the operation declares in `x-problem-codes` (or a transport code, decided before
 *   any route runs); Task Graph v1's `TASK_GRAPH_INVALID` keeps the seed's members;
 * - a refused call wrote nothing: the database fingerprint (world.ts) is unchanged.
 *
 * Reproduce a failure with the seed it prints: `COORD_FUZZ_SEED=<seed> COORD_FUZZ_ONLY='<METHOD
 * /path>' npx vitest run test/http/fuzz.test.ts`. `COORD_FUZZ_RUNS` changes the count per route.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderOpenApi } from '../../scripts/gen-openapi.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import {
  catalogue,
  generate,
  operations,
  preview,
  Rng,
  sample,
  send,
  TRANSPORT_CODES,
  type Answer,
  type Examples,
  type FuzzRequest,
  type Operation,
} from './openapi-fuzz.js';
import { admin, buildWorld, fingerprint, newSession, registerWorldAgents, worldGraph, type Part, type World } from './world.js';
import { scaled } from '../helpers/scale.js';

const RUNS = Number(process.env.COORD_FUZZ_RUNS ?? scaled(200, 20));
const SEED = process.env.COORD_FUZZ_SEED === 'random' ? (Math.random() * 2 ** 31) >>> 0 : Number(process.env.COORD_FUZZ_SEED ?? 18_11_2026);
const ONLY = process.env.COORD_FUZZ_ONLY;

// The document is read when the file is collected, so each operation is its own test.
const doc = JSON.parse(await renderOpenApi());
const ops = operations(doc).filter((op) => !ONLY || op.key === ONLY);
const CODES = catalogue();
const BODY_LIMIT = 1024 * 1024;

let t: TestApp;
let baseWorld: World;
let outsider: string;
beforeAll(async () => {
  console.log(`fuzz seed ${SEED}, ${RUNS} requests per route (COORD_FUZZ_SEED=${SEED} reproduces)`);
  // Thousands of mutated tokens from one address, then new sessions from that address: the
  // failed-authentication limit would answer the sessions' first requests 429 (as it should;
  // test/auth/auth-failures.test.ts), so it is off here.
  t = await startTestApp({ config: { bodyLimit: BODY_LIMIT, authFailureLimit: 0 } });
  await registerWorldAgents(admin(t));
  baseWorld = await buildWorld(t);
  outsider = (await newSession(t, { name: 'outsider' })).token;
});
afterAll(async () => t?.close());

/** What each route family needs built fresh (the rest of the world is the base world's). */
function partsFor(op: Operation): Part[] {
  const p = op.path;
  if (p.startsWith('/v1/todos') || p.startsWith('/v1/events') || p.startsWith('/v1/scopes') || p.startsWith('/v1/sessions')) return ['todos'];
  if (p.startsWith('/v1/scenarios')) return ['scenario'];
  if (p.startsWith('/v1/graphs')) return ['graphs'];
  if (p.startsWith('/v1/task-graphs') || p.startsWith('/v1/intents')) return ['metagit'];
  return [];
}

const hex = (rng: Rng, n: number) => Array.from({ length: n }, () => '0123456789abcdef'[rng.int(16)]).join('');

/** Valid bodies the sampler would rarely hit by chance, so mutations start from requests that succeed. */
const EXAMPLES: Examples = {
  'POST /v1/graphs/validate': (_w, rng) => worldGraph(`task-fz-new-${hex(rng, 8)}`),
  'POST /v1/graphs': (_w, rng) => worldGraph(`task-fz-new-${hex(rng, 8)}`),
  'POST /v1/graphs/{id}/subtasks/{sid}/complete': (w, rng) => ({
    graphBaseCommit: w.graphs.base,
    implementationCommit: hex(rng, 40),
    committedChanges: [{ status: rng.pick(['M', 'A', 'D']), path: rng.pick(['src/server/a.ts', 'src/web/b.ts', 'elsewhere.txt']) }],
    dirtyChanges: [],
    dirtyWorktreeAvailable: true,
  }),
  'POST /v1/graphs/{id}/subtasks/{sid}/fail': () => ({ code: 'AGENT_EXIT_NONZERO', message: 'implementer exited with 3', exitCode: 3 }),
  'POST /v1/graphs/{id}/review': (w) => ({ decision: 'REVIEW_APPROVED', sourceFingerprint: '0'.repeat(64), aggregateCommit: w.graphs.base }),
  'POST /v1/scenarios': (_w, rng) => ({
    name: `sc-new-${hex(rng, 8)}`,
    members: [
      { name: 'a', task: 'A' },
      { name: 'b', task: 'B', dependsOn: ['a'] },
    ],
  }),
  'POST /v1/task-graphs/{id}/expand': () => ({ outline: 'One\n  Two\nThree' }),
  'POST /v1/task-graphs': (_w, rng) => ({ graphId: `mg-new-${hex(rng, 8)}`, title: 'T', goal: 'G' }),
  'POST /v1/agents': (_w, rng) => ({ id: `agent-${hex(rng, 6)}` }),
};

/** What is wrong with an answer (empty when nothing is); `retargeted`: the request's target was respelled, so it may reach another route. */
function problemsOf(op: Operation, a: Answer, retargeted = false): string[] {
  const out: string[] = [];
  if (a.status >= 500) out.push(`answered ${a.status}`);
  if (a.status < 400) {
    if (op.sse && a.status === 200 && !a.type.startsWith('text/event-stream')) out.push(`200 of an event stream is ${a.type}`);
    return out;
  }
  if (!a.type.startsWith('application/problem+json')) out.push(`error ${a.status} is ${a.type || 'untyped'}, not application/problem+json`);
  let body: any;
  try {
    body = JSON.parse(a.text);
  } catch {
    out.push(`error ${a.status} body is not JSON: ${preview(a.text)}`);
    return out;
  }
  const code = body?.code;
  if (typeof code !== 'string') return [...out, `error ${a.status} has no code`];
  if (!CODES.has(code)) out.push(`code ${code} is not in docs/errors.md`);
  else if (CODES.get(code) !== a.status) out.push(`code ${code} is catalogued as ${CODES.get(code)}, answered ${a.status}`);
  if (body.status !== a.status) out.push(`problem status ${body.status} ≠ HTTP ${a.status}`);
  if (!op.codes.get(a.status)?.has(code) && !TRANSPORT_CODES.has(code) && !retargeted)
    out.push(`${a.status} ${code} is not in the operation's x-problem-codes`);
  if (
    (op.key === 'POST /v1/graphs' || op.key === 'POST /v1/graphs/validate') &&
    a.status === 400 &&
    code !== 'TASK_GRAPH_INVALID' &&
    code !== 'malformed_json'
  ) {
    // Seed 002: a document that does not validate is TASK_GRAPH_INVALID at its stage, whatever is wrong with it.
    out.push(`400 ${code} where seed 002 answers TASK_GRAPH_INVALID`);
  }
  if (code === 'TASK_GRAPH_INVALID') {
    // Seed 002: the stable non-recoverable Runtime error with its stage (docs/seeds/task-graph-v1.md §12).
    if (!['graph-validation', 'intent-map-validation'].includes(body.stage)) out.push(`TASK_GRAPH_INVALID without the seed's stage (${body.stage})`);
    if (typeof body.message !== 'string' || body.recoverable !== false) out.push('TASK_GRAPH_INVALID without the seed’s message/recoverable');
  }
  if (code === 'unauthorized' && !a.headers['www-authenticate']) out.push('401 without WWW-Authenticate');
  return out;
}

interface Failure {
  i: number;
  req: FuzzRequest;
  status: number;
  code?: string;
  problems: string[];
}

function report(op: Operation, failures: Failure[]): string {
  if (!failures.length) return '';
  const groups = new Map<string, Failure[]>();
  for (const f of failures) {
    const sig = f.problems.map((p) => p.replace(/\d{2,}/g, 'N')).join('; ');
    groups.set(sig, [...(groups.get(sig) ?? []), f]);
  }
  const lines = [`${failures.length} of ${RUNS} requests to ${op.key} failed (seed ${SEED}; COORD_FUZZ_SEED=${SEED} COORD_FUZZ_ONLY='${op.key}' reproduces):`];
  for (const [sig, fs] of groups) {
    lines.push(`- ${fs.length}× ${sig}`);
    for (const f of fs.slice(0, 2)) {
      lines.push(
        `    #${f.i} ${f.req.method} ${preview(f.req.url)} → ${f.status} ${f.code ?? ''} [${f.req.mutations.join(' | ')}] body ${preview(f.req.payload)}`,
      );
    }
  }
  return lines.join('\n');
}

const codeOf = (text: string): string | undefined => {
  try {
    return JSON.parse(text)?.code;
  } catch {
    return undefined;
  }
};

describe('fuzz generated from the OpenAPI document', () => {
  it('should cover every operation of the document', () => {
    expect(ops.length).toBeGreaterThan(ONLY ? 0 : 60);
  });

  for (const op of ops) {
    it(`${op.key}: ${RUNS} mutated requests, no 5xx, declared problem+json codes, nothing written when refused`, async () => {
      const w = await buildWorld(t, { parts: partsFor(op), base: baseWorld });
      const rng = new Rng(SEED ^ [...op.key].reduce((h, c) => Math.imul(h ^ c.charCodeAt(0), 16777619) >>> 0, 2166136261));
      const ctx = { tokens: { admin: t.admin.token!, outsider }, examples: EXAMPLES, bodyLimit: BODY_LIMIT };
      const failures: Failure[] = [];
      let before = await fingerprint(t.sql);
      const statuses = new Map<number, number>();
      for (let i = 0; i < RUNS; i++) {
        const { req } = generate(doc, op, w, rng.fork(i), ctx);
        const a = await send(t.app, req, op.sse);
        statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
        const problems = problemsOf(
          op,
          a,
          req.mutations.some((m) => m.startsWith('target form')),
        );
        const after = await fingerprint(t.sql);
        if (a.status >= 400 && after !== before) problems.push(`a refused call wrote (fingerprint ${before} → ${after})`);
        before = after;
        if (problems.length) failures.push({ i, req, status: a.status, code: codeOf(a.text), problems });
      }
      // Every stream the batch opened was closed with its request: none is left behind.
      if (op.sse) expect(t.app.coord.openStreams()).toBe(0);
      if (process.env.COORD_FUZZ_VERBOSE) console.log(op.key, JSON.stringify(Object.fromEntries([...statuses].sort())));
      expect(report(op, failures)).toBe('');
      // Some requests must get through: a fuzz that only ever hits the parser proves little.
      if (!op.path.startsWith('/v1/admin'))
        expect(
          [...statuses.keys()].some((s) => s < 400 || (s !== 400 && s !== 401 && s !== 415 && s !== 413)),
          JSON.stringify([...statuses]),
        ).toBe(true);
    });
  }
});

/** The JSON-RPC bodies of `/mcp` the fuzz sends: tool calls sampled from each tool's schema, mutated, and protocol garbage. */
describe('fuzz of POST /mcp (JSON-RPC, not in the document)', () => {
  it(`should answer ${RUNS} mutated tool calls without a 5xx, with catalogue codes, writing nothing when refused`, async () => {
    const w = await buildWorld(t, { base: baseWorld });
    const listed = await t.app.inject({
      method: 'POST',
      url: '/mcp?tools=all',
      headers: { authorization: `Bearer ${w.owner.token}`, accept: 'application/json, text/event-stream', 'content-type': 'application/json' },
      payload: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    });
    const tools: { name: string; description: string; inputSchema: unknown }[] = listed.json().result.tools;
    expect(tools.length).toBeGreaterThan(20);
    const rng = new Rng(SEED ^ 0x6d6370);
    const tokens = [w.owner.token, t.admin.token!, w.child.token, w.worker.token, w.dispatch.token, outsider, w.stopped.token, 'nope'];
    const failures: Failure[] = [];
    let before = await fingerprint(t.sql);
    for (let i = 0; i < RUNS; i++) {
      const r = rng.fork(i);
      const tool = r.pick(tools);
      const route = /\((GET|POST|PUT|PATCH|DELETE) (\S+)\)$/.exec(tool.description);
      const pseudo: Operation = { method: route?.[1] ?? 'POST', path: route?.[2] ?? '/mcp', key: tool.name, params: [], codes: new Map(), sse: false };
      let args: any = sample(doc, tool.inputSchema, r, w, pseudo);
      const mutations: string[] = [`tool ${tool.name}`];
      const roll = r.int(10);
      if (roll < 3 && args && typeof args === 'object') {
        const keys = Object.keys(args);
        if (keys.length) {
          const k = r.pick(keys);
          args[k] = r.pick([null, 1, '', '\ud800', 'a\u0000', 'x'.repeat(100_000), [], {}, 'td-0000000000000000', '../x', '%2F']);
          mutations.push(`set ${k}`);
        }
      } else if (roll === 3) {
        args = { ...args, unexpected: 1 };
        mutations.push('extra argument');
      } else if (roll === 4) {
        args = r.pick([null, [], 'x', 1]);
        mutations.push(`arguments ${preview(args)}`);
      }
      let rpc: unknown = { jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: roll === 5 ? `${tool.name}_nope` : tool.name, arguments: args } };
      if (roll === 6) {
        rpc = r.pick([
          {},
          [],
          { jsonrpc: '1.0', id: 1, method: 'tools/list' },
          { jsonrpc: '2.0', method: 'tools/call' },
          { jsonrpc: '2.0', id: {}, method: 7 },
          [{ jsonrpc: '2.0', id: 1, method: 'tools/list' }],
          'x',
        ]);
        mutations.push(`rpc ${preview(rpc)}`);
      }
      const headers: Record<string, string> = {
        authorization: `Bearer ${r.chance(0.8) ? w.owner.token : r.pick(tokens)}`,
        accept: r.chance(0.9) ? 'application/json, text/event-stream' : r.pick(['text/html', 'application/json', '*/*']),
        'content-type': 'application/json',
      };
      const url = r.chance(0.9) ? '/mcp?tools=all' : r.pick(['/mcp', '/mcp?tools=nope', '/mcp?tools=', '/mcp?tools=todo,todo', '/mcp?tools=%ED%A0%80']);
      const req: FuzzRequest = {
        method: r.chance(0.95) ? 'POST' : r.pick(['GET', 'DELETE']),
        url,
        headers,
        payload: roll === 7 ? '{"jsonrpc":' : JSON.stringify(rpc),
        mutations,
      };
      const res = await t.app.inject({
        method: req.method as 'POST',
        url: req.url,
        headers: req.headers,
        ...(req.method === 'POST' ? { payload: req.payload } : {}),
      });
      const problems: string[] = [];
      if (res.statusCode >= 500) problems.push(`answered ${res.statusCode}`);
      let refused = res.statusCode >= 400;
      let code: string | undefined;
      let body: any;
      try {
        body = JSON.parse(res.body);
      } catch {
        body = undefined;
      }
      if (String(res.headers['content-type']).startsWith('application/problem+json')) {
        code = body?.code;
        if (!CODES.has(code!)) problems.push(`code ${code} is not in docs/errors.md`);
      }
      const error = body?.result?.structuredContent?.error;
      if (body?.error || body?.result?.isError) refused = true;
      if (error) {
        code = error.code;
        if (!CODES.has(error.code)) problems.push(`tool error code ${error.code} is not in docs/errors.md`);
        if (error.status >= 500) problems.push(`tool error ${error.status} ${error.code}: ${preview(error.message)}`);
      }
      const after = await fingerprint(t.sql);
      if (refused && after !== before) problems.push(`a refused call wrote (fingerprint ${before} → ${after})`);
      before = after;
      if (problems.length) failures.push({ i, req, status: res.statusCode, code, problems });
    }
    expect(report({ key: 'POST /mcp' } as Operation, failures)).toBe('');
  });
});
