/**
 * Teams management (docs/architecture.md "Teams"): the server administrator creates
 * teams, each with a first operator whose token works at once; an operator sees only its own team
 * (another team answers exactly like a missing one), adds operators to it and cannot create
 * teams; names are unique; a refused or invalid create writes nothing; sessions manage no team;
 * the server-wide configuration is the administrator's only. Real Postgres, over HTTP.
 */
import { createClient, Forbidden, NotFound, Conflict, type CoordError } from '@coord/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_TEAM } from '../../src/db/schema/teams.js';
import { startTestApp, type Client, type Res, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

const MISSING = 'tm-0000000000000000';

/** Rows of the tables a team create or an operator add writes (teams, users, tokens, events). */
async function counts() {
  const [r] = await t.sql<{ teams: number; users: number; tokens: number; events: number }[]>`
    select (select count(*)::int from teams) as teams, (select count(*)::int from users) as users,
           (select count(*)::int from tokens) as tokens, (select count(*)::int from events) as events`;
  return r;
}

/** Creates a team as the administrator; any status but 201 throws. */
async function createTeam(name: string, operator: string) {
  const r = await t.admin.post('/v1/teams', { name, operator: { name: operator } });
  if (r.status !== 201) throw new Error(`create team ${name}: ${r.status} ${JSON.stringify(r.body)}`);
  return { ...r.body, client: t.admin.as(r.body.secret) as Client };
}

/** Whether `a` (for the id `real`) and `b` (for `missing`) are one answer: status, content type and body once the id is swapped. */
function expectSameAnswer(a: Res, b: Res, real: string, missing: string, status: number) {
  expect(a.status, JSON.stringify(a.body)).toBe(status);
  expect(a.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(b.headers.get('content-type')).toBe(a.headers.get('content-type'));
  expect(b.status).toBe(a.status);
  expect(JSON.stringify(a.body).split(real).join(missing)).toBe(JSON.stringify(b.body));
}

describe('teams', () => {
  let a: Awaited<ReturnType<typeof createTeam>>;
  let b: Awaited<ReturnType<typeof createTeam>>;
  let adminId: string;

  beforeAll(async () => {
    adminId = (await t.admin.get('/v1/me')).body.id;
    a = await createTeam('alpha', 'alice');
    b = await createTeam('beta', 'bob');
  });

  it('should create a team with its first operator and that operator’s default token, whose secret works at once', async () => {
    expect(a.team).toEqual({
      id: expect.stringMatching(/^tm-[0-9a-f]{16}$/),
      name: 'alpha',
      createdAt: expect.any(String),
      createdBy: adminId,
      operatorCount: 1,
    });
    expect(a.operator).toEqual({
      id: expect.stringMatching(/^u-[0-9a-f]{16}$/),
      name: 'alice',
      teamId: a.team.id,
      role: 'operator',
      createdAt: expect.any(String),
    });
    expect(a.token).toMatchObject({
      name: 'default',
      principal: { kind: 'user', id: a.operator.id },
      createdBy: adminId,
      expiresAt: null,
      state: 'active',
      current: false,
    });
    expect(a.secret).toMatch(/^coord_/);
    const me = await a.client.get('/v1/me');
    expect(me.status).toBe(200);
    expect(me.body).toEqual({
      kind: 'user',
      id: a.operator.id,
      name: 'alice',
      teamId: a.team.id,
      role: 'operator',
      token: { id: a.token.id, name: 'default' },
    });
    // The first operator works: it registers a session of its team and manages its own tokens.
    const s = await t.session({ by: a.client, name: 'alpha-agent' });
    expect((await s.client.get('/v1/me')).body).toMatchObject({ kind: 'session', teamId: a.team.id });
    expect((await a.client.get('/v1/tokens')).body.tokens.map((k: { name: string; current: boolean }) => [k.name, k.current])).toEqual([['default', true]]);
    // The secret is never stored.
    expect(JSON.stringify(await t.sql`select * from tokens where user_id = ${a.operator.id}`)).not.toContain(a.secret);
    // The administrator is an operator of the default team with role admin.
    expect((await t.admin.get('/v1/me')).body).toMatchObject({ kind: 'user', teamId: DEFAULT_TEAM, role: 'admin' });
  });

  it('should record who created the team, its operator and the token in the audit', async () => {
    // In the new team's own audit (its operator reads it), not in the administrator's team's,
    // whose other operators must not learn other teams' names.
    expect((await t.admin.get(`/v1/audit?topic=audit:teams&subjectId=${a.team.id}`)).body.entries).toEqual([]);
    const teams = (await a.client.get(`/v1/audit?topic=audit:teams&subjectId=${a.team.id}`)).body.entries;
    expect(teams).toHaveLength(1);
    expect(teams[0]).toMatchObject({
      event: 'team-created',
      subjectId: a.team.id,
      actor: { kind: 'user', id: adminId, token: 'default' },
      data: { id: a.team.id, name: 'alpha' },
    });
    const op = (await a.client.get(`/v1/audit?topic=audit:teams&subjectId=${a.operator.id}`)).body.entries;
    expect(op).toHaveLength(1);
    expect(op[0]).toMatchObject({
      event: 'operator-created',
      actor: { kind: 'user', id: adminId },
      data: { id: a.operator.id, name: 'alice', teamId: a.team.id, role: 'operator' },
    });
    // The token is the new team's: its own audit has it (and both events above), the
    // administrator's does not (another team's token).
    const tok = (await a.client.get(`/v1/audit?topic=audit:tokens&subjectId=${a.token.id}`)).body.entries;
    expect(tok).toHaveLength(1);
    expect((await t.admin.get(`/v1/audit?topic=audit:tokens&subjectId=${a.token.id}`)).body.entries).toEqual([]);
    expect((await b.client.get(`/v1/audit?topic=audit:teams&subjectId=${a.team.id}`)).body.entries).toEqual([]);
    expect(tok[0]).toMatchObject({
      event: 'token-created',
      actor: { kind: 'user', id: adminId },
      data: { name: 'default', principal: { kind: 'user', id: a.operator.id } },
    });
    expect(JSON.stringify([teams, op, tok])).not.toContain(a.secret);
  });

  it('should list every team to the administrator and only its own team to an operator', async () => {
    const all = await t.admin.get('/v1/teams');
    expect(all.status).toBe(200);
    expect(all.body.teams.map((x: { id: string }) => x.id)).toEqual([DEFAULT_TEAM, a.team.id, b.team.id]);
    expect(all.body.teams[0]).toMatchObject({ id: DEFAULT_TEAM, name: 'default', createdBy: 'bootstrap' });

    const own = await b.client.get('/v1/teams');
    expect(own.status).toBe(200);
    expect(own.body).toEqual({ teams: [{ id: b.team.id, name: 'beta', createdAt: b.team.createdAt, createdBy: adminId, operatorCount: 1 }] });
  });

  it('should show an operator its own team and answer another team’s id exactly like a missing one', async () => {
    const mine = await b.client.get(`/v1/teams/${b.team.id}`);
    expect(mine.status).toBe(200);
    expect(mine.body).toEqual({ ...b.team, operators: [b.operator] });

    const before = await counts();
    expectSameAnswer(await b.client.get(`/v1/teams/${a.team.id}`), await b.client.get(`/v1/teams/${MISSING}`), a.team.id, MISSING, 404);
    expect((await b.client.get(`/v1/teams/${a.team.id}`)).body.code).toBe('not_found');
    expectSameAnswer(await b.client.get(`/v1/teams/${DEFAULT_TEAM}`), await b.client.get(`/v1/teams/${MISSING}`), DEFAULT_TEAM, MISSING, 404);
    expectSameAnswer(
      await b.client.post(`/v1/teams/${a.team.id}/operators`, { name: 'mallory' }),
      await b.client.post(`/v1/teams/${MISSING}/operators`, { name: 'mallory' }),
      a.team.id,
      MISSING,
      404,
    );
    expect(await counts()).toEqual(before);

    // The administrator reads any team; a missing id is the same 404 for it too.
    const other = await t.admin.get(`/v1/teams/${a.team.id}`);
    expect(other.status).toBe(200);
    expect(other.body.operators.map((o: { name: string }) => o.name)).toEqual(['alice']);
    const dflt = await t.admin.get(`/v1/teams/${DEFAULT_TEAM}`);
    expect(dflt.body.operators).toEqual([expect.objectContaining({ id: adminId, role: 'admin', teamId: DEFAULT_TEAM })]);
    expectSameAnswer(await b.client.get(`/v1/teams/${MISSING}`), await t.admin.get(`/v1/teams/${MISSING}`), MISSING, MISSING, 404);
  });

  it('should refuse an operator that is not the administrator to create a team, naming what it may do, and write nothing', async () => {
    const before = await counts();
    const r = await b.client.post('/v1/teams', { name: 'gamma', operator: { name: 'gil' } });
    expect(r.status).toBe(403);
    expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(r.body.code).toBe('forbidden');
    expect(r.body.detail).toContain('server administrator');
    expect(r.body.detail).toContain(`POST /v1/teams/${b.team.id}/operators`);
    expect(await counts()).toEqual(before);
  });

  it('should let an operator add operators to its own team, and the administrator to any team', async () => {
    const added = await b.client.post(`/v1/teams/${b.team.id}/operators`, { name: 'Bea Two' });
    expect(added.status).toBe(201);
    expect(added.body.operator).toEqual({
      id: expect.stringMatching(/^u-/),
      name: 'Bea Two',
      teamId: b.team.id,
      role: 'operator',
      createdAt: expect.any(String),
    });
    expect(added.body.token).toMatchObject({
      name: 'default',
      principal: { kind: 'user', id: added.body.operator.id },
      createdBy: b.operator.id,
      state: 'active',
    });
    const bea = t.admin.as(added.body.secret);
    expect((await bea.get('/v1/me')).body).toMatchObject({ id: added.body.operator.id, teamId: b.team.id, role: 'operator' });
    expect((await bea.get(`/v1/teams/${b.team.id}`)).body.operators.map((o: { name: string }) => o.name)).toEqual(['bob', 'Bea Two']);
    expect((await bea.get('/v1/teams')).body.teams).toEqual([expect.objectContaining({ id: b.team.id, operatorCount: 2 })]);
    // In the team's own audit; the administrator's has only what it did itself.
    const audit = (await b.client.get(`/v1/audit?topic=audit:teams&subjectId=${added.body.operator.id}`)).body.entries;
    expect((await t.admin.get(`/v1/audit?topic=audit:teams&subjectId=${added.body.operator.id}`)).body.entries).toEqual([]);
    expect(audit).toEqual([expect.objectContaining({ event: 'operator-created', actor: { kind: 'user', id: b.operator.id, token: 'default' } })]);

    const byAdmin = await t.admin.post(`/v1/teams/${a.team.id}/operators`, { name: 'alan' });
    expect(byAdmin.status).toBe(201);
    expect(byAdmin.body.operator).toMatchObject({ teamId: a.team.id, role: 'operator' });
    expect((await t.admin.as(byAdmin.body.secret).get('/v1/me')).body).toMatchObject({ teamId: a.team.id });
  });

  it('should keep the server-wide configuration to the administrator', async () => {
    expect((await t.admin.get('/v1/admin/config')).status).toBe(200);
    for (const c of [a.client, b.client]) {
      const cfg = await c.get('/v1/admin/config');
      expect(cfg.status).toBe(403);
      expect(cfg.body.code).toBe('forbidden');
      expect(cfg.body.detail).toContain('server administrator');
      expect((await c.post('/v1/admin/reload')).status).toBe(403);
    }
  });

  it('should answer a taken name with team_name_taken and write nothing, also when creates race', async () => {
    const before = await counts();
    const dup = await t.admin.post('/v1/teams', { name: 'alpha', operator: { name: 'again' } });
    expect(dup.status).toBe(409);
    expect(dup.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(dup.body).toMatchObject({ code: 'team_name_taken', name: 'alpha' });
    expect((await t.admin.post('/v1/teams', { name: 'default', operator: { name: 'x' } })).body.code).toBe('team_name_taken');
    expect(await counts()).toEqual(before);

    const race = await Promise.all(Array.from({ length: 6 }, (_, i) => t.admin.post('/v1/teams', { name: 'racing', operator: { name: `op-${i}` } })));
    expect(race.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
    const [{ n }] = await t.sql<{ n: number }[]>`select count(*)::int as n from users u join teams m on m.id = u.team_id where m.name = 'racing'`;
    expect(n).toBe(1);
  });

  it('should take a team name ignoring case', async () => {
    const before = await counts();
    const dup = await t.admin.post('/v1/teams', { name: 'ALPHA', operator: { name: 'x' } });
    expect(dup.status).toBe(409);
    expect(dup.body).toMatchObject({ code: 'team_name_taken', name: 'ALPHA' });
    expect(await counts()).toEqual(before);
  });

  it('should keep the administrator’s tokens from the other operators of its team, and its last one from itself', async () => {
    const dave = t.admin.as((await t.admin.post(`/v1/teams/${DEFAULT_TEAM}/operators`, { name: 'dave' })).body.secret);
    const adminTokens = (await t.admin.get('/v1/tokens')).body.tokens as { id: string; name: string }[];
    const adminToken = adminTokens.find((k) => k.name === 'default')!.id;
    const missing = 'tk-0000000000000000';
    const before = await counts();
    // To dave, an operator of the same team, the administrator's token is a missing one.
    expectSameAnswer(await dave.del(`/v1/tokens/${adminToken}`), await dave.del(`/v1/tokens/${missing}`), adminToken, missing, 404);
    expectSameAnswer(
      await dave.get(`/v1/tokens?principal=${adminId}`),
      await dave.get('/v1/tokens?principal=u-0000000000000000'),
      adminId,
      'u-0000000000000000',
      404,
    );
    const listed = JSON.stringify((await dave.get('/v1/tokens?principalKind=user&includeRevoked=true')).body);
    expect(listed).not.toContain(adminToken);
    expect(listed).toContain((await dave.get('/v1/tokens')).body.tokens[0].id);
    expect(await counts()).toEqual(before);
    expect((await t.admin.get('/v1/me')).status).toBe(200);
    // The administrator's last token without an expiry stays, though dave holds one.
    const last = await t.admin.del(`/v1/tokens/${adminToken}`);
    expect(last.status).toBe(409);
    expect(last.body).toMatchObject({ code: 'last_operator_token' });
    expect(last.body.detail).toContain('server administrator');
    // The administrator manages dave's tokens, as any operator of the team may.
    const daveToken = (await dave.get('/v1/tokens')).body.tokens[0].id as string;
    expect((await t.admin.get(`/v1/tokens?principal=${(await dave.get('/v1/me')).body.id}`)).body.tokens.map((k: { id: string }) => k.id)).toEqual([daveToken]);
  });

  it('should refuse invalid bodies as problem+json 400 and write nothing', async () => {
    const before = await counts();
    const bad: unknown[] = [
      {},
      { name: 'x' },
      { name: '', operator: { name: 'o' } },
      { name: '-x', operator: { name: 'o' } },
      { name: 'with space', operator: { name: 'o' } },
      { name: 'x'.repeat(101), operator: { name: 'o' } },
      { name: 5, operator: { name: 'o' } },
      { name: 'ok', operator: { name: '' } },
      { name: 'ok', operator: { name: ' padded' } },
      { name: 'ok', operator: { name: 'o'.repeat(101) } },
      { name: 'ok', operator: {} },
      { name: 'ok', operator: { name: 'o' }, extra: 1 },
      { name: 'ok', operator: { name: 'o', role: 'admin' } },
    ];
    for (const body of bad) {
      const r = await t.admin.post('/v1/teams', body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(r.body.code).toBe('validation_failed');
      expect(r.body.errors?.length, JSON.stringify(r.body)).toBeGreaterThan(0);
    }
    for (const body of [{}, { name: '' }, { name: 'o', role: 'admin' }]) {
      const r = await t.admin.post(`/v1/teams/${a.team.id}/operators`, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.code).toBe('validation_failed');
    }
    expect((await t.admin.post('/v1/teams', '{not json', { 'content-type': 'application/json' })).status).toBe(400);
    expect(await counts()).toEqual(before);
    expect((await t.admin.get('/v1/teams')).body.teams.map((x: { name: string }) => x.name)).not.toContain('ok');
  });

  it('should refuse sessions every team route with 403, whatever the id', async () => {
    const s = await t.session({ by: b.client, name: 'beta-agent' });
    expect((await s.client.get('/v1/me')).body).toMatchObject({ kind: 'session', teamId: b.team.id });
    expect((await s.client.get('/v1/me')).body.role).toBeUndefined();
    const before = await counts();
    const calls: [string, (c: Client) => Promise<Res>][] = [
      ['POST /v1/teams', (c) => c.post('/v1/teams', { name: 'by-a-session', operator: { name: 'o' } })],
      ['GET /v1/teams', (c) => c.get('/v1/teams')],
      ['GET own team', (c) => c.get(`/v1/teams/${b.team.id}`)],
      ['GET another team', (c) => c.get(`/v1/teams/${a.team.id}`)],
      ['POST operators', (c) => c.post(`/v1/teams/${b.team.id}/operators`, { name: 'o' })],
      ['GET /v1/admin/config', (c) => c.get('/v1/admin/config')],
    ];
    for (const [label, call] of calls) {
      const r = await call(s.client);
      expect(r.status, label).toBe(403);
      expect(r.body.code, label).toBe('forbidden');
    }
    // The refusal names the next step: an operator's token.
    expect((await s.client.get('/v1/teams')).body.detail).toContain('use an operator token');
    // One answer for its own team, another team and a missing one.
    expectSameAnswer(await s.client.get(`/v1/teams/${a.team.id}`), await s.client.get(`/v1/teams/${MISSING}`), a.team.id, MISSING, 403);
    expectSameAnswer(await s.client.get(`/v1/teams/${b.team.id}`), await s.client.get(`/v1/teams/${MISSING}`), b.team.id, MISSING, 403);
    expect(await counts()).toEqual(before);
  });
});

describe('teams through the SDK', () => {
  it('should create, list, read and grow a team, with typed errors', async () => {
    const admin = createClient({ baseUrl: t.base, token: t.admin.token });
    const made = await admin.teams.create({ name: 'sdk-team', operator: { name: 'sam' } });
    expect(made).toMatchObject({ team: { name: 'sdk-team', operatorCount: 1 }, operator: { name: 'sam', role: 'operator' }, token: { name: 'default' } });
    const sam = createClient({ baseUrl: t.base, token: made.secret });
    expect(await sam.me()).toMatchObject({ kind: 'user', teamId: made.team.id, role: 'operator' });
    expect(await sam.teams.list()).toEqual([made.team]);
    const added = await sam.teams.addOperator(made.team.id, { name: 'sue' });
    expect(added.operator).toMatchObject({ name: 'sue', teamId: made.team.id });
    expect((await sam.teams.get(made.team.id)).operators.map((o) => o.name)).toEqual(['sam', 'sue']);
    expect((await admin.teams.list()).map((x) => x.name)).toContain('sdk-team');

    const caught = (p: Promise<unknown>) =>
      p.then(
        () => undefined,
        (e: CoordError) => e,
      );
    expect(await caught(sam.teams.create({ name: 'nope', operator: { name: 'x' } }))).toBeInstanceOf(Forbidden);
    expect(await caught(sam.teams.get(DEFAULT_TEAM))).toBeInstanceOf(NotFound);
    expect(await caught(sam.teams.addOperator(DEFAULT_TEAM, { name: 'x' }))).toBeInstanceOf(NotFound);
    const taken = await caught(admin.teams.create({ name: 'sdk-team', operator: { name: 'x' } }));
    expect(taken).toBeInstanceOf(Conflict);
    expect(taken).toMatchObject({ status: 409, code: 'team_name_taken' });
  });
});

describe('the last operator token', () => {
  it('can be given no expiry by rotation either, since an expiring token does not count', async () => {
    const r = await t.admin.post('/v1/teams', { name: 'rotating', operator: { name: 'rita' } });
    expect(r.status).toBe(201);
    const rita = t.admin.as(r.body.secret);
    const refused = await rita.post(`/v1/tokens/${r.body.token.id}/rotate`, { expiresIn: '2s' });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ code: 'last_operator_token' });
    expect((await rita.get('/v1/me')).status).toBe(200); // nothing changed: the old secret still works
    // With a second token without an expiry, the first may expire.
    const second = await rita.post('/v1/tokens', { name: 'second' });
    expect(second.status).toBe(201);
    expect((await rita.post(`/v1/tokens/${r.body.token.id}/rotate`, { expiresIn: '30d' })).status).toBe(200);
  });
});
