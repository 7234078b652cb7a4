/**
 * The SDK against a listening server: every facade method once, with the shapes the
 * generated types promise.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoordError, createClient, type CoordClient } from '@coord/sdk';
import { startTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
let admin: CoordClient;
beforeAll(async () => {
  t = await startTestApp();
  admin = createClient({ baseUrl: t.base, token: t.admin.token });
});
afterAll(async () => t?.close());

async function agent(name = 'agent') {
  const { session, token } = await admin.sessions.create({ name });
  return { session, token, client: createClient({ baseUrl: t.base, token }) };
}

describe('client.tokens', () => {
  it('should create, list, rotate and revoke a token, with typed errors', async () => {
    const a = await agent('tokens');
    const made = await a.client.tokens.create({ name: 'ci', expiresIn: '1h' });
    expect(made.token).toMatchObject({ name: 'ci', state: 'active', principal: { kind: 'session', id: a.session.id } });
    const ci = createClient({ baseUrl: t.base, token: made.secret });
    expect((await ci.me()).token).toEqual({ id: made.token.id, name: 'ci' });
    expect((await a.client.tokens.list()).map((k) => k.name).sort()).toEqual(['ci', 'default']);
    const rotated = await a.client.tokens.rotate(made.token.id, { expiresIn: null });
    expect(rotated.token.expiresAt).toBeNull();
    await expect(ci.me()).rejects.toMatchObject({ status: 401 });
    expect(await admin.tokens.revoke(made.token.id)).toMatchObject({ state: 'revoked' });
    expect((await admin.tokens.list({ principal: a.session.id, includeRevoked: true })).map((k) => `${k.name}:${k.state}`)).toEqual([
      'ci:revoked',
      'default:active',
    ]);
    const dup = await a.client.tokens.create({ name: 'default' }).catch((e: CoordError) => e);
    expect(dup).toMatchObject({ status: 409, code: 'token_name_taken' });
  });
});

describe('client.audit', () => {
  it('should page through who changed an item, and refuse a session with Forbidden', async () => {
    const a = await agent('audited');
    const item = await a.client.todos.add({ title: 'audited by the SDK' });
    await a.client.todos.claim(item.id);
    const page = await admin.audit.list({ subjectId: item.id, limit: 1 });
    expect(page.entries).toMatchObject([{ event: 'claimed', subjectId: item.id, actor: { kind: 'session', id: a.session.id, token: 'default' } }]);
    expect(page.nextCursor).not.toBeNull();
    expect((await admin.audit.listAll({ subjectId: item.id, limit: 1 })).map((e) => e.event)).toEqual(['claimed', 'added']);
    await expect(a.client.audit.list()).rejects.toMatchObject({ status: 403, code: 'forbidden' });
  });
});

describe('client.me and client.sessions', () => {
  it('should tell a user from a session with me()', async () => {
    const a = await agent('me-check');
    expect(await admin.me()).toMatchObject({ kind: 'user' });
    expect(await a.client.me()).toMatchObject({ kind: 'session', id: a.session.id, scope: `session:${a.session.id}` });
  });

  it('should create, get, list, stop and delete sessions', async () => {
    const root = await agent('root');
    const child = await root.client.sessions.create({ name: 'child' });
    expect(child.session).toMatchObject({ parentId: root.session.id, rootId: root.session.id, status: 'active' });
    expect(child.token).toMatch(/^coord_/);
    expect(await root.client.sessions.get(child.session.id)).toMatchObject({ id: child.session.id, name: 'child' });
    const page = await root.client.sessions.list({ limit: 1 });
    expect(page.sessions).toHaveLength(1);
    expect(page.nextCursor).not.toBeNull();
    const all = await root.client.sessions.listAll({ limit: 1 });
    expect(all.map((s) => s.id).sort()).toEqual([root.session.id, child.session.id].sort());
    const stopped = await root.client.sessions.stop(child.session.id);
    expect(stopped.session.status).toBe('stopped');
    const other = await root.client.sessions.create({ name: 'other' });
    const deleted = await root.client.sessions.delete(other.session.id);
    expect(deleted.session.status).toBe('deleted');
  });
});

describe('client.todos', () => {
  it('should add, get, list (one page, iterate, all), edit and read readiness', async () => {
    const a = await agent();
    const first = await a.client.todos.add({ title: '  Wire the claim CAS ', tags: ['p1', 'backend', 'p1'] });
    expect(first).toMatchObject({ title: 'Wire the claim CAS', tags: ['backend', 'p1'], status: 'todo', ready: true, revision: 1 });
    const sub = await a.client.todos.add({ title: 'Regression test', parentId: first.id });
    expect(sub.parentId).toBe(first.id);
    expect((await a.client.todos.get(first.id)).id).toBe(first.id);
    const page = await a.client.todos.list({ limit: 1 });
    expect(page.items.map((i) => i.id)).toEqual([first.id]);
    expect(page.nextCursor).toBeTruthy();
    const iterated: string[] = [];
    for await (const i of a.client.todos.iterate({ limit: 1 })) iterated.push(i.id);
    expect(iterated).toEqual([first.id, sub.id]);
    expect((await a.client.todos.listAll({ tag: 'backend' })).map((i) => i.id)).toEqual([first.id]);
    const edited = await a.client.todos.edit(first.id, { note: 'see #12' }, { ifMatch: first.revision });
    expect(edited).toMatchObject({ note: 'see #12', revision: 2 });
    const r = await a.client.todos.readiness(first.id);
    expect(r).toMatchObject({ id: first.id, ready: true, claimable: true });
  });

  it('should claim, start, next, heartbeat, block, done and reopen', async () => {
    const a = await agent();
    const x = await a.client.todos.add({ title: 'x' });
    const y = await a.client.todos.add({ title: 'y' });
    const z = await a.client.todos.add({ title: 'z' });
    expect((await a.client.todos.claim(x.id)).status).toBe('in-progress');
    expect((await a.client.todos.start(y.id)).owner).toBe(a.session.id);
    const n = await a.client.todos.next();
    expect(n).toMatchObject({ claimed: true, item: { id: z.id } });
    expect(await a.client.todos.next()).toEqual({ claimed: false });
    const hb = await a.client.todos.heartbeat(x.id);
    expect(hb.leaseExpiresAt).toBeTruthy();
    expect((await a.client.todos.block(x.id, 'waiting on API review')).note).toBe('waiting on API review');
    expect((await a.client.todos.done(x.id)).status).toBe('done');
    expect(await a.client.todos.reopen(x.id)).toMatchObject({ status: 'todo' });
    expect((await a.client.todos.next({ scope: `session:${a.session.id}` })).item?.id).toBe(x.id);
  });

  it('should report a lost claim as claimed:false with its reason from tryClaim', async () => {
    const root = await agent('root');
    const other = await root.client.sessions.create({ parentId: root.session.id });
    const otherClient = createClient({ baseUrl: t.base, token: other.token });
    const item = await root.client.todos.add({ title: 'contested' });
    expect((await otherClient.todos.tryClaim(item.id)).claimed).toBe(true);
    const lost = await root.client.todos.tryClaim(item.id);
    expect(lost.claimed).toBe(false);
    expect(lost.reason?.code).toBe('already_claimed');
  });

  it('should replace dependencies, assign and remove', async () => {
    const a = await agent();
    const api = await a.client.todos.add({ title: 'API' });
    const ui = await a.client.todos.add({ title: 'UI' });
    const publish = await a.client.todos.add({ title: 'Publish' });
    const deps = await a.client.todos.setDependencies(publish.id, [ui.id, api.id, api.id]);
    expect(deps).toMatchObject({ dependsOn: [api.id, ui.id].sort(), status: 'blocked' });
    expect((await a.client.todos.setDependencies(publish.id, [])).dependsOn).toEqual([]);
    const assigned = await a.client.todos.assign(ui.id, a.session.id);
    expect(assigned.assignee).toBe(a.session.id);
    expect((await a.client.todos.assign(ui.id, null)).assignee).toBeUndefined();
    expect(await a.client.todos.remove(publish.id)).toEqual({ removed: [publish.id] });
  });

  it('should add many items at once with addMany, refs naming each other, or refuse all of them', async () => {
    const a = await agent();
    const existing = await a.client.todos.add({ title: 'existing' });
    const r = await a.client.todos.addMany([
      { ref: 'api', title: 'API' },
      { ref: 'api-test', title: 'API test', parentRef: 'api', dependsOn: ['api', existing.id] },
    ]);
    expect(r.items.map((i) => i.title)).toEqual(['API', 'API test']);
    expect(r.refs).toEqual({ api: r.items[0].id, 'api-test': r.items[1].id });
    expect(r.items[1]).toMatchObject({ parentId: r.items[0].id, dependsOn: [r.items[0].id, existing.id].sort(), status: 'blocked' });
    const err = await a.client.todos
      .addMany([{ title: 'fine' }, { ref: 'x', title: 'x', dependsOn: ['nobody'] }], { scope: `session:${a.session.id}` })
      .catch((e) => e);
    expect(err).toBeInstanceOf(CoordError);
    expect([err.status, err.code, err.problem.index, err.problem.ref]).toEqual([422, 'unknown_ref', 1, 'x']);
    expect((await a.client.todos.listAll()).length).toBe(3);
  });
});

describe('client.events and client.admin', () => {
  it('should read a topic page with log() and follow it live with follow()', async () => {
    const a = await agent();
    const topic = `todo:session:${a.session.id}`;
    const item = await a.client.todos.add({ title: 'watched' });
    const page = await a.client.events.log(topic, { after: 0 });
    expect(page.events.map((e) => e.event)).toEqual(['added']);
    expect(page.events[0].data).toMatchObject({ id: item.id });
    const stream = a.client.events.follow(`session:${a.session.id}`, { after: page.nextAfter });
    const got: string[] = [];
    const reading = (async () => {
      for await (const e of stream) {
        got.push(`${e.event} ${e.data.id}`);
        if (got.length === 2) break;
      }
    })();
    await a.client.todos.claim(item.id);
    await a.client.todos.done(item.id);
    await reading;
    expect(got).toEqual([`claimed ${item.id}`, `done ${item.id}`]);
    expect(Number(stream.lastEventId)).toBeGreaterThan(page.nextAfter);
  });

  it('should read and reload the configuration as a user', async () => {
    expect((await admin.admin.config()).todo).toMatchObject({ emit_events: 'all', list_limit: 2000 });
    const r = await admin.admin.reload();
    expect(r).toHaveProperty('restartRequired');
  });
});

describe('client.scenarios and todos.export', () => {
  it('should create a scenario, read it and its status (JSON and text), and publish a result', async () => {
    const created = await admin.scenarios.create({
      name: 'strath',
      members: [
        { name: 'api', task: 'Build the API' },
        { name: 'ship', task: 'Ship it', dependsOn: ['api'], requiresResult: true },
      ],
    });
    expect(created.scenario.members.map((m) => m.name).sort()).toEqual(['api', 'ship']);
    expect(Object.keys(created.tokens).sort()).toEqual(['api', 'ship']);
    expect((await admin.scenarios.get('strath')).id).toBe(created.scenario.id);
    const status = await admin.scenarios.status('strath');
    expect(status.complete).toBe(false);
    expect(status.members.find((m) => m.name === 'ship')?.waitingOn).toEqual(['api']);
    expect(await admin.scenarios.statusText('strath')).toMatch(/^SCENARIO strath/);
    const shipClient = createClient({ baseUrl: t.base, token: created.tokens.ship });
    const published = await shipClient.scenarios.publishResult('strath', 'ship', { version: '1.4.0' });
    expect(published.member.result).toEqual({ version: '1.4.0' });
    expect(published.scenarioComplete).toBe(false);
  });

  it('should export a scope as the seed’s Markdown and as JSON', async () => {
    const a = await agent();
    const item = await a.client.todos.add({ title: 'Draft the release notes', tags: ['docs'] });
    const md = await a.client.todos.export(`session:${a.session.id}`);
    expect(md).toContain(`# Todo export: session:${a.session.id}`);
    expect(md).toContain('- [ ] Draft the release notes');
    const json = await a.client.todos.export(`session:${a.session.id}`, 'json');
    expect(json.map((i) => i.id)).toEqual([item.id]);
  });
});
