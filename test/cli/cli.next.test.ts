/**
 * `coord todo add --priority` and `coord todo next` with filters and `--wait`, in
 * process against a real app.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { runInProcess } from './helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

describe('coord todo next with priorities, filters and a wait', () => {
  it('should claim by priority within the filters, wait for an item, and exit 3 when none came', async () => {
    const root = await t.session();
    const agent = await t.session({ parentId: root.id, by: root.client });
    const asRoot = { COORD_URL: t.base, COORD_TOKEN: root.token };
    const asAgent = { COORD_URL: t.base, COORD_TOKEN: agent.token };
    expect((await runInProcess(['todo', 'add', 'low gpu', '--tag', 'gpu'], asRoot)).code).toBe(0);
    const hi = await runInProcess(['todo', 'add', 'high gpu', '--tag', 'gpu', '--priority', '5'], asRoot);
    expect(JSON.parse(hi.stdout).item.priority).toBe(5);
    expect((await runInProcess(['todo', 'add', 'cpu', '--tag', 'cpu', '--priority', '9'], asRoot)).code).toBe(0);
    const first = await runInProcess(['todo', 'next', '--tag', 'gpu'], asAgent);
    expect([first.code, JSON.parse(first.stdout).item.title]).toEqual([0, 'high gpu']);
    const floor = await runInProcess(['todo', 'next', '--tag', 'gpu', '--min-priority', '1', '--wait', '200ms'], asAgent);
    expect([floor.code, JSON.parse(floor.stdout).claimed]).toEqual([3, false]);
    const waiting = runInProcess(['todo', 'next', '--any-tag', 'docs', '--wait', '30s'], asAgent);
    await new Promise((r) => setTimeout(r, 200));
    await root.client.post('/v1/todos', { title: 'write docs', tags: ['docs'] });
    const got = await waiting;
    expect([got.code, JSON.parse(got.stdout).item.title]).toEqual([0, 'write docs']);
  });

  it('should finish and claim the next in one call with todo done --next, exit 3 when nothing came', async () => {
    const root = await t.session();
    const agent = await t.session({ parentId: root.id, by: root.client });
    const asRoot = { COORD_URL: t.base, COORD_TOKEN: root.token };
    const asAgent = { COORD_URL: t.base, COORD_TOKEN: agent.token };
    await runInProcess(['todo', 'add', 'one', '--tag', 'x'], asRoot);
    await runInProcess(['todo', 'add', 'two', '--tag', 'x'], asRoot);
    const one = JSON.parse((await runInProcess(['todo', 'next'], asAgent)).stdout).item;
    const both = await runInProcess(['todo', 'done', one.id, '--result', 'ok', '--next', '--tag', 'x'], asAgent);
    const body = JSON.parse(both.stdout);
    expect([both.code, body.item.status, body.item.result, body.next.claimed, body.next.item.title]).toEqual([0, 'done', 'ok', true, 'two']);
    const human = await runInProcess(['--human', 'todo', 'done', body.next.item.id, '--next', '--wait', '100ms'], asAgent);
    expect(human.code).toBe(3);
    expect(human.stdout).toContain(`Done ${body.next.item.id}: two`);
    expect(human.stdout).toContain('No eligible items in scope.');
  });

  it('should refuse next options on todo done without --next as a usage error, completing nothing', async () => {
    const s = await t.session();
    const env = { COORD_URL: t.base, COORD_TOKEN: s.token };
    const item = (await s.client.post('/v1/todos', { title: 'kept' })).body.item;
    await s.client.post(`/v1/todos/${item.id}/claim`);
    const r = await runInProcess(['todo', 'done', item.id, '--tag', 'x', '--wait', '1s'], env);
    expect([r.code, r.stderr.includes('--tag, --wait only apply with --next')]).toEqual([2, true]);
    expect((await s.client.get(`/v1/todos/${item.id}`)).body.item.status).toBe('in-progress');
  });

  it('should refuse a wait over 60s and a non-integer priority as usage errors', async () => {
    const env = { COORD_URL: 'http://127.0.0.1:9', COORD_TOKEN: 't' };
    const wait = await runInProcess(['todo', 'next', '--wait', '2m'], env);
    expect([wait.code, wait.stderr.includes('--wait is at most 60s')]).toEqual([2, true]);
    const prio = await runInProcess(['todo', 'add', 'x', '--priority', 'high'], env);
    expect([prio.code, prio.stderr.includes('--priority must be an integer')]).toEqual([2, true]);
  });
});
