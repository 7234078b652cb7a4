/**
 * Priority and the filters of `next` against a reference sort on random data: the
 * order is (priority desc, position, id), the seed's (position, id) among equal priorities, and
 * `tags` (every one), `anyTags` (at least one), `minPriority` and `assignedToMe` admit exactly the
 * items they say. Both claim paths are checked: the lone statement (one `next` at a time over
 * HTTP) and the batch function coord_next_many (migrations/0011), which concurrent `next`s share.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { scaled } from '../helpers/scale.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

const TAGS = ['a', 'b', 'c'];
const arbItem = fc.record({
  priority: fc.integer({ min: -2, max: 2 }),
  tags: fc.subarray(TAGS),
  assigned: fc.constantFrom('none', 'me', 'other'),
});
const arbFilters = fc.record(
  {
    tags: fc.subarray(TAGS, { maxLength: 2 }),
    anyTags: fc.subarray(TAGS, { maxLength: 2 }),
    minPriority: fc.integer({ min: -2, max: 2 }),
    assignedToMe: fc.boolean(),
  },
  { requiredKeys: [] },
);
type Filters = { tags?: string[]; anyTags?: string[]; minPriority?: number; assignedToMe?: boolean };
type Stored = { id: string; priority: number; position: number; tags: string[]; assignee?: string };

/** The reference: what `next` may hand `me`, in the order it must hand it out. */
function reference(items: Stored[], f: Filters, me: string): string[] {
  return items
    .filter((i) => (f.assignedToMe ? i.assignee === me : !i.assignee || i.assignee === me))
    .filter((i) => (f.tags ?? []).every((tag) => i.tags.includes(tag)))
    .filter((i) => !f.anyTags?.length || f.anyTags.some((tag) => i.tags.includes(tag)))
    .filter((i) => f.minPriority === undefined || i.priority >= f.minPriority)
    .sort((x, y) => y.priority - x.priority || x.position - y.position || (x.id < y.id ? -1 : x.id > y.id ? 1 : 0))
    .map((i) => i.id);
}

/** A fresh list (root session) with two claimers, `me` and `other`, holding `specs`. */
async function world(specs: { priority: number; tags: string[]; assigned: string }[]) {
  const root = await t.session();
  const me = await t.session({ parentId: root.id, by: root.client });
  const other = await t.session({ parentId: root.id, by: root.client });
  const items: Stored[] = [];
  for (const s of specs) {
    const assignee = s.assigned === 'me' ? me.id : s.assigned === 'other' ? other.id : undefined;
    const r = await root.client.post('/v1/todos', { title: 'x', priority: s.priority, tags: s.tags, ...(assignee ? { assignee } : {}) });
    expect(r.status).toBe(201);
    items.push({ id: r.body.item.id, priority: r.body.item.priority, position: r.body.item.position, tags: r.body.item.tags, assignee });
  }
  return { root, me, other, items };
}

describe('priority', () => {
  it('should default to 0, be set on add and edit, and refuse what is not a small integer', async () => {
    const root = await t.session();
    const a = (await root.client.post('/v1/todos', { title: 'a' })).body.item;
    expect(a.priority).toBe(0);
    const b = (await root.client.post('/v1/todos', { title: 'b', priority: 5 })).body.item;
    expect(b.priority).toBe(5);
    const edited = await root.client.patch(`/v1/todos/${a.id}`, { priority: -3 });
    expect([edited.status, edited.body.item.priority, edited.body.item.revision]).toEqual([200, -3, 2]);
    for (const bad of [1.5, 40_000, '1']) {
      const r = await root.client.post('/v1/todos', { title: 'c', priority: bad });
      expect([r.status, r.body.code]).toEqual([400, 'validation_failed']);
    }
  });

  it('should take priorities from a bulk add too', async () => {
    const root = await t.session();
    const me = await t.session({ parentId: root.id, by: root.client });
    const r = await root.client.post('/v1/todos/bulk', { items: [{ title: 'low', priority: -1 }, { title: 'mid' }, { title: 'high', priority: 3 }] });
    expect(r.status).toBe(201);
    expect(r.body.items.map((i: { priority: number }) => i.priority)).toEqual([-1, 0, 3]);
    const order = [];
    for (let i = 0; i < 3; i++) order.push((await me.client.post('/v1/todos/next', {})).body.item.title);
    expect(order).toEqual(['high', 'mid', 'low']);
  });

  it('should keep the seed order (position, id) when every priority is 0', async () => {
    const { me, items } = await world([0, 0, 0].map((priority) => ({ priority, tags: [], assigned: 'none' })));
    const got = [];
    for (;;) {
      const r = await me.client.post('/v1/todos/next', {});
      if (!r.body.claimed) break;
      got.push(r.body.item.id);
    }
    expect(got).toEqual(items.map((i) => i.id));
  });
});

