/**
 * Regressions for defects found by review and the HTTP suites (each failed before its fix): crafted
 * cursors, an empty parent id, router and HTTP-parser errors, a reload after the config file was
 * deleted, and a dependency cycle named whole.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTodoConfig, reloadTodoConfig, testConfig, TODO_DEFAULTS } from '../../src/config.js';
import { addItem, startTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ todo: { listLimit: 2 } });
});
afterAll(async () => t?.close());

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
const count = async () => (await t.sql`select count(*)::int as n from todos`)[0].n as number;

describe('a cursor Coord did not issue is 400 invalid_cursor on every list', () => {
  it('should refuse crafted todo cursors (wrong types, fractions, huge numbers, garbage)', async () => {
    const s = await t.session();
    for (const cursor of [
      b64(['x', 1]),
      b64([1.5, 'td-x']),
      b64([1e308, 'td-0000000000000000']),
      '99999999999999999999',
      b64([99999999999999999999, 'td-0000000000000000']),
      'zzz',
      '%%%',
      b64({}),
    ]) {
      const r = await s.client.get(`/v1/todos?cursor=${encodeURIComponent(cursor)}`);
      expect(r.status, cursor).toBe(400);
      expect(r.body.code).toBe('invalid_cursor');
      expect(r.headers.get('content-type')).toContain('application/problem+json');
    }
    const all = await t.admin.get(`/v1/todos?all=true&cursor=${b64([1, 1, 'td-0000000000000000'])}`);
    expect(all.body.code).toBe('invalid_cursor');
  });

  it('should refuse garbage cursors on sessions, graphs, agents, intents and task graphs', async () => {
    for (const route of ['/v1/sessions', '/v1/graphs', '/v1/agents', '/v1/intents', '/v1/task-graphs']) {
      for (const cursor of ['zzz', b64([1]), b64(['../x'])]) {
        const r = await t.admin.get(`${route}?cursor=${cursor}`);
        expect(r.status, `${route} ${cursor}`).toBe(400);
        expect(r.body.code).toBe('invalid_cursor');
      }
    }
  });

  it('should still page through sessions and todos with the cursors it issues', async () => {
    const s = await t.session();
    for (const title of ['a', 'b', 'c']) await addItem(s.client, title);
    const first = await s.client.get('/v1/todos');
    const second = await s.client.get(`/v1/todos?cursor=${first.body.nextCursor}`);
    expect([...first.body.items, ...second.body.items].map((i: { title: string }) => i.title)).toEqual(['a', 'b', 'c']);
    const p1 = await t.admin.get('/v1/sessions?limit=1');
    expect(p1.body.nextCursor).toBeTruthy();
    const p2 = await t.admin.get(`/v1/sessions?limit=1&cursor=${p1.body.nextCursor}`);
    expect(p2.status).toBe(200);
    expect(p2.body.sessions[0].id > p1.body.sessions[0].id).toBe(true);
  });
});

describe('a constraint a client can reach is never a 500', () => {
  it('should answer an empty parentId with 422 parent_not_found and write nothing', async () => {
    const s = await t.session();
    const before = await count();
    const r = await s.client.post('/v1/todos', { title: 'x', parentId: '' });
    expect(r.status).toBe(422);
    expect(r.body.code).toBe('parent_not_found');
    expect(await count()).toBe(before);
  });
});

/** One raw HTTP/1.1 request (fetch normalises the path and caps headers itself). */
function raw(pathname: string, headers: Record<string, string> = {}): Promise<{ status: number; type: string; body: any }> {
  const url = new URL(t.base);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path: pathname, headers: { authorization: `Bearer ${t.admin.token}`, ...headers } }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('errors raised before any route runs are problem+json', () => {
  it('should answer bad percent-encoding with 400 malformed_url', async () => {
    for (const p of ['/v1/todos/%ff%fe', '/v1/todos/%zz']) {
      const r = await raw(p);
      expect(r.status).toBe(400);
      expect(r.type).toContain('application/problem+json');
      expect(r.body.code).toBe('malformed_url');
    }
  });

  it('should answer a path parameter over the limit with 414 uri_too_long', async () => {
    const r = await raw(`/v1/todos/${'a'.repeat(1500)}`);
    expect(r.status).toBe(414);
    expect(r.type).toContain('application/problem+json');
    expect(r.body.code).toBe('uri_too_long');
  });

  it('should answer a header block over 16 KiB with 431 headers_too_large', async () => {
    const r = await raw('/v1/todos', { 'x-big': 'a'.repeat(20_000) });
    expect(r.status).toBe(431);
    expect(r.type).toContain('application/problem+json');
    expect(r.body.code).toBe('headers_too_large');
  });
});

