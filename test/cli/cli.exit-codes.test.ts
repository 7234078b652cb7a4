/**
 * The CLI, its main run in process (the spawned binary is cli.binary.test.ts): exit codes (0 ok, 1 error, 2 usage, 3 nothing to claim), JSON
 * output that parses, agent mode (JSON by default with COORD_TOKEN in the environment), errors
 * on stderr.
 */
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

/** A new root session; `env` is how an agent runs (COORD_URL + COORD_TOKEN). */
async function agent() {
  const s = await t.session();
  return { ...s, env: cleanEnv(home, { COORD_URL: t.base, COORD_TOKEN: s.token }) };
}

describe('exit codes', () => {
  it('should exit 0 and print JSON that parses when a command succeeds in agent mode', async () => {
    const a = await agent();
    const add = await runCoord(['todo', 'add', 'Wire the claim CAS', '--tag', 'backend'], { env: a.env });
    expect(add.code).toBe(0);
    const item = JSON.parse(add.stdout).item;
    expect(item).toMatchObject({ title: 'Wire the claim CAS', tags: ['backend'], status: 'todo', scope: `session:${a.id}` });
    const [list, get] = await Promise.all([runCoord(['todo', 'list'], { env: a.env }), runCoord(['todo', 'get', item.id], { env: a.env })]);
    expect(JSON.parse(list.stdout).items.map((i: { id: string }) => i.id)).toEqual([item.id]);
    expect(JSON.parse(get.stdout).item.id).toBe(item.id);
    expect(list.stderr + get.stderr).toBe('');
  });

  it('should exit 3 with {claimed:false} when next finds nothing, and with the reason when claim loses', async () => {
    const a = await agent();
    const next = await runCoord(['todo', 'next'], { env: a.env });
    expect(next.code).toBe(3);
    expect(JSON.parse(next.stdout)).toEqual({ claimed: false });
    const human = await runCoord(['todo', 'next', '--human'], { env: a.env });
    expect(human).toMatchObject({ code: 3, stdout: 'No eligible items in scope.\n' });
    const child = await t.session({ parentId: a.id, by: a.client });
    const item = (await a.client.post('/v1/todos', { title: 'contested' })).body.item;
    await child.client.post(`/v1/todos/${item.id}/claim`);
    const lost = await runCoord(['todo', 'claim', item.id], { env: a.env });
    expect(lost.code).toBe(3);
    expect(JSON.parse(lost.stdout)).toMatchObject({ claimed: false, id: item.id, code: 'already_claimed' });
    const lostHuman = await runCoord(['todo', 'start', item.id, '--human'], { env: a.env });
    expect(lostHuman.code).toBe(3);
    expect(lostHuman.stdout).toMatch(new RegExp(`^Item ${item.id} is not eligible to claim: `));
  });

  it('should exit 0 and say Claimed when claim or next wins', async () => {
    const a = await agent();
    const x = (await a.client.post('/v1/todos', { title: 'first' })).body.item;
    const y = (await a.client.post('/v1/todos', { title: 'second' })).body.item;
    const claim = await runCoord(['todo', 'claim', x.id, '--human'], { env: a.env });
    expect(claim).toMatchObject({ code: 0, stdout: `Claimed ${x.id}: first\n` });
    const next = await runCoord(['todo', 'next'], { env: a.env });
    expect(next.code).toBe(0);
    expect(JSON.parse(next.stdout)).toMatchObject({ claimed: true, item: { id: y.id, status: 'in-progress', owner: a.id } });
  });

  it('should exit 1 with the problem on stderr when the server refuses', async () => {
    const a = await agent();
    const json = await runCoord(['todo', 'get', 'td-doesnotexist'], { env: a.env });
    expect(json.code).toBe(1);
    expect(json.stdout).toBe('');
    expect(JSON.parse(json.stderr).error).toMatchObject({ code: 'todo_not_found', status: 404 });
    const human = await runCoord(['todo', 'done', 'td-doesnotexist', '--human'], { env: a.env });
    expect(human.code).toBe(1);
    expect(human.stderr).toMatch(/^error: .*\(todo_not_found\)\n$/);
  });

  it('should hint at the fix when a user lists without a scope or tries to claim', async () => {
    const flags = ['--url', t.base, '--token', t.admin.token!, '--human'];
    const list = await runInProcess(['todo', 'list', ...flags]);
    expect(list.code).toBe(1);
    expect(list.stderr).toContain('(no_session_context)');
    expect(list.stderr).toContain('hint: a user has no list of its own: pass --scope');
    const s = await t.session();
    const item = (await s.client.post('/v1/todos', { title: 'x' })).body.item;
    const claim = await runInProcess(['todo', 'claim', item.id, ...flags]);
    expect(claim.code).toBe(1);
    expect(claim.stderr).toContain('hint: only sessions claim');
  });

  it('should exit 1 with a hint for a bad token and for a server that is not there', async () => {
    const bad = await runCoord(['todo', 'list', '--human'], { env: cleanEnv(home, { COORD_URL: t.base, COORD_TOKEN: 'coord_nope' }) });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('(unauthorized)');
    expect(bad.stderr).toContain('hint: check --token');
    const down = await runCoord(['todo', 'list', '--url', 'http://127.0.0.1:9', '--token', 'x'], { env: cleanEnv(home) });
    expect(down.code).toBe(1);
    expect(down.stderr).toContain('cannot reach Coord at http://127.0.0.1:9');
  });

  it('should exit 2 for usage errors: unknown command, missing argument, unknown option, conflicting flags, no token', async () => {
    const a = await agent();
    const results = await Promise.all([
      runCoord(['todo', 'frobnicate'], { env: a.env }),
      runCoord(['todo', 'add'], { env: a.env }),
      runCoord(['todo', 'list', '--bogus'], { env: a.env }),
      runCoord(['todo', 'list', '--status', 'nope'], { env: a.env }),
      runCoord(['todo', 'list', '--scope', 'session:x', '--scenario', 'y'], { env: a.env }),
      runCoord(['todo', 'assign', 'td-x'], { env: a.env }),
      runCoord(['todo', 'list'], { env: cleanEnv(home, { COORD_URL: t.base }) }),
      runCoord([], { env: a.env }),
    ]);
    expect(results.map((r) => r.code)).toEqual([2, 2, 2, 2, 2, 2, 2, 2]);
    expect(results[0].stderr).toContain("unknown command 'frobnicate'");
    expect(results[1].stderr).toContain("missing required argument 'title'");
    expect(JSON.parse(results[4].stderr).error).toMatchObject({ code: 'usage' });
    expect(results[6].stderr).toContain('no token');
  });

  it('should print help with examples and exit 0', async () => {
    const r = await runCoord(['todo', 'next', '--help'], { env: cleanEnv(home) });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Exit code 3 when nothing is eligible.');
    expect(r.stdout).toContain('$ coord todo next');
  });
});

