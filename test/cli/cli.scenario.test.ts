/**
 * `coord scenario create|status|get|result` and `coord todo export`: a scenario started from flags, worked by its members through the CLI, to completion.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { cleanEnv, runCoord, runInProcess, tempHome } from './helpers.js';

let t: TestApp;
let home: string;
beforeAll(async () => {
  t = await startTestApp();
  home = tempHome();
});
afterAll(async () => t?.close());

describe('coord scenario', () => {
  it('should start a scenario from flags and drive it to completion', async () => {
    const operator = cleanEnv(home, { COORD_URL: t.base });
    const create = await runCoord(
      [
        'scenario',
        'create',
        'strath',
        '--member',
        'api=Build the API',
        '--member',
        'ship=Ship the release',
        '--depends-on',
        'ship=api',
        '--requires-result',
        'ship',
        '--member',
        'reviewer',
        '--token',
        t.admin.token!,
        '--json',
      ],
      { env: operator },
    );
    expect(create.code, create.stderr).toBe(0);
    const created = JSON.parse(create.stdout);
    expect(created.scenario.members.map((m: { name: string }) => m.name).sort()).toEqual(['api', 'reviewer', 'ship']);
    const member = (name: string) => cleanEnv(home, { COORD_URL: t.base, COORD_TOKEN: created.tokens[name] });

    const status = await runCoord(['scenario', 'status', 'strath', '--human'], { env: member('reviewer') });
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/^SCENARIO strath \(sc-[0-9a-f]{16}\): in progress/);
    expect(status.stdout).toMatch(/^ship +s-\S+ +0\/1 +pending +api$/m);

    // "ship" waits for "api": nothing for it yet (exit 3); "api" takes its seed and finishes it.
    expect((await runInProcess(['todo', 'next', '--scenario', 'strath'], member('ship'))).code).toBe(3);
    const apiNext = await runInProcess(['todo', 'next', '--scenario', 'strath', '--human'], member('api'));
    expect(apiNext.stdout).toMatch(/^Claimed td-[0-9a-f]{16}: Build the API\n$/);
    const apiSeed = apiNext.stdout.split(' ')[1].replace(':', '');
    expect((await runInProcess(['todo', 'done', apiSeed], member('api'))).code).toBe(0);
    const shipNext = JSON.parse((await runInProcess(['todo', 'next', '--scenario', 'strath'], member('ship'))).stdout);
    expect((await runInProcess(['todo', 'done', shipNext.item.id], member('ship'))).code).toBe(0);
    const result = await runInProcess(['scenario', 'result', 'strath', 'ship', '{"version":"1.4.0"}', '--human'], member('ship'));
    expect(result.stdout).toBe('Published the result of ship; the scenario is complete\n');

    const done = JSON.parse((await runInProcess(['scenario', 'status', 'strath'], member('reviewer'))).stdout);
    expect(done.complete).toBe(true);
    const got = JSON.parse((await runInProcess(['scenario', 'get', 'strath'], member('api'))).stdout);
    expect(got.scenario.members.find((m: { name: string }) => m.name === 'ship').result).toEqual({ version: '1.4.0' });
  });

  it('should refuse an unknown member in --depends-on as a usage error without calling the server', async () => {
    const r = await runInProcess(['scenario', 'create', 'x', '--member', 'a=A', '--depends-on', 'b=a', '--token', 't'], {});
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--depends-on names "b", which is not a --member');
  });

  it('should report the server’s scenario errors with exit 1', async () => {
    const r = await runInProcess(
      [
        'scenario',
        'create',
        'loop',
        '--member',
        'a=A',
        '--member',
        'b=B',
        '--depends-on',
        'a=b',
        '--depends-on',
        'b=a',
        '--token',
        t.admin.token!,
        '--url',
        t.base,
        '--json',
      ],
      {},
    );
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stderr).error.code).toBe('scenario_dependency_cycle');
  });
});

describe('coord todo export', () => {
  it('should print the seed’s Markdown for the caller’s own list, and JSON or a file on request', async () => {
    const s = await t.session();
    const parent = (await s.client.post('/v1/todos', { title: 'Ship', tags: ['release'] })).body.item;
    await s.client.post('/v1/todos', { title: 'Notes', parentId: parent.id });
    const env = cleanEnv(home, { COORD_URL: t.base, COORD_TOKEN: s.token });
    const md = await runCoord(['todo', 'export', '--human'], { env });
    expect(md.code).toBe(0);
    expect(md.stdout.split('\n').slice(0, 3)).toEqual([`# Todo export: session:${s.id}`, '', expect.stringMatching(/^- \[ \] Ship /)]);
    expect(md.stdout).toMatch(/^ {2}- \[ \] Notes /m);
    const json = JSON.parse((await runInProcess(['todo', 'export', `session:${s.id}`], { COORD_URL: t.base, COORD_TOKEN: s.token })).stdout);
    expect(json.map((i: { title: string }) => i.title)).toEqual(['Ship', 'Notes']);
    const file = path.join(home, 'export.md');
    const written = await runInProcess(['todo', 'export', '-o', file, '--human'], { COORD_URL: t.base, COORD_TOKEN: s.token });
    expect(written.stderr).toBe(`Exported session:${s.id} to ${file}\n`);
    expect(readFileSync(file, 'utf8')).toBe(md.stdout);
  });
});
