/**
 * `coord todo done --result|--result-json|--result-file`, `coord todo results` and `coord scenario
 * list`, in process against a real app.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { runInProcess, tempHome } from './helpers.js';

let t: TestApp;
let home: string;
beforeAll(async () => {
  t = await startTestApp();
  home = tempHome();
});
afterAll(async () => t?.close());

describe('coord todo done --result and coord todo results', () => {
  it('should hand text, JSON and file results on, and show them to the dependent', async () => {
    const s = await t.session();
    const env = { COORD_URL: t.base, COORD_TOKEN: s.token };
    const add = async (title: string, extra: Record<string, unknown> = {}) => (await s.client.post('/v1/todos', { title, ...extra })).body.item;
    const a = await add('a');
    const b = await add('b');
    const c = await add('c');
    const join = await add('join', { dependsOn: [a.id, b.id, c.id] });
    for (const i of [a, b, c]) await s.client.post(`/v1/todos/${i.id}/claim`);
    const text = await runInProcess(['todo', 'done', a.id, '--result', 'merged as 4f2e1c'], env);
    expect(text.code, text.stderr).toBe(0);
    expect(JSON.parse(text.stdout).item.result).toBe('merged as 4f2e1c');
    expect((await runInProcess(['todo', 'done', b.id, '--result-json', '{"files":3}'], env)).code).toBe(0);
    const file = path.join(home, 'result.json');
    writeFileSync(file, '[1, 2]\n');
    expect((await runInProcess(['todo', 'done', c.id, '--result-file', file], env)).code).toBe(0);

    const json = JSON.parse((await runInProcess(['todo', 'results', join.id], env)).stdout);
    const byId = new Map(json.dependencies.map((d: { id: string; result: unknown }) => [d.id, d.result]));
    expect([byId.get(a.id), byId.get(b.id), byId.get(c.id)]).toEqual(['merged as 4f2e1c', { files: 3 }, [1, 2]]);
    const human = await runInProcess(['todo', 'results', join.id, '--human'], env);
    expect(human.stdout.split('\n')[0]).toMatch(/^ID +STATUS +TITLE +RESULT$/);
    expect(human.stdout).toMatch(new RegExp(`^${a.id} +done +a +merged as 4f2e1c$`, 'm'));
    expect(human.stdout).toMatch(new RegExp(`^${b.id} +done +b +\\{"files":3\\}$`, 'm'));
    expect((await runInProcess(['todo', 'get', a.id, '--human'], env)).stdout).toMatch(/^ {2}result +merged as 4f2e1c$/m);
  });

  it('should refuse bad result flags as usage errors without calling the server', async () => {
    const env = { COORD_URL: 'http://127.0.0.1:9', COORD_TOKEN: 't' };
    const bad = await runInProcess(['todo', 'done', 'td-x', '--result-json', '{nope'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--result-json is not valid JSON');
    const two = await runInProcess(['todo', 'done', 'td-x', '--result', 'a', '--result-json', '1'], env);
    expect([two.code, two.stderr.includes('at most one of --result')]).toEqual([2, true]);
  });

  it('should report result_too_large with exit 1', async () => {
    const s = await t.session();
    const item = (await s.client.post('/v1/todos', { title: 'big' })).body.item;
    await s.client.post(`/v1/todos/${item.id}/claim`);
    const r = await runInProcess(['todo', 'done', item.id, '--result', 'x'.repeat(20_000)], { COORD_URL: t.base, COORD_TOKEN: s.token });
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stderr).error.code).toBe('result_too_large');
  });
});

describe('coord scenario list', () => {
  it('should list every page of the scenarios the caller may read', async () => {
    const one = await t.admin.post('/v1/scenarios', { name: 'cli-list-one', members: [{ name: 'a', task: 'A' }] });
    await t.admin.post('/v1/scenarios', { name: 'cli-list-two', members: [{ name: 'b', task: 'B' }] });
    const all = await runInProcess(['scenario', 'list', '--limit', '1', '--token', t.admin.token!, '--url', t.base, '--json'], {});
    expect(all.code, all.stderr).toBe(0);
    expect(JSON.parse(all.stdout).scenarios.map((s: { name: string }) => s.name)).toEqual(['cli-list-one', 'cli-list-two']);
    const member = await runInProcess(['scenario', 'list', '--human'], { COORD_URL: t.base, COORD_TOKEN: one.body.tokens.a });
    expect(member.stdout.split('\n')).toEqual([
      expect.stringMatching(/^NAME +ID +MEMBERS +DONE\/TOTAL +STATE$/),
      expect.stringMatching(/^cli-list-one +sc-[0-9a-f]{16} +1 +0\/1 +in progress$/),
      '',
    ]);
  });
});
