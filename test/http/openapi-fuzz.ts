/**
 * Request generators for the suites generated from the OpenAPI document: the operations of `app.swagger()` (so the suites follow every route added, and
 * never drift from what the server serves), a seeded PRNG, a JSON Schema sampler that fills
 * fields from a world of real ids, the mutations the fuzz applies, and the problem codes
 * docs/errors.md catalogues.
 */
import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import type { World } from './world.js';

// ---------------------------------------------------------------------------------------------
// Operations

type Json = any;

export interface Param {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  schema: Json;
}

export interface Operation {
  method: string;
  /** The OpenAPI path, with `{param}` templates. */
  path: string;
  /** `METHOD /path`, the name tests and failures use. */
  key: string;
  params: Param[];
  body?: { schema: Json; required: boolean };
  /** Problem codes the operation declares, by status (`x-problem-codes`). */
  codes: Map<number, Set<string>>;
  /** Its 200 answer is an event stream (`text/event-stream`). */
  sse: boolean;
}

/** Every operation of an OpenAPI document, in document order. */
export function operations(doc: Json): Operation[] {
  const out: Operation[] = [];
  for (const [path, methods] of Object.entries<Json>(doc.paths)) {
    for (const [method, op] of Object.entries<Json>(methods)) {
      const codes = new Map<number, Set<string>>();
      for (const [status, res] of Object.entries<Json>(op.responses ?? {})) {
        if (res['x-problem-codes']) codes.set(Number(status), new Set(res['x-problem-codes']));
      }
      const json = op.requestBody?.content?.['application/json'];
      out.push({
        method: method.toUpperCase(),
        path,
        key: `${method.toUpperCase()} ${path}`,
        params: (op.parameters ?? []).map((p: Json) => ({ name: p.name, in: p.in, required: p.required === true, schema: p.schema ?? {} })),
        body: json ? { schema: json.schema ?? {}, required: op.requestBody.required === true } : undefined,
        codes,
        sse: !!op.responses?.['200']?.content?.['text/event-stream'],
      });
    }
  }
  return out;
}

/** Every code of docs/errors.md's table, with its status. */
export function catalogue(): Map<string, number> {
  const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
  return new Map([...doc.matchAll(/^\| `([A-Za-z_]+)` \| (\d{3}) \|/gm)].map((m) => [m[1], Number(m[2])]));
}

/**
 * Codes any route may answer whatever it declares, because they are decided before the route
 * runs (docs/errors.md, "Refused before a route runs"): the router (no route, bad
 * percent-encoding, an over-long segment), the body parser (not JSON, too large, another media
 * type) and Node's HTTP parser.
 */
export const TRANSPORT_CODES = new Set([
  'not_found',
  'malformed_url',
  'uri_too_long',
  'expectation_failed',
  'headers_too_large',
  'malformed_request',
  'malformed_json',
  'unsupported_media_type',
  'payload_too_large',
]);

// ---------------------------------------------------------------------------------------------
// A seeded PRNG (mulberry32): the same seed gives the same requests, so a failure reproduces.

export class Rng {
  private s: number;
  constructor(readonly seed: number) {
    this.s = seed >>> 0;
  }
  next(): number {
    this.s = (this.s + 0x6d2b79f5) >>> 0;
    let t = this.s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)];
  }
  /** A child generator for one request, so request `i` does not depend on how many draws `i-1` made. */
  fork(i: number): Rng {
    return new Rng((Math.imul(this.seed ^ 0x9e3779b9, 0x85ebca6b) + Math.imul(i + 1, 0xc2b2ae35)) >>> 0);
  }
}

// ---------------------------------------------------------------------------------------------
// Values