describe('next filters', () => {
  it('should hand out, one next at a time, exactly the reference order of what the filters admit', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(arbItem, { minLength: 0, maxLength: 14 }), arbFilters, async (specs, filters) => {
        const { root, me, items } = await world(specs);
        const got: string[] = [];
        for (;;) {
          const r = await me.client.post('/v1/todos/next', { scope: `session:${root.id}`, ...filters });
          expect(r.status).toBe(200);
          if (!r.body.claimed) break;
          got.push(r.body.item.id);
        }
        expect(got).toEqual(reference(items, filters, me.id));
      }),
      { numRuns: scaled(25, 5) },
    );
  });

  it('should give the batch function coord_next_many the same order and the same admission', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(arbItem, { minLength: 0, maxLength: 14 }), arbFilters, fc.integer({ min: 1, max: 6 }), async (specs, f, k) => {
        const { root, me, items } = await world(specs);
        // k requests of one actor in one batch: the batch hands them the first k, in order.
        const rows = await t.sql<{ id: string | null }[]>`
          select (f.o_item).id from coord_next_many('tm-default', ${`session:${root.id}`}, ${Array(k).fill(me.id)}::text[], false, 0,
            ${f.minPriority ?? null}::int, ${f.tags?.length ? f.tags : null}::text[], ${f.anyTags?.length ? f.anyTags : null}::text[],
            ${!!f.assignedToMe}, null::text[]) with ordinality f(o_item, o_retry, ord) order by f.ord`;
        expect(rows.map((r) => r.id).filter((id) => id !== null)).toEqual(reference(items, f, me.id).slice(0, k));
      }),
      { numRuns: scaled(25, 5) },
    );
  });

  it('should batch concurrent filtered nexts without handing an item twice or one the filters refuse', async () => {
    const root = await t.session();
    const agents = await Promise.all(Array.from({ length: 8 }, () => t.session({ parentId: root.id, by: root.client })));
    const wanted = new Set<string>();
    for (let i = 0; i < 40; i++) {
      const item = (await root.client.post('/v1/todos', { title: `i${i}`, tags: i % 2 ? ['gpu'] : ['cpu'], priority: i % 3 })).body.item;
      if (i % 2) wanted.add(item.id);
    }
    const got: string[] = [];
    await Promise.all(
      agents.map(async (a) => {
        for (;;) {
          const r = await a.client.post('/v1/todos/next', { tags: ['gpu'], minPriority: 0 });
          if (!r.body.claimed) return;
          got.push(r.body.item.id);
        }
      }),
    );
    expect(got.length).toBe(wanted.size);
    expect(new Set(got)).toEqual(wanted);
  });

  it('should refuse filters in a scope with its own claim order, and give the unfiltered batch function the priority order', async () => {
    const root = await t.session();
    const me = await t.session({ parentId: root.id, by: root.client });
    const hi = (await root.client.post('/v1/todos', { title: 'hi', priority: 1 })).body.item;
    await root.client.post('/v1/todos', { title: 'lo' });
    const [row] = await t.sql<{ id: string }[]>`
      select (f.o_item).id from coord_next_many('tm-default', ${`session:${root.id}`}, ${[me.id]}::text[], false, 0, null::int, null::text[], null::text[], false, null::text[]) f`;
    expect(row.id).toBe(hi.id);
    const r = await me.client.post('/v1/todos/next', { scope: 'graph:nope', tags: ['x'] });
    expect([400, 403, 404, 422]).toContain(r.status);
  });
});
