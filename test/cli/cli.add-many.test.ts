/** `coord todo add-many --file <path|->` as a process: a file or stdin in, one transaction, the refusal naming the item. */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { cleanEnv, runCoord, tempHome } from './helpers.js';

let t: TestApp;
let home: string;
beforeAll(async () => {
  t = await startTestApp();
  home = tempHome();
});
afterAll(async () => t?.close());

describe('coord todo add-many', () => {
  it('should add the items of stdin or a file in order, and refuse a bad file whole with exit 1', async () => {
    const s = await t.session();
    const env = cleanEnv(home, { COORD_URL: t.base, COORD_TOKEN: s.token });
    const items = [
      { ref: 'api', title: 'Wire the API' },
      { title: 'Test it', dependsOn: ['api'] },
    ];
    const piped = await runCoord(['todo', 'add-many', '--file', '-'], { env, input: JSON.stringify(items) });
    expect(piped.code).toBe(0);
    const r = JSON.parse(piped.stdout);
    expect(r.items.map((i: any) => [i.title, i.status])).toEqual([
      ['Wire the API', 'todo'],
      ['Test it', 'blocked'],
    ]);
    expect(r.refs.api).toBe(r.items[0].id);

    const file = path.join(home, 'plan.json');
    writeFileSync(file, JSON.stringify({ scope: `session:${s.id}`, items: [{ title: 'From a file', dependsOn: [r.items[1].id] }] }));
    const human = await runCoord(['todo', 'add-many', '--file', file, '--human'], { env });
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^Added 1 item\n/);
    expect(human.stdout).toContain('From a file');
    const quiet = await runCoord(['todo', 'add-many', '--file', file, '-q'], { env });
    expect(quiet.stdout).toMatch(/^td-[0-9a-f]{16}\n$/);

    writeFileSync(file, JSON.stringify([{ title: 'fine' }, { ref: 'x', title: 'x', dependsOn: ['nobody'] }]));
    const bad = await runCoord(['todo', 'add-many', '--file', file, '--human'], { env });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('items[1] (ref "x"): dependency "nobody" is neither an item id (td-…) nor a ref of this request');
    const other = await t.session();
    const clash = await runCoord(['todo', 'add-many', '--file', path.join(home, 'plan.json'), '--session', other.id], { env });
    expect(clash.code).not.toBe(0);
    writeFileSync(file, '{"items": 3}');
    const shape = await runCoord(['todo', 'add-many', '--file', file], { env });
    expect(shape.code).toBe(2);
    expect(shape.stderr).toContain('must hold a JSON array of items');
    expect((await s.client.get('/v1/todos')).body.items).toHaveLength(4);
  });
});