/** Strings and values that break things: types, bounds, encodings, ids of the wrong kind. */
const HUGE = 'a'.repeat(100_001);
const MEGA = 'm'.repeat(900_000);
export function nastyValues(w: World): unknown[] {
  return [
    null,
    true,
    false,
    0,
    -1,
    1.5,
    -0.5,
    2 ** 31 - 1,
    2 ** 31,
    2 ** 53,
    -(2 ** 31) - 1,
    1e308,
    1e-7,
    '',
    ' ',
    '\t\n',
    'a\u0000b',
    '\u0000',
    '\ud800',
    'x\udfffy',
    '\udbff\udbff',
    '\u202e',
    '\ufeff',
    '🙂',
    'é',
    'ß'.repeat(300),
    '%00',
    '../../etc/passwd',
    '<script>x</script>',
    "'; drop table todos; --",
    '${jndi:x}',
    'td-0000000000000000',
    's-0000000000000000',
    'sc-0000000000000000',
    'task-x',
    'task-',
    'Bad.ID',
    'con',
    'agent-z',
    'me',
    'null',
    'session:',
    'scenario:',
    'graph:',
    'metagit:',
    'nope:x',
    `session:${w.owner.id}`,
    `scenario:${w.scenario.name}`,
    `graph:${w.graphs.graph}`,
    w.todos.plain,
    w.owner.id,
    w.graphs.graph,
    w.metagit.graph,
    w.scenario.id,
    HUGE,
    'x'.repeat(5000),
    [],
    {},
    [null],
    [[]],
    [1, 2],
    ['x', 'x'],
    [''],
    { a: { b: { c: {} } } },
    Array.from({ length: 1200 }, (_, i) => `td-${i}`),
    deep(200),
  ];
}

function deep(n: number): unknown {
  let v: unknown = 'leaf';
  for (let i = 0; i < n; i++) v = { d: v };
  return v;
}

/** Path parameters that are not what the route wants: malformed, encoded, too long, of another kind. */
export function nastyIds(w: World): string[] {
  return [
    '%00',
    'a%00b',
    '%ED%A0%80',
    '%F0%9F%99%82',
    '%C3%A9',
    '%FF',
    '%E2%80%AE',
    '%20',
    'a%20b',
    '%25',
    '%2F',
    'a%2Fb',
    '.',
    '..',
    '%2E%2E',
    'x'.repeat(1001),
    'x'.repeat(999),
    'td-0000000000000000',
    'TD-0000000000000000',
    'td-',
    's-0000000000000000',
    'task-nope',
    `task-${'a'.repeat(200)}`,
    'null',
    'undefined',
    '0',
    '-1',
    '__proto__',
    'constructor',
    'toString',
    'a;b',
    'a,b',
    'a:b',
    '*',
    '~',
    '%2A',
    w.todos.plain,
    w.todos.sub,
    w.owner.id,
    w.child.id,
    w.scenario.id,
    w.scenario.name,
    w.graphs.graph,
    w.graphs.idle,
    w.metagit.graph,
    w.metagit.intent,
    'backend',
    'root',
    'a',
    encodeURIComponent(`session:${w.owner.id}`),
    `session:${w.owner.id}`,
    `graph:${w.graphs.graph}`,
  ];
}

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

/** Cursors Coord did not issue: wrong shapes, types, sizes and encodings. */
export const CRAFTED_CURSORS = [
  'zzz',
  '%%%',
  '',
  b64([]),
  b64({}),
  b64(null),
  b64(['x', 1]),
  b64([1.5, 'td-x']),
  b64([1e308, 'td-0000000000000000']),
  b64([2 ** 31, 'td-0000000000000000']),
  b64(['a'.repeat(600)]),
  b64(['\u0000']),
  b64(['s-0000000000000000', 1, 2]),
  b64([[1], {}]),
  b64(['../x']),
  b64([true]),
  '99999999999999999999',
  'A'.repeat(1999),
  Buffer.from('\xff\xfe').toString('base64url'),
  b64(['2026-01-01T00:00:00Z', 'task-x']),
  b64(['2026-13-45T99:99:99Z', 'task-x']),
  b64(['not a date', 'task-x']),
];

