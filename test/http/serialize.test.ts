/**
 * The compiled response serialiser of the hot routes (src/http/serialize.ts) writes the
 * same JSON as zod's encode + JSON.stringify for every shape those routes answer: every optional
 * property present or absent, `result` of every JSON kind, a Task Graph `dispatch` record, and
 * strings that need escaping. Random shapes from a seeded generator, compared after parsing
 * (property order is the only allowed difference), plus the end-to-end answers of the app.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { compileSerializer } from '../../src/http/serialize.js';
import { ClaimResult, ItemEnvelope } from '../../src/todos/todos.schemas.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

/** mulberry32: a small seeded generator, so a failure reproduces. */
function rng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const STRINGS = ['', 'plain', 'quote " and \\ backslash', 'line\nbreak\ttab', 'ünïcødé ✓ 🚀', '\u2028\u2029', '</script>', 'x'.repeat(300)];

function item(r: () => number) {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)];
  const maybe = <T>(v: T) => (r() < 0.5 ? v : undefined);
  const results = [undefined, 'a string', 0, -1.5, 1e21, true, false, null, [], [1, 'x', null, { a: [] }], { nested: { deep: ['ü', 2] } }, {}];
  const it: Record<string, unknown> = {
    id: `td-${Math.floor(r() * 2 ** 32)
      .toString(16)
      .padStart(16, '0')}`,
    scope: pick(['session:se-1', 'scenario:sc-2', 'graph:task-release']),
    title: pick(STRINGS),
    note: maybe(pick(STRINGS)),
    status: pick(['todo', 'in-progress', 'done', 'blocked'] as const),
    ready: r() < 0.5,
    owner: maybe('se-owner'),
    assignee: maybe('se-assignee'),
    parentId: maybe('td-0000000000000001'),
    tags: r() < 0.5 ? [] : [pick(STRINGS), 'gpu'],
    dependsOn: r() < 0.5 ? [] : ['td-0000000000000002', 'td-0000000000000003'],
    blockedBy: r() < 0.5 ? [] : ['td-0000000000000003'],
    whyBlocked: maybe(pick(STRINGS)),
    revision: Math.floor(r() * 1000),
    position: Math.floor(r() * 2 ** 40),
    priority: Math.floor(r() * 65535) - 32768,
    createdBy: 'se-root',
    createdAt: '2026-12-03T15:51:20.123Z',
    updatedAt: '2026-12-03T15:51:21.456Z',
    leaseExpiresAt: maybe('2026-12-03T16:21:21.456Z'),
    leaseExpired: maybe(r() < 0.5),
    result: pick(results),
  };
  for (const k of Object.keys(it)) if (it[k] === undefined) delete it[k];
  return it;
}

describe('compiled response serialiser', () => {
  it('should write what zod writes for 2,000 random items and claim answers', () => {
    const r = rng(22);
    const envelope = compileSerializer(ItemEnvelope);
    const claim = compileSerializer(ClaimResult);
    const zodJson = (schema: z.ZodType, v: unknown) => JSON.parse(JSON.stringify(z.encode(schema, v)));
    for (let i = 0; i < 1000; i++) {
      const e = { item: item(r) };
      expect(JSON.parse(envelope(e)), JSON.stringify(e)).toEqual(zodJson(ItemEnvelope, e));
      const c =
        r() < 0.3
          ? { claimed: false, ...(r() < 0.5 ? { reason: pick(r) } : {}) }
          : { claimed: true, item: item(r), ...(r() < 0.3 ? { dispatch: { token: 'cs_x', worktree: { path: '/w', branch: 'b' }, base: null, n: 1 } } : {}) };
      expect(JSON.parse(claim(c)), JSON.stringify(c)).toEqual(zodJson(ClaimResult, c));
    }
    function pick(r: () => number) {
      return STRINGS[Math.floor(r() * STRINGS.length)];
    }
  });

  it('should still refuse an answer without a required property, as zod does', () => {
    const envelope = compileSerializer(ItemEnvelope);
    const bad = { item: item(rng(1)) };
    delete bad.item.id;
    expect(() => envelope(bad)).toThrow();
    expect(z.safeEncode(ItemEnvelope as z.ZodType, bad).success).toBe(false);
  });
});

describe('the hot routes over HTTP', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t?.close());

  it('should answer next, done, get and an empty next with the full item', async () => {
    const root = await t.session({ name: 'ser-root' });
    const c = root.client;
    const add = await c.post('/v1/todos', { title: 'tricky "title" ✓', note: 'line\nbreak', tags: ['a'] });
    expect(add.status).toBe(201);
    const next = await c.post('/v1/todos/next', {});
    expect(next.status).toBe(200);
    expect(next.body).toMatchObject({
      claimed: true,
      item: { title: 'tricky "title" ✓', note: 'line\nbreak', tags: ['a'], status: 'in-progress', owner: root.id },
    });
    expect(z.safeDecode(ClaimResult, next.body).success).toBe(true);
    const id = next.body.item.id;
    const done = await c.post(`/v1/todos/${id}/done`, { result: { files: ['a.ts'], ok: true } });
    expect(done.status).toBe(200);
    expect(done.body.item).toMatchObject({ status: 'done', result: { files: ['a.ts'], ok: true } });
    expect(z.safeDecode(ItemEnvelope, done.body).success).toBe(true);
    const get = await c.get(`/v1/todos/${id}`);
    expect(get.body).toEqual(done.body);
    expect((await c.post('/v1/todos/next', {})).body).toEqual({ claimed: false });
  });
});
