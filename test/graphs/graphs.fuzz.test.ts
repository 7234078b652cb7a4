/**
 * Fuzzed invalid inputs over HTTP: random mutations of a valid Task Graph or
 * Intent Map always give 400 `TASK_GRAPH_INVALID` with the stage and message the pure contract
 * gives, never a 500, and never write a row (database row counts before and after).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateIntentMap, validateTaskGraph } from '../../src/graphs/contract/index.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { example, registerAgents, rowCounts, EXAMPLE_AGENTS } from './graphs.helpers.js';
import { scaled } from '../helpers/scale.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
  await registerAgents(t.admin);
});
afterAll(async () => t?.close());

const CONFIGURED = new Set(EXAMPLE_AGENTS);
const ID_POOL = ['alpha', 'beta', 'gamma', 'delta', 'after-alpha', 'x_1'];
const KEYS = [
  'id',
  'title',
  'spec',
  'planner',
  'reviewer',
  'implementer',
  'dependsOn',
  'subtasks',
  'schemaVersion',
  'maxConcurrency',
  'writeIntent',
  'scopePolicy',
  'parentTaskId',
  'extra',
  'Unexpected',
  '',
];

/** Values that break the contract in many ways (types, formats, bounds, identities). */
const nasty: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(
    null,
    true,
    false,
    0,
    -1,
    1.5,
    2,
    33,
    1e308,
    '',
    ' ',
    ' codex',
    'codex ',
    'Bad.ID',
    'con',
    'lpt9',
    'agent-z',
    'task-',
    'task-x',
    '/abs/path',
    '..',
    '../up/**',
    'C:drive',
    '\\\\unc\\share',
    '!negated',
    'a\u0000b',
    'a\ud800b',
    'é',
    [],
    {},
    [[]],
    [null],
    ['alpha', 'alpha'],
  ),
  fc.string({ maxLength: 12 }),
  fc.integer(),
  fc.double(),
  fc.jsonValue({ maxDepth: 2 }),
);

type Path = (string | number)[];

/** Every path to a value inside a JSON document. */
function paths(value: unknown, prefix: Path = []): Path[] {
  const out: Path[] = [prefix];
  if (Array.isArray(value)) value.forEach((v, i) => out.push(...paths(v, [...prefix, i])));
  else if (value !== null && typeof value === 'object') for (const [k, v] of Object.entries(value)) out.push(...paths(v, [...prefix, k]));
  return out;
}

function at(doc: any, path: Path): any {
  return path.reduce((node, key) => node?.[key], doc);
}

type Mutation =
  | { kind: 'set'; pick: number; value: unknown }
  | { kind: 'delete'; pick: number }
  | { kind: 'add'; pick: number; key: string; value: unknown }
  | { kind: 'edge'; from: number; to: string }
  | { kind: 'duplicate'; pick: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('set' as const), pick: fc.nat(), value: nasty }),
  fc.record({ kind: fc.constant('delete' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('add' as const), pick: fc.nat(), key: fc.constantFrom(...KEYS), value: nasty }),
  fc.record({ kind: fc.constant('edge' as const), from: fc.nat(), to: fc.constantFrom(...ID_POOL, 'backend', 'frontend', 'docs', 'absent') }),
  fc.record({ kind: fc.constant('duplicate' as const), pick: fc.nat() }),
);

/** Applies mutations to a deep copy of `doc` (never touching the original). */
function mutate(doc: unknown, mutations: Mutation[]): unknown {
  let root: any = structuredClone(doc);
  for (const m of mutations) {
    const all = paths(root);
    if (m.kind === 'set') {
      const path = all[m.pick % all.length];
      if (path.length === 0) root = m.value;
      else at(root, path.slice(0, -1))[path[path.length - 1]] = m.value;
    } else if (m.kind === 'delete') {
      const candidates = all.filter((p) => p.length > 0);
      if (candidates.length === 0) continue;
      const path = candidates[m.pick % candidates.length];
      const parent = at(root, path.slice(0, -1));
      const key = path[path.length - 1];
      if (Array.isArray(parent)) parent.splice(Number(key), 1);
      else delete parent[key];
    } else if (m.kind === 'add') {
      const objects = all.filter((p) => {
        const v = at(root, p);
        return v !== null && typeof v === 'object' && !Array.isArray(v);
      });
      if (objects.length === 0) continue;
      at(root, objects[m.pick % objects.length])[m.key] = m.value;
    } else if (m.kind === 'edge' || m.kind === 'duplicate') {
      const subtasks = root?.subtasks;
      if (!Array.isArray(subtasks) || subtasks.length === 0) continue;
      const target = subtasks[(m.kind === 'edge' ? m.from : m.pick) % subtasks.length];
      if (m.kind === 'duplicate') subtasks.push(structuredClone(target));
      else if (target && typeof target === 'object') target.dependsOn = [...(Array.isArray(target.dependsOn) ? target.dependsOn : []), m.to];
    }
  }
  return root;
}

