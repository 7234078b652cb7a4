/**
 * Results on done: `POST /v1/todos/{id}/done` with `result` stores it with the item
 * (`todos.result`, migrations/0014), shows it in reads, lists, exports and the `done` event, and
 * dependents read their dependencies' results in one call (`GET /v1/todos/{id}/dependencies`).
 * Real Postgres, real HTTP clients.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { groupCommitStats } from '../../src/todos/todos.batch.js';
import { completeMany } from '../../src/todos/todos.repo.js';
import { addItem as add, startTestApp, type Client, type TestApp } from '../helpers/app.js';
import { bash, shBlockAfter } from '../helpers/process.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

const events = async (c: Client, scope: string) => (await c.get(`/v1/events/log?topic=todo:${scope}&after=0&limit=1000`)).body.events as any[];

/** A session with one claimed item of its own. */
async function claimed(title = 'work') {
  const s = await t.session();
  const item = await add(s.client, title);
  expect((await s.client.post(`/v1/todos/${item.id}/claim`)).status).toBe(200);
  return { s, item, scope: `session:${s.id}` };
}

describe('results on done', () => {
  it('should round-trip a text and a JSON result through get, list, export and the done event', async () => {
    const s = await t.session();
    const scope = `session:${s.id}`;
    const text = await add(s.client, 'text result');
    const json = await add(s.client, 'json result');
    const plain = await add(s.client, 'no result');
    const value = { sha: 'abc123', files: ['a.ts', 'b.ts'], nested: { n: 1, none: null }, ok: true };
    for (const i of [text, json, plain]) await s.client.post(`/v1/todos/${i.id}/claim`);

    const d1 = await s.client.post(`/v1/todos/${text.id}/done`, { result: 'merged as 4f2e1c\nsee PR #12' });
    expect(d1.status).toBe(200);
    expect(d1.body.item).toMatchObject({ status: 'done', result: 'merged as 4f2e1c\nsee PR #12' });
    const d2 = await s.client.post(`/v1/todos/${json.id}/done`, { result: value });
    expect(d2.body.item.result).toEqual(value);
    const d3 = await s.client.post(`/v1/todos/${plain.id}/done`, { result: null });
    expect(d3.status).toBe(200);
    expect('result' in d3.body.item).toBe(false);

    expect((await s.client.get(`/v1/todos/${text.id}`)).body.item.result).toBe('merged as 4f2e1c\nsee PR #12');
    expect((await s.client.get(`/v1/todos/${json.id}`)).body.item.result).toEqual(value);
    const listed = (await s.client.get('/v1/todos')).body.items as any[];
    expect(listed.map((i) => i.result)).toEqual(['merged as 4f2e1c\nsee PR #12', value, undefined]);

    const exported = (await s.client.get(`/v1/scopes/${scope}/export?format=json`)).body;
    expect(exported).toEqual(listed);
    const md = (await s.client.get(`/v1/scopes/${scope}/export`)).body as string;
    expect(md).toBe(
      [
        `# Todo export: ${scope}`,
        '',
        `- [x] text result _(done, owner ${s.id})_`,
        '  Result: merged as 4f2e1c see PR \\#12',
        `- [x] json result _(done, owner ${s.id})_`,
        // Stored as jsonb: an object's keys come back in jsonb's order (shortest first), not the sender's.
        `  Result: {"ok":true,"sha":"abc123","files":\\["a.ts","b.ts"\\],"nested":{"n":1,"none":null}}`,
        `- [x] no result _(done, owner ${s.id})_`,
        '',
      ].join('\n'),
    );

    const done = (await events(s.client, scope)).filter((e) => e.event === 'done');
    expect(done.map((e) => [e.data.id, e.data.result])).toEqual([
      [text.id, 'merged as 4f2e1c\nsee PR #12'],
      [json.id, value], // the null inside the JSON value is kept
      [plain.id, undefined],
    ]);
  });

  it('should refuse a result over max_result with 422 result_too_large and write nothing', async () => {
    const { s, item, scope } = await claimed();
    const before = (await s.client.get(`/v1/todos/${item.id}`)).body.item;
    // 16,383 characters serialise to 16,385 bytes with the quotes: one over the 16,384 default.
    const r = await s.client.post(`/v1/todos/${item.id}/done`, { result: 'x'.repeat(16_383) });
    expect(r.status).toBe(422);
    expect(r.body).toMatchObject({ code: 'result_too_large', limit: 16_384, size: 16_385 });
    // Multi-byte text counts in UTF-8 bytes, a JSON value in its serialisation.
    expect((await s.client.post(`/v1/todos/${item.id}/done`, { result: 'é'.repeat(8192) })).body.code).toBe('result_too_large');
    expect((await s.client.post(`/v1/todos/${item.id}/done`, { result: { v: 'x'.repeat(16_380) } })).body.code).toBe('result_too_large');
    const after = (await s.client.get(`/v1/todos/${item.id}`)).body.item;
    expect(after).toEqual(before);
    expect((await events(s.client, scope)).map((e) => e.event)).toEqual(['added', 'claimed']);
    // Exactly at the limit is fine.
    const ok = await s.client.post(`/v1/todos/${item.id}/done`, { result: 'x'.repeat(16_382) });
    expect([ok.status, ok.body.item.result.length]).toEqual([200, 16_382]);
  });

  it('should refuse a result nested deeper than the JSON depth bound (400) and an unknown body key', async () => {
    const { s, item } = await claimed();
    let deep: unknown = 'leaf';
    for (let i = 0; i < 150; i++) deep = [deep];
    const r = await s.client.post(`/v1/todos/${item.id}/done`, { result: deep });
    expect([r.status, r.body.code]).toEqual([400, 'validation_failed']);
    expect((await s.client.post(`/v1/todos/${item.id}/done`, { results: 'x' })).body.code).toBe('validation_failed');
    expect((await s.client.get(`/v1/todos/${item.id}`)).body.item.status).toBe('in-progress');
  });

  it('should clear the result on reopen, and store none on a later done without one', async () => {
    const { s, item, scope } = await claimed();
    await s.client.post(`/v1/todos/${item.id}/done`, { result: { v: 1 } });
    const reopened = await s.client.post(`/v1/todos/${item.id}/reopen`);
    expect(reopened.status).toBe(200);
    expect(reopened.body.item.status).toBe('todo');
    expect('result' in reopened.body.item).toBe(false);
    expect('result' in (await s.client.get(`/v1/todos/${item.id}`)).body.item).toBe(false);
    const [row] = await t.sql`select result from todos where id = ${item.id}`;
    expect(row.result).toBeNull();
    await s.client.post(`/v1/todos/${item.id}/claim`);
    const again = await s.client.post(`/v1/todos/${item.id}/done`);
    expect('result' in again.body.item).toBe(false);
    const done = (await events(s.client, scope)).filter((e) => e.event === 'done');
    expect(done.map((e) => e.data.result)).toEqual([{ v: 1 }, undefined]);
  });

  it('should store the result given on the override path (the subtree root completes a child’s claim)', async () => {
    const root = await t.session();
    const child = await t.session({ parentId: root.id });
    const item = await add(root.client, 'delegated');
    await child.client.post(`/v1/todos/${item.id}/claim`);
    const r = await root.client.post(`/v1/todos/${item.id}/done`, { result: 'done for you' });
    expect(r.status).toBe(200);
    expect(r.body.item).toMatchObject({ status: 'done', owner: child.id, result: 'done for you' });
    const ev = (await events(root.client, `session:${root.id}`)).find((e) => e.event === 'done');
    expect(ev.data.result).toBe('done for you');
  });

  it('should store every result of 32 sessions racing their done calls on the right item', async () => {
    const root = await t.session();
    const scope = `session:${root.id}`;
    const n = 32;
    const workers = await Promise.all(Array.from({ length: n }, () => t.session({ parentId: root.id })));
    const items: { id: string }[] = [];
    for (let i = 0; i < n; i++) items.push(await add(root.client, `part ${i}`));
    const joiner = await add(root.client, 'join', { dependsOn: items.map((i) => i.id) });
    await Promise.all(workers.map((w, i) => w.client.post(`/v1/todos/${items[i].id}/claim`)));
    // Half text, half JSON, every one naming its item and worker.
    const resultOf = (i: number) => (i % 2 ? `part ${i} by ${workers[i].id}` : { part: i, by: workers[i].id, item: items[i].id });
    const before = { ...groupCommitStats(t.sql).done }; // a copy: the stats are live
    const done = await Promise.all(workers.map((w, i) => w.client.post(`/v1/todos/${items[i].id}/done`, { result: resultOf(i) })));
    const after = groupCommitStats(t.sql).done!;
    expect(done.map((r) => r.status)).toEqual(Array(n).fill(200));
    done.forEach((r, i) => expect(r.body.item).toMatchObject({ id: items[i].id, owner: workers[i].id, result: resultOf(i) }));
    // Group commit did carry several of them in one statement (so the mapping was exercised).
    expect(after.requests - (before.requests ?? 0)).toBeGreaterThan(after.batches - (before.batches ?? 0));
    const stored = await t.sql<{ id: string; result: unknown }[]>`select id, result from todos where id = any(${items.map((i) => i.id)}::text[])`;
    const byId = new Map(stored.map((r) => [r.id, r.result]));
    items.forEach((item, i) => expect(byId.get(item.id)).toEqual(resultOf(i)));
    const evs = (await events(root.client, scope)).filter((e) => e.event === 'done');
    expect(evs).toHaveLength(n);
    for (const e of evs) expect(e.data.result).toEqual(resultOf(items.findIndex((i) => i.id === e.data.id)));

    // The dependent reads all of it in one call, in sorted id order.
    const deps = await workers[0].client.get(`/v1/todos/${joiner.id}/dependencies`);
    expect(deps.status).toBe(200);
    const sorted = items.map((item, i) => ({ item, i })).sort((a, b) => (a.item.id < b.item.id ? -1 : 1));
    expect(deps.body).toEqual({
      id: joiner.id,
      dependencies: sorted.map(({ item, i }) => ({ id: item.id, title: `part ${i}`, status: 'done', result: resultOf(i) })),
    });
  });

  it('should map each result to its own item within one coord_done_many batch, whatever the order', async () => {
    const s = await t.session();
    const items: { id: string }[] = [];
    for (let i = 0; i < 6; i++) {
      const item = await add(s.client, `batch ${i}`);
      await s.client.post(`/v1/todos/${item.id}/claim`);
      items.push(item);
    }
    // One statement, requests in an order unlike the items' ids or positions, one without a result.
    const order = [4, 1, 5, 0, 3, 2];
    const reqs = order.map((i) => ({
      id: items[i].id,
      actor: s.id,
      by: { kind: 'session' as const, id: s.id, token: 'default' },
      leaseMs: t.config.todo.claimLeaseMs,
      emitEvents: t.config.todo.emitEvents,
      result: i === 3 ? undefined : { i },
    }));
    const rows = await completeMany(t.sql, reqs);
    expect(rows.map((r) => r?.id)).toEqual(order.map((i) => items[i].id));
    expect(rows.map((r) => r?.result)).toEqual(order.map((i) => (i === 3 ? null : { i })));
    for (const [k, i] of order.entries()) {
      const item = (await s.client.get(`/v1/todos/${items[i].id}`)).body.item;
      expect([k, item.result]).toEqual([k, i === 3 ? undefined : { i }]);
    }
  });

  it('should complete without a result when coord_done_many gets no results, as a contract completes', async () => {
    const { s, item } = await claimed();
    const [row] = await t.sql`select id, result from coord_done_many(${[item.id]}::text[], ${[s.id]}::text[], false, 0::float8, 'all', false, null::jsonb[],
                                                      null::text[], null::text[], null::text[])`;
    expect(row).toEqual({ id: item.id, result: null });
    expect((await s.client.get(`/v1/todos/${item.id}`)).body.item.status).toBe('done');
  });
});