/** Values for a string field, by its name: real ids of the world, so generated requests reach the services. */
function pool(name: string, op: Operation, w: World): string[] | undefined {
  const todoIds = Object.values(w.todos);
  const sessions = [w.owner.id, w.child.id, w.worker.id, w.scenario.members.a.id];
  const scopes = [`session:${w.owner.id}`, `scenario:${w.scenario.name}`, w.scenario.scope, `graph:${w.graphs.graph}`, `metagit:${w.metagit.graph}`];
  const commit = w.graphs.base;
  switch (name) {
    case 'id':
      if (op.path.startsWith('/v1/todos')) return todoIds;
      if (op.path.startsWith('/v1/sessions')) return [...sessions, w.stopped.id, w.dispatch.id];
      if (op.path.startsWith('/v1/graphs')) return [w.graphs.graph, w.graphs.idle];
      if (op.path.startsWith('/v1/task-graphs')) return [w.metagit.graph];
      if (op.path.startsWith('/v1/intents')) return [w.metagit.intent, `intent-${w.metagit.graph}`];
      if (op.path.startsWith('/v1/agents')) return ['agent-new', 'codex'];
      return undefined;
    case 'sid':
    case 'subtaskId':
      return ['backend', 'frontend'];
    case 'nodeId':
      return w.metagit.nodes;
    case 'name':
      return op.path.startsWith('/v1/scenarios/') ? [w.scenario.name, w.scenario.id] : undefined;
    case 'member':
      return ['a', 'b'];
    case 'scope':
      return scopes;
    case 'topic':
      return scopes.map((s) => `todo:${s}`);
    case 'parentId':
      return op.path.startsWith('/v1/sessions') ? sessions : todoIds;
    case 'assignee':
    case 'owner':
    case 'orchestrator':
    case 'session':
      return [...sessions, 'me'];
    case 'agentId':
    case 'agent':
    case 'implementer':
    case 'planner':
    case 'reviewer':
      return ['agent-fz', 'codex', 'reviewer'];
    case 'baseCommit':
    case 'graphBaseCommit':
    case 'implementationCommit':
    case 'commit':
    case 'aggregateCommit':
      return [commit, 'f'.repeat(40), '0'.repeat(64)];
    case 'sourceFingerprint':
      return ['0'.repeat(64)];
    case 'after':
    case 'last-event-id':
      return ['0', '1', '5'];
    case 'if-match':
      return ['"1"', '1', 'W/"2"', '*'];
    case 'cursor':
      return CRAFTED_CURSORS;
    case 'path':
    case 'oldPath':
      return ['src/server/a.ts', 'src/web/b.ts', 'docs/x.md'];
    case 'graphId':
      return op.path.startsWith('/v1/task-graphs') ? [`mg-new-${w.tag}`, w.metagit.graph] : undefined;
    case 'intentId':
      return [`intent-new-${w.tag}`, w.metagit.intent];
    case 'dependsOn':
      return op.path.startsWith('/v1/scenarios') ? ['a', 'b'] : op.path.startsWith('/v1/graphs') ? ['backend', 'frontend'] : todoIds;
    default:
      return undefined;
  }
}

/** Resolves a local `$ref` (`#/components/schemas/X`). */
function deref(doc: Json, s: Json): Json {
  let cur = s;
  for (let i = 0; cur?.$ref && i < 10; i++)
    cur = cur.$ref
      .split('/')
      .slice(1)
      .reduce((node: Json, k: string) => node?.[k], doc);
  return cur ?? {};
}

/**
 * A value for schema `s` that the schema accepts (as far as a sampler can tell): enums and
 * consts, bounded strings from the world's pools, small numbers in range, a few array items,
 * the required properties and some optional ones.
 */