describe('output modes', () => {
  it('should default to JSON with COORD_TOKEN in the environment and to text without it', async () => {
    const a = await agent();
    const agentMode = await runCoord(['todo', 'add', 'x'], { env: a.env });
    expect(JSON.parse(agentMode.stdout).item.title).toBe('x');
    const humanFlag = await runCoord(['todo', 'add', 'y', '--human'], { env: a.env });
    expect(humanFlag.stdout).toMatch(/^Added td-[0-9a-f]{16}: y\n$/);
    const noJson = await runCoord(['--no-json', 'todo', 'add', 'z'], { env: a.env });
    expect(noJson.stdout).toMatch(/^Added td-[0-9a-f]{16}: z\n$/);
    // A flag token (no COORD_TOKEN in the environment): people, so text unless --json.
    const flagEnv = cleanEnv(home, { COORD_URL: t.base });
    const text = await runCoord(['todo', 'list', '--token', a.token], { env: flagEnv });
    expect(text.stdout.split('\n')[0]).toMatch(/^ID +STATUS +TITLE +OWNER +ASSIGNEE +TAGS +WHY BLOCKED$/);
    const json = await runCoord(['todo', 'list', '--token', a.token, '--json'], { env: flagEnv });
    expect(JSON.parse(json.stdout).items).toHaveLength(3);
  });

  it('should print parseable JSON for session, deps, assign, block, done, reopen, edit, rm and why (in-process)', async () => {
    const a = await agent();
    const run = async (...args: string[]) => {
      const r = await runInProcess(args, a.env);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
      return JSON.parse(r.stdout);
    };
    const created = await run('session', 'create', '--name', 'helper');
    expect(created.session).toMatchObject({ name: 'helper', parentId: a.id });
    expect((await run('session', 'list')).sessions.length).toBe(2);
    const api = (await run('todo', 'add', 'API')).item;
    const pub = (await run('todo', 'add', 'Publish')).item;
    expect((await run('todo', 'deps', pub.id, api.id)).item.dependsOn).toEqual([api.id]);
    expect((await run('todo', 'why', pub.id)).ready).toBe(false);
    expect((await run('todo', 'assign', pub.id, a.id)).item.assignee).toBe(a.id);
    await run('todo', 'claim', api.id);
    expect((await run('todo', 'heartbeat', api.id)).item.leaseExpiresAt).toBeTruthy();
    expect((await run('todo', 'block', api.id, 'waiting on review')).item).toMatchObject({ status: 'blocked', note: 'waiting on review' });
    expect((await run('todo', 'done', api.id)).item.status).toBe('done');
    const reopened = (await run('todo', 'reopen', api.id)).item;
    expect(reopened.status).toBe('todo');
    expect((await run('todo', 'edit', api.id, '--title', 'API v2', '--if-match', String(reopened.revision))).item.title).toBe('API v2');
    expect((await run('todo', 'deps', pub.id)).item.dependsOn).toEqual([]);
    expect(await run('todo', 'rm', pub.id)).toEqual({ removed: [pub.id] });
    expect((await run('session', 'stop', created.session.id)).session.status).toBe('stopped');
  });
});