describe('GET /v1/todos/{id}/dependencies', () => {
  it('should list each dependency with its status, and a result only where one was stored', async () => {
    const s = await t.session();
    const a = await add(s.client, 'a');
    const b = await add(s.client, 'b');
    const c = await add(s.client, 'c');
    const d = await add(s.client, 'd', { dependsOn: [c.id, a.id, b.id] });
    await s.client.post(`/v1/todos/${a.id}/claim`);
    await s.client.post(`/v1/todos/${a.id}/done`, { result: [1, 2, 3] });
    await s.client.post(`/v1/todos/${b.id}/claim`);
    const r = await s.client.get(`/v1/todos/${d.id}/dependencies`);
    expect(r.status).toBe(200);
    const expected = [
      { id: a.id, title: 'a', status: 'done', result: [1, 2, 3] },
      { id: b.id, title: 'b', status: 'in-progress' },
      { id: c.id, title: 'c', status: 'todo' },
    ].sort((x, y) => (x.id < y.id ? -1 : 1));
    expect(r.body).toEqual({ id: d.id, dependencies: expected });
    expect((await s.client.get(`/v1/todos/${a.id}/dependencies`)).body).toEqual({ id: a.id, dependencies: [] });
  });

  it('should answer 404 as for the item to a session of another subtree, and to an unknown id', async () => {
    const owner = await t.session();
    const other = await t.session();
    const dep = await add(owner.client, 'dep');
    const item = await add(owner.client, 'item', { dependsOn: [dep.id] });
    const hidden = await other.client.get(`/v1/todos/${item.id}/dependencies`);
    expect([hidden.status, hidden.body.code]).toEqual([404, 'todo_not_found']);
    const asItem = await other.client.get(`/v1/todos/${item.id}`);
    expect(hidden.body.detail).toBe(asItem.body.detail);
    expect((await other.client.get('/v1/todos/td-0000000000000000/dependencies')).body.code).toBe('todo_not_found');
    // A user and a session of the same subtree may read it.
    expect((await t.admin.get(`/v1/todos/${item.id}/dependencies`)).status).toBe(200);
    const child = await t.session({ parentId: owner.id });
    expect((await child.client.get(`/v1/todos/${item.id}/dependencies`)).body.dependencies).toHaveLength(1);
  });
});