/** A value as it arrives after JSON serialisation. */
const wire = (value: Record<string, unknown>): Record<string, any> => JSON.parse(JSON.stringify(value));

/** JSON bodies Fastify itself refuses (prototype poisoning) are a transport matter, not the contract's. */
const poisoned = (body: string) => body.includes('"__proto__"') || body.includes('"constructor"');

async function expectRefusedLikeTheContract(path: string, body: unknown, expected: { stage: string; message: string }) {
  const r = await t.admin.post(path, JSON.stringify(body));
  expect(r.status, JSON.stringify(r.body)).toBe(400);
  expect(r.body.code).toBe('TASK_GRAPH_INVALID');
  expect(r.body.stage).toBe(expected.stage);
  expect(r.body.message).toBe(expected.message);
  expect(r.body.recoverable).toBe(false);
}

describe('fuzzed invalid inputs over HTTP', () => {
  it('should refuse every invalid mutation of the example graph at graph-validation and write nothing', async () => {
    const before = await rowCounts(t.sql);
    let checked = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(mutation, { minLength: 1, maxLength: 3 }), fc.boolean(), async (mutations, useValidate) => {
        // What the server receives: JSON turns NaN/Infinity into null and drops undefined.
        const body = wire({ graph: mutate(example('task-graph'), mutations) });
        fc.pre(!poisoned(JSON.stringify(body)));
        const pure = validateTaskGraph(body.graph, { configuredAgents: CONFIGURED });
        fc.pre(!pure.ok);
        if (pure.ok) return;
        checked += 1;
        await expectRefusedLikeTheContract(useValidate ? '/v1/graphs/validate' : '/v1/graphs', body, pure.error);
      }),
      { numRuns: scaled(300, 30) },
    );
    expect(checked).toBeGreaterThan(scaled(300, 30) / 2); // most mutations break the graph
    expect(await rowCounts(t.sql)).toEqual(before);
  });

  it('should refuse every invalid mutation of the example Intent Map at intent-map-validation and write nothing', async () => {
    const before = await rowCounts(t.sql);
    const graph = example('task-graph');
    const normalized = validateTaskGraph(graph, { configuredAgents: CONFIGURED });
    if (!normalized.ok) throw new Error('the example graph must be valid');
    let checked = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(mutation, { minLength: 1, maxLength: 3 }), async (mutations) => {
        const body = wire({ graph, intentMap: mutate(example('intent-map'), mutations) });
        fc.pre(!poisoned(JSON.stringify(body)));
        const pure = validateIntentMap(body.intentMap, normalized.value);
        fc.pre(!pure.ok);
        if (pure.ok) return;
        checked += 1;
        await expectRefusedLikeTheContract('/v1/graphs', body, pure.error);
      }),
      { numRuns: scaled(200, 20) },
    );
    expect(checked).toBeGreaterThan(scaled(200, 20) * 0.4);
    expect(await rowCounts(t.sql)).toEqual(before);
  });

  it('should answer every mutation at validate with 200 or 400, never a 500, and write nothing', async () => {
    const before = await rowCounts(t.sql);
    await fc.assert(
      fc.asyncProperty(fc.array(mutation, { minLength: 1, maxLength: 2 }), async (mutations) => {
        const body = { graph: mutate(example('task-graph'), mutations) };
        fc.pre(!poisoned(JSON.stringify(body)));
        const r = await t.admin.post('/v1/graphs/validate', JSON.stringify(body));
        expect([200, 400], JSON.stringify(r.body)).toContain(r.status);
        if (r.status === 400) expect(r.body).toMatchObject({ code: 'TASK_GRAPH_INVALID', stage: 'graph-validation' });
      }),
      { numRuns: scaled(200, 20) },
    );
    expect(await rowCounts(t.sql)).toEqual(before);
  });

  it('should refuse a body with a __proto__ key as malformed JSON, not with a 500', async () => {
    const r = await t.admin.post('/v1/graphs', '{"graph": {"__proto__": {"polluted": true}}}');
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('malformed_json');
  });
});