export function sample(doc: Json, s0: Json, rng: Rng, w: World, op: Operation, name = '', depth = 0): unknown {
  const s = deref(doc, s0);
  if (depth > 6) return null;
  const alts = s.anyOf ?? s.oneOf;
  if (alts) {
    const nonNull = alts.filter((a: Json) => deref(doc, a).type !== 'null');
    return sample(doc, rng.pick(nonNull.length ? nonNull : alts), rng, w, op, name, depth + 1);
  }
  if (s.allOf) return sample(doc, s.allOf[0], rng, w, op, name, depth + 1);
  if ('const' in s) return s.const;
  if (s.enum) return rng.pick(s.enum);
  const type = Array.isArray(s.type) ? s.type.find((t: string) => t !== 'null') : s.type;
  switch (type) {
    case 'string': {
      const p = pool(name, op, w);
      if (p) return rng.pick(p);
      if (s.pattern) return rng.pick(['a', 'abc', 'x-1', 'alpha']);
      const len = Math.max(s.minLength ?? 1, 1);
      return `${name || 'v'}-${w.tag}`.padEnd(len, 'x').slice(0, Math.max(len, Math.min(s.maxLength ?? 40, 40)));
    }
    case 'integer':
    case 'number': {
      const min = s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : 0);
      const max = Math.min(s.maximum ?? min + 10, min + 10);
      return min + rng.int(Math.max(1, max - min + 1));
    }
    case 'boolean':
      return rng.chance(0.5);
    case 'array': {
      if (s.prefixItems) return s.prefixItems.map((it: Json) => sample(doc, it, rng, w, op, name, depth + 1));
      const n = Math.max(s.minItems ?? 0, Math.min(s.maxItems ?? 3, rng.int(3)));
      return Array.from({ length: n }, () => sample(doc, s.items ?? {}, rng, w, op, name, depth + 1));
    }
    case 'object': {
      const out: Record<string, unknown> = {};
      const req = new Set<string>(s.required ?? []);
      for (const [k, v] of Object.entries<Json>(s.properties ?? {})) {
        if (req.has(k) || rng.chance(0.4)) out[k] = sample(doc, v, rng, w, op, k, depth + 1);
      }
      return out;
    }
    case 'null':
      return null;
    default:
      return s.properties ? sample(doc, { ...s, type: 'object' }, rng, w, op, name, depth) : 'x';
  }
}

// ---------------------------------------------------------------------------------------------
// Requests and mutations

export interface FuzzRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  /** The payload as sent (a string or raw bytes), or undefined for none. */
  payload?: string | Buffer;
  /** What was done to the request, for the failure report. */
  mutations: string[];
}

export type PathObj = (string | number)[];

function paths(v: unknown, at: PathObj = []): PathObj[] {
  const out: PathObj[] = [at];
  if (at.length > 12) return out;
  if (Array.isArray(v)) v.slice(0, 20).forEach((x, i) => out.push(...paths(x, [...at, i])));
  else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) out.push(...paths(x, [...at, k]));
  return out;
}

const get = (v: any, p: PathObj) => p.reduce((n, k) => n?.[k], v);

/** Raw bodies no JSON schema describes: broken JSON, prototype keys, odd encodings. */
function rawBodies(limit: number): (string | Buffer)[] {
  return [
    '',
    '{',
    '{"a":}',
    '[',
    '}',
    'null',
    '"x"',
    '1',
    'true',
    '[]',
    '{"title":"a","title":"b"}',
    '{"__proto__":{"polluted":true}}',
    '{"constructor":{"prototype":{"x":1}}}',
    '\ufeff{}',
    '{} trailing',
    '{"a":1e999}',
    '{"a":"\\ud800"}',
    '{"a\\u0000":1}',
    '{"a":"\\u0000"}',
    Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
    '['.repeat(5000) + ']'.repeat(5000),
    `{"x":"${'y'.repeat(limit)}"}`,
  ];
}

const CONTENT_TYPES = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/xml',
  'application/json; charset=utf-16',
  'APPLICATION/JSON',
  'application/merge-patch+json',
  'application/problem+json',
  'application/json;;',
  '',
  'application/octet-stream',
];

/**
 * Other spellings of a request target: the router may reach the same route, or no
 * route, but never a handler without the authentication its route needs. test/http/auth-forms.test.ts
 * sends them over raw sockets without a token; here they are mixed with every other mutation.
 */