describe('the docs/reference/todo-lists.md “Results” example', () => {
  it('should run as written after the walkthrough', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'coord-results-readme-'));
    try {
      mkdirSync(path.join(dir, '.coord'));
      writeFileSync(path.join(dir, '.coord', 'admin-token'), `${t.admin.token}\n`, { mode: 0o600 });
      const script = [shBlockAfter('Walkthrough with curl', 'docs/tutorial/curl.md'), shBlockAfter('Results', 'docs/reference/todo-lists.md')]
        .join('\n')
        .replaceAll('http://127.0.0.1:3000', t.base);
      const r = await bash(script, { cwd: dir });
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/\nbuild-417\.tar\.gz\nBuild: done \{"sha":"4f2e1c","artifact":"build-417\.tar\.gz"\}\n$/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('results JSON cannot hold', () => {
  it('should refuse a number JSON cannot represent (1e400) with 400, writing nothing', async () => {
    const root = await t.session();
    const item = (await root.client.post('/v1/todos', { title: 'inf' })).body.item;
    await root.client.post(`/v1/todos/${item.id}/claim`);
    const r = await root.client.post(`/v1/todos/${item.id}/done`, '{"result":{"n":1e400}}');
    expect([r.status, r.body.code]).toEqual([400, 'validation_failed']);
    expect((await root.client.get(`/v1/todos/${item.id}`)).body.item.status).toBe('in-progress');
  });
});
