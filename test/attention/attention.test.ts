/**
 * `GET /v1/attention` (src/attention/attention.service.ts): every kind of stuck work appears with
 * its reason, the session concerned (by name) and the request that resolves it, oldest first;
 * the listed action works; only operators may read it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readWorkFacts } from '../../src/health/work.js';
import { LAST_SEEN_FLUSH_MS } from '../../src/sessions/sessions.liveness.js';
import { addItem, Client, startTestApp, type TestApp } from '../helpers/app.js';
import { graphDoc, registerAgents, setSubtaskState } from '../graphs/graphs.helpers.js';

const LEASE_MS = 2000;
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ todo: { claimLeaseMs: LEASE_MS, listLimit: 50 } });
});
afterAll(async () => t?.close());

const ok = (r: { status: number; body: unknown }, status = 200) => expect(r.status, JSON.stringify(r.body)).toBe(status);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('GET /v1/attention', () => {
  it('lists expired claims, silent holders, items reserved for a stopped session, manual blocks and ended graph subtasks, with their actions', async () => {
    const worker = await t.session({ name: 'worker-1' });
    const expired = await addItem(worker.client, 'left behind');
    const blocked = await addItem(worker.client, 'needs a decision');
    const fine = await addItem(worker.client, 'kept alive');
    for (const i of [expired, blocked]) ok(await worker.client.post(`/v1/todos/${i.id}/claim`));
    ok(await worker.client.post(`/v1/todos/${blocked.id}/block`, { note: 'which database?' }));

    const gone = await t.session({ name: 'gone', parentId: worker.id, by: worker.client });
    const reserved = await addItem(worker.client, 'for gone', { assignee: gone.id });
    ok(await t.admin.post(`/v1/sessions/${gone.id}/stop`));

    const silent = await t.admin.post('/v1/sessions', { name: 'quiet-one', heartbeatIntervalMs: 5000 });
    ok(silent, 201);
    const quiet = new Client(t.base, silent.body.token);
    const held = await addItem(quiet, 'held quietly');
    ok(await quiet.post(`/v1/todos/${held.id}/claim`));
    ok(await worker.client.post(`/v1/todos/${fine.id}/claim`));
    for (let i = 0; i < 4; i++) {
      await sleep(LEASE_MS / 3);
      ok(await quiet.post(`/v1/todos/${held.id}/heartbeat`));
      ok(await worker.client.post(`/v1/todos/${fine.id}/heartbeat`));
    }
    // After the replica's last-seen flush of its calls (every LAST_SEEN_FLUSH_MS), which would undo the silence.
    await new Promise((r) => setTimeout(r, LAST_SEEN_FLUSH_MS + 200));
    await t.sql`update sessions set last_seen_at = now() - interval '1 hour' where id = ${silent.body.session.id}`;
    // Its claim (and `fine`) stay fresh meanwhile (time is compressed here: the lease is short, the silence long).
    await t.sql`update todos set progress_at = now() where id in (${held.id}, ${fine.id})`;

    await registerAgents(t.admin, ['codex']);
    ok(await t.admin.post('/v1/graphs', graphDoc('task-attention', [{ id: 'a' }, { id: 'b' }])), 201);
    await setSubtaskState(t.sql, 'task-attention', 'a', 'FAILED', 'tests fail');

    // A metagit node blocked with a reason.
    ok(await worker.client.post('/v1/task-graphs', { graphId: 'att-meta', title: 'Meta', goal: 'Ship it.' }), 201);
    ok(await worker.client.post('/v1/task-graphs/att-meta/expand', { outline: [{ title: 'Only' }] }));
    ok(await worker.client.post('/v1/task-graphs/att-meta/nodes/only/start', {}));
    ok(await worker.client.post('/v1/task-graphs/att-meta/nodes/only/block', { reason: 'waiting for review' }));

    const r = await t.admin.get('/v1/attention');
    ok(r);
    const by = (kind: string) => r.body.entries.filter((e: any) => e.kind === kind);
    expect(by('expired-claim')).toEqual([
      expect.objectContaining({
        subjectId: expired.id,
        title: 'left behind',
        session: { id: worker.id, name: 'worker-1' },
        actions: [{ action: 'reopen', method: 'POST', path: `/v1/todos/${expired.id}/reopen` }],
      }),
    ]);
    expect(by('silent-holder')).toEqual([
      expect.objectContaining({
        subjectId: silent.body.session.id,
        title: 'quiet-one',
        scope: null,
        detail: 'holds 1 item(s) in progress',
        actions: [{ action: 'stop', method: 'POST', path: `/v1/sessions/${silent.body.session.id}/stop` }],
      }),
    ]);
    expect(by('reserved-for-gone')).toEqual([
      expect.objectContaining({ subjectId: reserved.id, session: { id: gone.id, name: 'gone' }, detail: 'reserved for a stopped session' }),
    ]);
    // The item's readiness says so too.
    const why = (await worker.client.get(`/v1/todos/${reserved.id}/readiness`)).body;
    expect(why.reasons).toContainEqual(expect.objectContaining({ code: 'assignee_gone', ids: [gone.id] }));
    expect(by('manual-block')).toEqual([
      expect.objectContaining({ subjectId: blocked.id, detail: 'which database?', session: { id: worker.id, name: 'worker-1' } }),
    ]);
    expect(by('graph-subtask-ended')).toEqual([
      expect.objectContaining({
        scope: 'graph:task-attention',
        title: 'a',
        detail: 'FAILED: tests fail',
        actions: [{ action: 'resume', method: 'POST', path: '/v1/graphs/task-attention/resume', body: { subtaskId: 'a' } }],
      }),
    ]);
    expect(by('metagit-node-blocked')).toEqual([
      expect.objectContaining({
        scope: 'metagit:att-meta',
        title: 'Only',
        detail: 'waiting for review',
        session: { id: worker.id, name: 'worker-1' },
        actions: [{ action: 'reopen', method: 'POST', path: '/v1/task-graphs/att-meta/nodes/only/reopen' }],
      }),
    ]);
    const reopenNode = by('metagit-node-blocked')[0].actions[0];
    ok(await t.admin.req(reopenNode.method, reopenNode.path, {}));
    expect((await t.admin.get('/v1/attention?kind=metagit-node-blocked')).body.entries).toEqual([]);
    expect(r.body.entries.map((e: any) => e.subjectId)).not.toContain(fine.id);
    const since = r.body.entries.map((e: any) => Date.parse(e.since));
    expect([...since].sort((a, b) => a - b)).toEqual(since);

    // The listed action works: reopening the expired claim takes it off the list.
    const action = by('expired-claim')[0].actions[0];
    ok(await t.admin.req(action.method, action.path, action.body));
    expect((await t.admin.get('/v1/attention?kind=expired-claim')).body.entries).toEqual([]);
    // So does reassigning the reserved item.
    const assign = by('reserved-for-gone')[0].actions[0];
    ok(await t.admin.req(assign.method, assign.path, { assignee: worker.id }));
    expect((await t.admin.get('/v1/attention?kind=reserved-for-gone')).body.entries).toEqual([]);
  });

  it('pages in order without loss or repeat, and refuses sessions and foreign cursors', async () => {
    const w = await t.session({ name: 'blocker' });
    for (let i = 0; i < 7; i++) {
      const it = await addItem(w.client, `b${i}`);
      ok(await w.client.post(`/v1/todos/${it.id}/claim`));
      ok(await w.client.post(`/v1/todos/${it.id}/block`, { note: `n${i}` }));
    }
    const all = (await t.admin.get('/v1/attention')).body.entries.map((e: any) => `${e.kind}/${e.subjectId}`);
    const paged: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await t.admin.get(`/v1/attention?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      ok(page);
      paged.push(...page.body.entries.map((e: any) => `${e.kind}/${e.subjectId}`));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(paged).toEqual(all);
    const refused = await w.client.get('/v1/attention');
    expect([refused.status, refused.body.code]).toEqual([403, 'forbidden']);
    expect((await t.admin.get('/v1/attention?cursor=bogus')).body.code).toBe('invalid_cursor');
    // A cursor of this shape whose time overflows int8 is refused too, not a 500.
    for (const us of ['9999999999999999999', '-9999999999999999999']) {
      const forged = Buffer.from(JSON.stringify([us, 'zzz', 'x'])).toString('base64url');
      const r = await t.admin.get(`/v1/attention?cursor=${forged}`);
      expect([r.status, r.body.code]).toEqual([400, 'invalid_cursor']);
    }
    expect((await t.admin.get('/v1/attention?kind=nope')).body.code).toBe('validation_failed');
  });

  it('lists the members of an unfinished scenario that wait on upstream work, and drops them when it is done', async () => {
    const sc = await t.admin.post('/v1/scenarios', {
      name: 'att-scenario',
      members: [
        { name: 'api', task: 'Build the API' },
        { name: 'ship', task: 'Ship it', dependsOn: ['api'] },
      ],
    });
    ok(sc, 201);
    const waiting = async () => (await t.admin.get('/v1/attention?kind=scenario-member-waiting')).body.entries;
    const ship = sc.body.scenario.members.find((m: any) => m.name === 'ship');
    expect(await waiting()).toEqual([
      expect.objectContaining({ subjectId: ship.seedId, title: 'ship: Ship it', detail: 'waiting on api', actions: [], scope: sc.body.scenario.scope }),
    ]);
    const apiMember = new Client(t.base, sc.body.tokens.api);
    const apiSeed = sc.body.scenario.members.find((m: any) => m.name === 'api').seedId;
    ok(await apiMember.post(`/v1/todos/${apiSeed}/claim`));
    ok(await apiMember.post(`/v1/todos/${apiSeed}/done`));
    expect(await waiting()).toEqual([]);
  });

  it('does not count a silent session whose only claim has expired as a holder (its claim is free), in the list or the gauge', async () => {
    // A team of its own: the other tests' silent holders come and go on their own clocks.
    const created = await t.admin.post('/v1/teams', { name: 'quiet-team', operator: { name: 'quiet-op' } });
    ok(created, 201);
    const operator = new Client(t.base, created.body.secret);
    const made = await operator.post('/v1/sessions', { name: 'gone-quiet', heartbeatIntervalMs: 5000 });
    ok(made, 201);
    const quiet = new Client(t.base, made.body.token);
    const item = await addItem(quiet, 'claimed then left');
    ok(await quiet.post(`/v1/todos/${item.id}/claim`));
    await sleep(LAST_SEEN_FLUSH_MS + 200);
    await t.sql`update sessions set last_seen_at = now() - interval '1 hour' where id = ${made.body.session.id}`;
    const holders = async () => (await operator.get('/v1/attention?kind=silent-holder')).body.entries.filter((e: any) => e.subjectId === made.body.session.id);
    expect(await holders()).toHaveLength(1);
    const team = (await operator.get('/v1/me')).body.teamId as string;
    const gauge = async () => (await readWorkFacts(t.sql, LEASE_MS)).silentHolders.find((h) => h.team === team)?.n ?? 0;
    expect(await gauge()).toBe(1);
    // The lease runs out: the claim is free, so the session holds nothing.
    await t.sql`update todos set progress_at = now() - interval '1 hour' where id = ${item.id}`;
    expect(await holders()).toEqual([]);
    expect(await gauge()).toBe(0);
    expect((await operator.get(`/v1/sessions/${made.body.session.id}`)).body.session.holding.count).toBe(0);
  });
});