interface TargetForm {
  name: string;
  apply(path: string): string;
}
const TARGET_FORMS: TargetForm[] = [
  { name: 'percent-encoded prefix', apply: (p) => p.replace(/^\/v1\//, '/%76%31/') },
  { name: 'percent-encoded letter', apply: (p) => p.replace(/[a-z]/, (c) => `%${c.charCodeAt(0).toString(16)}`) },
  { name: 'double slashes', apply: (p) => p.replace(/\//g, '//') },
  { name: 'dot segment', apply: (p) => p.replace(/^\/v1\//, '/v1/./') },
  { name: 'dot-dot segment', apply: (p) => p.replace(/^\/v1\//, '/v1/x/../') },
  { name: 'upper case', apply: (p) => p.toUpperCase() },
  { name: 'trailing slash', apply: (p) => `${p}/` },
];

/** How a request authenticates: a world principal, an operator, or a broken credential. */
export type AuthKind = 'admin' | 'owner' | 'child' | 'worker' | 'dispatch' | 'member' | 'outsider' | 'stopped' | 'none' | 'garbage' | 'malformed';
const AUTH_KINDS: AuthKind[] = ['admin', 'owner', 'child', 'worker', 'dispatch', 'member', 'outsider', 'stopped', 'none', 'garbage', 'malformed'];

export function authHeader(kind: AuthKind, w: World, tokens: { admin: string; outsider: string }, rng: Rng): string | undefined {
  switch (kind) {
    case 'admin':
      return `Bearer ${tokens.admin}`;
    case 'owner':
      return `Bearer ${w.owner.token}`;
    case 'child':
      return `Bearer ${w.child.token}`;
    case 'worker':
      return `Bearer ${w.worker.token}`;
    case 'dispatch':
      return `Bearer ${w.dispatch.token}`;
    case 'member':
      return `Bearer ${w.scenario.members.a.token}`;
    case 'outsider':
      return `Bearer ${tokens.outsider}`;
    case 'stopped':
      return `Bearer ${w.stopped.token}`;
    case 'none':
      return undefined;
    case 'garbage':
      return `Bearer ${rng.pick(['coord_nope', 'x', 'a'.repeat(8000), '\u00e9\u00e9', tokens.admin.slice(0, -1), `${tokens.admin}x`])}`;
    case 'malformed':
      return rng.pick([
        'Bearer',
        'Bearer ',
        'Basic YWRtaW46YWRtaW4=',
        `Bearer ${tokens.admin} extra`,
        `bearer   ${tokens.admin}`,
        tokens.admin,
        'Bearer\t',
        'Token abc',
      ]);
  }
}

export interface Generated {
  req: FuzzRequest;
  auth: AuthKind;
}

/** Valid bodies for the operations a schema sampler cannot satisfy by chance (graph documents, evidence). */
export type Examples = Partial<Record<string, (w: World, rng: Rng) => unknown>>;

/**
 * One fuzzed request for `op`: a schema-valid request with the world's ids (so it gets past the
 * parser often enough to reach the services), then one to three mutations.
 */
export function generate(
  doc: Json,
  op: Operation,
  w: World,
  rng: Rng,
  ctx: { tokens: { admin: string; outsider: string }; examples: Examples; bodyLimit: number },
): Generated {
  const mutations: string[] = [];
  const values: Record<string, string | string[] | undefined> = {};
  for (const p of op.params) {
    if (p.in === 'path' || p.required || rng.chance(0.35)) {
      const v = sample(doc, p.schema, rng, w, op, p.name);
      values[`${p.in}:${p.name}`] = typeof v === 'string' ? v : JSON.stringify(v);
    }
  }
  let body: unknown = op.body ? (ctx.examples[op.key]?.(w, rng) ?? sample(doc, op.body.schema, rng, w, op)) : undefined;
  let payload: string | Buffer | undefined;
  let contentType: string | undefined = op.body ? 'application/json' : undefined;
  let raw = false;
  let auth: AuthKind = rng.chance(0.5) ? 'owner' : rng.chance(0.4) ? 'admin' : rng.pick(AUTH_KINDS);
  const extraHeaders: Record<string, string> = {};
  const extraQuery: [string, string][] = [];
  let form: TargetForm | undefined;
  const nasty = nastyValues(w);
  const ids = nastyIds(w);

  const count = 1 + rng.int(3);
  for (let m = 0; m < count; m++) {
    const kind = rng.pick(['set', 'set', 'delete', 'extra', 'raw', 'contentType', 'path', 'path', 'query', 'auth', 'auth', 'header', 'form', 'none']);
    if (kind === 'set' && op.body && !raw) {
      const all = paths(body);
      const at = rng.pick(all);
      // Half the time a value of the same JSON type (a boundary: 2^31, '', 1,200 items), else any.
      const current = at.length === 0 ? body : get(body, at);
      const sameType = nasty.filter((v) => typeof v === typeof current && Array.isArray(v) === Array.isArray(current) && (v === null) === (current === null));
      const value = rng.chance(0.03) ? MEGA : structuredClone(rng.pick(sameType.length && rng.chance(0.5) ? sameType : nasty));
      if (at.length === 0) body = value;
      else get(body, at.slice(0, -1))[at[at.length - 1]] = value;
      mutations.push(`set body.${at.join('.')} = ${preview(value)}`);
    } else if (kind === 'delete' && op.body && !raw) {
      const all = paths(body).filter((p) => p.length > 0);
      if (!all.length) continue;
      const at = rng.pick(all);
      const parent = get(body, at.slice(0, -1));
      if (Array.isArray(parent)) parent.splice(Number(at[at.length - 1]), 1);
      else if (parent && typeof parent === 'object') delete parent[at[at.length - 1]];
      mutations.push(`delete body.${at.join('.')}`);
    } else if (kind === 'extra' && op.body && !raw) {
      const objects = paths(body).filter((p) => {
        const v = get(body, p);
        return v && typeof v === 'object' && !Array.isArray(v);
      });
      if (!objects.length) continue;
      const at = rng.pick(objects);
      const key = rng.pick(['extra', 'id', 'owner', 'scope', 'revision', 'status', '', '__proto__x', 'a'.repeat(300), '\ud800', 'a\u0000']);
      get(body, at)[key] = structuredClone(rng.pick(nasty));
      mutations.push(`extra body.${at.join('.')}.${preview(key)}`);
    } else if (kind === 'raw' && (op.body || op.method !== 'GET')) {
      payload = rng.pick(rawBodies(ctx.bodyLimit));
      raw = true;
      contentType ??= 'application/json';
      mutations.push(`raw body ${preview(payload)}`);
    } else if (kind === 'contentType' && op.method !== 'GET') {
      contentType = rng.pick(CONTENT_TYPES);
      if (!op.body && payload === undefined) payload = rng.pick(['{}', 'a=b', 'x']);
      mutations.push(`content-type ${JSON.stringify(contentType)}`);
    } else if (kind === 'path' && op.params.some((p) => p.in === 'path')) {
      const p = rng.pick(op.params.filter((x) => x.in === 'path'));
      values[`path:${p.name}`] = rng.pick(ids);
      mutations.push(`path ${p.name} = ${preview(values[`path:${p.name}`])}`);
    } else if (kind === 'query') {
      const q = op.params.filter((x) => x.in === 'query');
      const r = rng.int(4);
      if (r === 0 || q.length === 0) {
        extraQuery.push([
          rng.pick(['zzz', 'scope', 'limit', '__proto__', 'cursor', 'format', '']),
          String(rng.pick(nasty.filter((v) => typeof v !== 'object'))),
        ]);
        mutations.push(`extra query ${extraQuery[extraQuery.length - 1][0]}`);
      } else if (r === 1) {
        const p = rng.pick(q);
        delete values[`query:${p.name}`];
        mutations.push(`drop query ${p.name}`);
      } else if (r === 2) {
        const p = rng.pick(q);
        values[`query:${p.name}`] = [String(sample(doc, p.schema, rng, w, op, p.name)), String(sample(doc, p.schema, rng, w, op, p.name))];
        mutations.push(`repeat query ${p.name}`);
      } else {
        const p = rng.pick(q);
        const v = rng.pick([...nasty.filter((x) => typeof x !== 'object'), ...CRAFTED_CURSORS, '-1', '1e3', 'abc', '99999999999999999999', '0x10', ' 5']);
        values[`query:${p.name}`] = String(v);
        mutations.push(`query ${p.name} = ${preview(v)}`);
      }
    } else if (kind === 'form') {
      form = rng.pick(TARGET_FORMS);
      mutations.push(`target form ${form.name}`);
    } else if (kind === 'auth') {
      auth = rng.pick(AUTH_KINDS);
      mutations.push(`auth ${auth}`);
    } else if (kind === 'header') {
      const h = rng.pick(['if-match', 'last-event-id', 'accept', 'content-length-mismatch', 'x-forwarded-for', 'content-encoding']);
      const v = rng.pick(['garbage', '"', '"999999999999"', 'W/"x"', '-1', '1'.repeat(5000), '\u00e9', 'gzip', 'text/html', '*/*;q=0', '9007199254740993']);
      if (h === 'content-length-mismatch') continue;
      extraHeaders[h] = v;
      mutations.push(`header ${h}: ${preview(v)}`);
    }
  }

  let url = op.path.replace(/\{(\w+)\}/g, (_, name) => {
    const v = values[`path:${name}`] as string;
    // Nasty ids are written pre-encoded (they test the router); sampled ones are encoded here.
    return ids.includes(v) ? v : encode(v);
  });
  const qs: string[] = [];
  for (const p of op.params.filter((x) => x.in === 'query')) {
    const v = values[`query:${p.name}`];
    if (v === undefined) continue;
    for (const one of Array.isArray(v) ? v : [v]) qs.push(`${encode(p.name)}=${encode(one)}`);
  }
  for (const [k, v] of extraQuery) qs.push(`${encode(k)}=${encode(v)}`);
  if (form) url = form.apply(url);
  if (qs.length) url += `?${qs.join('&')}`;

  const headers: Record<string, string> = {};
  const a = authHeader(auth, w, ctx.tokens, rng);
  if (a !== undefined) headers.authorization = a;
  for (const p of op.params.filter((x) => x.in === 'header')) {
    const v = values[`header:${p.name}`];
    if (typeof v === 'string') headers[p.name] = v;
  }
  Object.assign(headers, extraHeaders);
  if (!raw && op.body && body !== undefined) payload = JSON.stringify(body);
  if (payload !== undefined && contentType !== undefined && contentType !== '') headers['content-type'] = contentType;
  return { req: { method: op.method, url, headers, payload, mutations }, auth };
}

/** An answer as the suites check it. */
export interface Answer {
  status: number;
  type: string;
  headers: Record<string, unknown>;
  text: string;
}

/** Sends one request through `app.inject`; an event stream (`sse`) is read up to its first chunk, then closed. */
export async function send(app: FastifyInstance, req: FuzzRequest, sse: boolean): Promise<Answer> {
  const opts = { method: req.method as 'GET', url: req.url, headers: req.headers, ...(req.payload !== undefined ? { payload: req.payload } : {}) };
  if (!sse) {
    const r = await app.inject(opts);
    return { status: r.statusCode, type: String(r.headers['content-type'] ?? ''), headers: r.headers, text: r.body };
  }
  const r = await app.inject({ ...opts, payloadAsStream: true });
  const type = String(r.headers['content-type'] ?? '');
  const stream = r.stream();
  if (type.startsWith('text/event-stream')) {
    const first = await new Promise<string>((resolve) => stream.once('data', (c) => resolve(String(c))));
    stream.destroy();
    (r.raw.res as unknown as { destroy(): void }).destroy();
    return { status: r.statusCode, type, headers: r.headers, text: first };
  }
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return { status: r.statusCode, type, headers: r.headers, text: Buffer.concat(chunks).toString() };
}

/**
 * `encodeURIComponent`, except that a lone surrogate (which it refuses) is sent as the bytes a
 * careless client would send: its three-byte encoding, which is not valid UTF-8.
 */
const LONE = /([\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff])/;
function encode(v: string): string {
  return v
    .split(LONE)
    .map((part) =>
      part.length === 1 && LONE.test(part)
        ? `%${Buffer.from([0xed, 0xa0 | ((part.charCodeAt(0) >> 6) & 0x1f), 0x80 | (part.charCodeAt(0) & 0x3f)])
            .toString('hex')
            .match(/../g)!
            .join('%')}`
        : encodeURIComponent(part),
    )
    .join('');
}

/** A short printable form of a value, for failure reports. */
export function preview(v: unknown): string {
  const s = Buffer.isBuffer(v) ? `<bytes ${v.toString('hex').slice(0, 40)}>` : typeof v === 'string' ? JSON.stringify(v) : (JSON.stringify(v) ?? String(v));
  return s.length > 80 ? `${s.slice(0, 60)}…(${s.length} chars)` : s;
}