describe('bytes that are not HTTP', () => {
  it('should answer 400 malformed_request as problem+json and close the connection', async () => {
    const url = new URL(t.base);
    const reply = await new Promise<string>((resolve, reject) => {
      const sock = connect(Number(url.port), url.hostname, () => sock.write('NOT HTTP AT ALL\r\n\r\n'));
      let text = '';
      sock.on('data', (c) => (text += c));
      sock.on('end', () => resolve(text));
      sock.on('error', reject);
    });
    expect(reply).toMatch(/^HTTP\/1\.1 400 /);
    expect(reply).toContain('application/problem+json');
    expect(JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4)).code).toBe('malformed_request');
  });
});

describe('a reload after coord.toml was deleted reloads the defaults', () => {
  it('should apply the defaults, and read the file again once it is back', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'coord-reload-'));
    try {
      const file = path.join(dir, 'coord.toml');
      writeFileSync(file, '[todo]\nclaim_lease = "5m"\n');
      const config = testConfig({ configFile: file });
      expect(reloadTodoConfig(config).applied).toEqual({ claim_lease: 300_000 });
      rmSync(file);
      expect(reloadTodoConfig(config).applied).toEqual({ claim_lease: TODO_DEFAULTS.claimLeaseMs });
      writeFileSync(file, '[todo]\nclaim_lease = "7m"\n');
      expect(reloadTodoConfig(config).applied).toEqual({ claim_lease: 420_000 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('a dependency cycle error names the whole cycle', () => {
  it('should name all three ids of a three-node cycle, in order', async () => {
    const s = await t.session();
    const c = await addItem(s.client, 'c');
    const b = await addItem(s.client, 'b', { dependsOn: [c.id] });
    const a = await addItem(s.client, 'a', { dependsOn: [b.id] });
    const r = await s.client.put(`/v1/todos/${c.id}/dependencies`, { dependsOn: [a.id] });
    expect(r.status).toBe(422);
    expect(r.body.code).toBe('dependency_cycle');
    expect(r.body.cycle).toEqual([c.id, a.id, b.id, c.id]);
    expect(r.body.detail).toContain(`${c.id} → ${a.id} → ${b.id} → ${c.id}`);
    expect((await s.client.get(`/v1/todos/${c.id}`)).body.item.dependsOn).toEqual([]);
  });
});

describe('text that is not valid Unicode is refused with 400 and nothing is written', () => {
  // JSON.stringify keeps a lone surrogate as the escape `\ud800`, which is what a hostile client sends.
  const LONE = '\ud800';

  it('should refuse a lone surrogate in a title, a note or a tag', async () => {
    const s = await t.session();
    const before = await count();
    for (const body of [{ title: `a${LONE}b` }, { title: 'x', note: LONE }, { title: 'x', tags: [LONE] }]) {
      const r = await s.client.post('/v1/todos', body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.code).toBe('validation_failed');
      expect(r.body.errors[0].path).toMatch(/^body\./);
    }
    expect(await count()).toBe(before);
  });

  it('should refuse a lone surrogate in a scenario result as a value, nested, or as a key, and keep the old result', async () => {
    const name = `uni-${Date.now()}`;
    const created = await t.admin.post('/v1/scenarios', { name, members: [{ name: 'a', requiresResult: true }] });
    expect(created.status).toBe(201);
    const a = t.admin.as(created.body.tokens.a);
    expect((await a.post(`/v1/scenarios/${name}/members/a/result`, { result: 'ok' })).status).toBe(200);
    for (const result of [LONE, { deep: [1, { x: LONE }] }, { [LONE]: 1 }]) {
      const r = await a.post(`/v1/scenarios/${name}/members/a/result`, { result });
      expect(r.status).toBe(400);
      expect(r.body.code).toBe('validation_failed');
    }
    const got = await t.admin.get(`/v1/scenarios/${name}`);
    expect(got.body.scenario.members.find((m: { name: string }) => m.name === 'a').result).toBe('ok');
  });

  it('should refuse a result nested deeper than 100 levels with 400 (it overflowed JSON.stringify into a 500), and keep the old result', async () => {
    const name = `deep-${Date.now()}`;
    const created = await t.admin.post('/v1/scenarios', { name, members: [{ name: 'a', requiresResult: true }] });
    const a = t.admin.as(created.body.tokens.a);
    const nested = (d: number) => `{"result":${'['.repeat(d)}${']'.repeat(d)}}`;
    expect((await a.post(`/v1/scenarios/${name}/members/a/result`, nested(99))).status).toBe(200);
    for (const d of [101, 5000, 100_000]) {
      const r = await a.post(`/v1/scenarios/${name}/members/a/result`, nested(d));
      expect([d, r.status, r.body.code]).toEqual([d, 400, 'validation_failed']);
      expect(r.body.errors[0].message).toBe('must not nest deeper than 100 levels');
    }
    const got = await t.admin.get(`/v1/scenarios/${name}`);
    expect(JSON.stringify(got.body.scenario.members[0].result)).toBe('['.repeat(99) + ']'.repeat(99));
  });
});

describe('only a session that may claim in the item’s scope can be its assignee', () => {
  it('should refuse an unknown id, another team’s session, a stopped session and an operator with one 422, writing nothing', async () => {
    const root = await t.session();
    const member = await t.session({ parentId: root.id, by: root.client });
    const otherTeam = await t.session();
    const stopped = await t.session({ parentId: root.id, by: root.client });
    await stopped.client.post(`/v1/sessions/${stopped.id}/stop`);
    const item = (await root.client.post('/v1/todos', { title: 'x' })).body.item;
    const [{ id: operatorId }] = await t.sql<{ id: string }[]>`select id from users limit 1`;
    const before = await count();
    for (const bad of ['s-nobody', otherTeam.id, stopped.id, operatorId]) {
      const add = await root.client.post('/v1/todos', { title: 'y', assignee: bad });
      expect([bad, add.status, add.body.code]).toEqual([bad, 422, 'invalid_assignee']);
      const assign = await root.client.put(`/v1/todos/${item.id}/assignee`, { assignee: bad });
      expect([bad, assign.status, assign.body.code]).toEqual([bad, 422, 'invalid_assignee']);
      // The same words for every kind of bad id: a missing session cannot be told from another team's.
      expect(assign.body.detail.replace(bad, '<id>')).toBe(
        `assignee "<id>" is not an active session that may claim in session:${root.id}; assign it to one of that list's sessions (GET /v1/sessions), or leave it unassigned`,
      );
      expect(add.body.detail).toBe(assign.body.detail);
    }
    expect(await count()).toBe(before);
    expect((await root.client.get(`/v1/todos/${item.id}`)).body.item).toMatchObject({ revision: item.revision });
    expect((await root.client.get(`/v1/todos/${item.id}`)).body.item.assignee).toBeUndefined();
    // A member of the list is accepted, by add and by assign; null still unassigns.
    expect((await root.client.post('/v1/todos', { title: 'z', assignee: member.id })).body.item.assignee).toBe(member.id);
    expect((await root.client.put(`/v1/todos/${item.id}/assignee`, { assignee: member.id })).body.item.assignee).toBe(member.id);
    expect((await root.client.put(`/v1/todos/${item.id}/assignee`, { assignee: null })).status).toBe(200);
  });

  it('should accept a scenario member in its scenario and refuse it elsewhere', async () => {
    const s = await t.admin.post('/v1/scenarios', { name: `asg-${Date.now()}`, members: [{ name: 'm1' }] });
    expect(s.status).toBe(201);
    const m1 = s.body.scenario.members.find((m: { name: string }) => m.name === 'm1');
    const scope = s.body.scenario.scope;
    expect((await t.admin.post('/v1/todos', { title: 'x', scope, assignee: m1.sessionId })).status).toBe(201);
    const root = await t.session();
    const elsewhere = await t.admin.post('/v1/todos', { title: 'x', scope: `session:${root.id}`, assignee: m1.sessionId });
    expect([elsewhere.status, elsewhere.body.code]).toEqual([422, 'invalid_assignee']);
  });
});

describe('configuration typos are refused, not ignored (found by a fresh-user review)', () => {
  it('should refuse an unknown section, a key outside [todo] and an unknown COORD_TODO_ variable, naming them', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'coord-cfg-'));
    try {
      const file = path.join(dir, 'coord.toml');
      writeFileSync(file, '[tood]\nclaim_lease = "5m"\n');
      expect(() => loadTodoConfig({}, file)).toThrow(/unknown section "tood"; Coord reads only the \[todo\] section/);
      writeFileSync(file, 'claim_lease = "5m"\n');
      expect(() => loadTodoConfig({}, file)).toThrow(/unknown key "claim_lease"/);
      expect(() => loadTodoConfig({ COORD_TODO_FOO: '1' }, undefined)).toThrow(/unknown COORD_TODO_FOO/);
      writeFileSync(file, '[todo]\nclaim_lease = "5m"\n');
      expect(loadTodoConfig({}, file).claimLeaseMs).toBe(300_000);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('found by test/http/fuzz.test.ts: client input that reached the database', () => {
  it('should answer an empty parentId of a new session with 404 session_not_found and write nothing', async () => {
    const sessions = async () => (await t.sql`select count(*)::int as n from sessions`)[0].n as number;
    const before = await sessions();
    const r = await t.admin.post('/v1/sessions', { name: 'x', parentId: '' });
    expect([r.status, r.body.code]).toEqual([404, 'session_not_found']);
    expect(r.headers.get('content-type')).toContain('application/problem+json');
    expect(await sessions()).toBe(before);
  });

  it('should refuse a write-intent pattern with an unpaired surrogate at intent-map-validation, on validate and create alike', async () => {
    for (const id of ['codex', 'agent-a']) await t.admin.post('/v1/agents', { id });
    const graphs = async () => (await t.sql`select count(*)::int as n from graphs`)[0].n as number;
    const before = await graphs();
    const body = {
      graph: {
        schemaVersion: 1,
        parentTask: { id: 'task-lone', title: 'T', planner: 'codex', reviewer: 'codex' },
        subtasks: [{ id: 'a', implementer: 'agent-a', spec: 'Do a.' }],
        maxConcurrency: 1,
      },
      intentMap: { schemaVersion: 1, parentTaskId: 'task-lone', subtasks: [{ id: 'a', writeIntent: ['src/\ud800/**'] }] },
    };
    for (const path of ['/v1/graphs/validate', '/v1/graphs']) {
      const r = await t.admin.post(path, body);
      expect(r.status, path).toBe(400);
      expect(r.body).toMatchObject({
        code: 'TASK_GRAPH_INVALID',
        stage: 'intent-map-validation',
        recoverable: false,
        details: { parentTaskId: 'task-lone', subtaskId: 'a' },
      });
      expect(r.body.message).toContain('unpaired UTF-16 surrogate');
    }
    expect(await graphs()).toBe(before);
  });
});

describe('an outsider cannot tell another subtree’s object from a missing one', () => {
  /** `a`'s body with `real` swapped for `missing`: what a missing object answers, if nothing leaks. */
  const swapped = (body: unknown, real: string, missing: string) => JSON.parse(JSON.stringify(body).split(real).join(missing));

  it('should answer another orchestrator’s scenario exactly as an unknown one, on every scenario route', async () => {
    const orch = await t.session();
    const name = `leak-${Date.now()}`;
    expect((await orch.client.post('/v1/scenarios', { name, members: [{ name: 'a', task: 'x' }] })).status).toBe(201);
    const outsider = await t.session();
    for (const [method, path] of [
      ['GET', ''],
      ['GET', '/status'],
      ['POST', '/members/a/result'],
    ] as const) {
      const body = method === 'POST' ? { result: 1 } : undefined;
      const real = await outsider.client.req(method, `/v1/scenarios/${name}${path}`, body);
      const missing = await outsider.client.req(method, `/v1/scenarios/no-such-${name}${path}`, body);
      expect([real.status, real.body.code], path).toEqual([404, 'scenario_not_found']);
      expect(swapped(real.body, name, `no-such-${name}`)).toEqual(missing.body);
    }
  });

  it('should answer another subtree’s or scenario’s scope exactly as an unknown one', async () => {
    const owner = await t.session();
    const name = `leak-scope-${Date.now()}`;
    const sc = (await owner.client.post('/v1/scenarios', { name, members: [{ name: 'a' }] })).body.scenario;
    const outsider = await t.session();
    for (const [real, missing] of [
      [`session:${owner.id}`, 'session:s-0000000000000000'],
      [`scenario:${name}`, 'scenario:no-such'],
      [sc.scope, 'scenario:sc-0000000000000000'],
    ]) {
      const a = await outsider.client.get(`/v1/todos?scope=${encodeURIComponent(real)}`);
      const b = await outsider.client.get(`/v1/todos?scope=${encodeURIComponent(missing)}`);
      expect([a.status, a.body.code]).toEqual([404, 'scope_not_found']);
      expect(swapped(a.body, real.slice(real.indexOf(':') + 1), missing.slice(missing.indexOf(':') + 1))).toEqual(b.body);
    }
  });

  it('should answer a shared member from another subtree exactly as a session that does not exist', async () => {
    const other = await t.session();
    const caller = await t.session();
    const real = await caller.client.post('/v1/scenarios', { name: `leak-m-${Date.now()}`, members: [{ name: 'a', session: other.id }] });
    const missing = await caller.client.post('/v1/scenarios', { name: `leak-m-${Date.now()}`, members: [{ name: 'a', session: 's-0000000000000000' }] });
    expect([real.status, real.body.code]).toEqual([404, 'session_not_found']);
    expect(swapped(real.body, other.id, 's-0000000000000000')).toEqual(missing.body);
  });

  it('should answer a graph create with another subtree’s id exactly as with the caller’s own id', async () => {
    for (const id of ['codex', 'agent-a']) await t.admin.post('/v1/agents', { id });
    const graph = {
      schemaVersion: 1,
      parentTask: { id: 'task-taken', title: 'T', planner: 'codex', reviewer: 'codex' },
      subtasks: [{ id: 'a', implementer: 'agent-a', spec: 'Do a.' }],
      maxConcurrency: 1,
    };
    const owner = await t.session();
    expect((await owner.client.post('/v1/graphs', graph)).status).toBe(201);
    const visible = await owner.client.post('/v1/graphs', graph);
    const invisible = await (await t.session()).client.post('/v1/graphs', graph);
    expect([visible.status, visible.body.code]).toEqual([409, 'TASK_STATE_CONFLICT']);
    expect(invisible.body).toEqual(visible.body);
  });
});

describe('found building the suites: a dispatch session never claims', () => {
  it('should answer next in its graph with claimed:false and leave the sibling READY', async () => {
    for (const id of ['codex', 'agent-n']) await t.admin.post('/v1/agents', { id });
    const owner = await t.session();
    const graph = {
      schemaVersion: 1,
      parentTask: { id: 'task-next-by-dispatch', title: 'T', planner: 'codex', reviewer: 'codex' },
      subtasks: [
        { id: 'a', implementer: 'agent-n', spec: 'Do a.' },
        { id: 'b', implementer: 'agent-n', spec: 'Do b.' },
      ],
      maxConcurrency: 2,
    };
    expect((await owner.client.post('/v1/graphs', graph)).status).toBe(201);
    const claim = await owner.client.post('/v1/graphs/task-next-by-dispatch/subtasks/a/claim', { baseCommit: 'a'.repeat(40) });
    expect(claim.status).toBe(200);
    const implementer = t.admin.as(claim.body.dispatch.session.token);
    const next = await implementer.post('/v1/todos/next', { scope: 'graph:task-next-by-dispatch' });
    expect(next.status).toBe(200);
    expect(next.body.claimed).toBe(false);
    expect(next.body.reason).toContain("dispatch's own session");
    const status = await owner.client.get('/v1/graphs/task-next-by-dispatch');
    expect(status.body.graph.subtasks.map((s: { id: string; state: string }) => `${s.id}=${s.state}`)).toEqual(['a=RUNNING', 'b=READY']);
  });
});
