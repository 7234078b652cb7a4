/**
 * An isolation test generated from the OpenAPI document (an outsider must
 * not learn that an object exists).
 *
 * The auth model it tests (src/auth, src/scopes, docs/explanation/concepts.md): callers are users
 * (operators: in every scope, with override authority) or sessions (agents) with a subtree root;
 * a session reads the lists of its own subtree, the scenarios it orchestrates or is a member of,
 * the Task Graphs its subtree created or whose Agents it is bound to (a dispatch's own session:
 * its one graph), the metagit graphs and intents its subtree created. An operator is in every
 * scope of its own team and in none of another's. The outsiders are sessions of
 * another subtree in every shape Coord has (a root, its child, a member of its scenario, a
 * session bound to an unrelated Agent, a dispatch session of its own graph), for the owner's
 * non-graph objects the owner's own worker and dispatch sessions (they anchor to themselves), and
 * a second team: its operator (in every scope of its own team) and its sessions, each of which
 * must find the owner's objects exactly as missing ones, and change nothing. (Two teams holding
 * the same names side by side is test/teams/teams.names.test.ts.)
 *
 * Every operation of the document that takes an id in its path is called by every outsider with
 * the owner's ids, and with a valid body. Each answer must be 404 problem+json, and byte for
 * byte the answer the same outsider gets for an id that does not exist (after the id itself is
 * swapped): an outsider cannot tell the owner's object from a missing one. A twin world, the
 * owner's own calls with the same requests, proves each request is valid (it gets past
 * validation and lookup), so a refusal is the isolation's and not the body's. Afterwards the
 * owner reads every object exactly as before, and the database fingerprint is unchanged.
 * Then the ids that travel in queries and bodies (scopes, topics, parents, dependencies, shared
 * members) and the creates whose id collides with the owner's (one answer for a visible and an
 * invisible holder; see docs/architecture.md "Existence is not leaked").
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderOpenApi } from '../../scripts/gen-openapi.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createUser } from '../../src/tokens/tokens.bootstrap.js';
import { operations, send, type Answer, type FuzzRequest, type Operation } from './openapi-fuzz.js';
import { admin, buildWorld, fingerprint, InjectClient, newSession, registerWorldAgents, worldGraph, type Caller, type World } from './world.js';

const doc = JSON.parse(await renderOpenApi());
const ops = operations(doc).filter((op) => op.params.some((p) => p.in === 'path'));

let t: TestApp;
/** The target world (never changed by its owner during the test) and its twin (the owner's controls). */
let w: World;
let twin: World;
/** The stranger's own world: its owner, child, scenario member and dispatch session are outsiders. */
let s: World;
let otherWorker: Caller;
/** The second team: its operator, and its own world. */
let teamB: { operator: Caller; world: World };

beforeAll(async () => {
  t = await startTestApp();
  await registerWorldAgents(admin(t));
  w = await buildWorld(t);
  twin = await buildWorld(t);
  s = await buildWorld(t);
  otherWorker = await newSession(t, { name: 'other-worker', agentId: 'agent-other' });
  await t.sql`insert into teams (id, name, created_by) values ('tm-isolation-b', 'isolation-b', 'test')`;
  const op = await createUser(t.sql, 'operator-b', undefined, { teamId: 'tm-isolation-b' });
  const operator = new InjectClient(t.app, op.token);
  await registerWorldAgents(operator);
  teamB = { operator: { id: op.id, token: op.token, client: operator }, world: await buildWorld(t, { operator }) };
});
afterAll(async () => t?.close());

type Domain = 'owner' | 'scenario' | 'graph';

/** The outsiders of a domain (see the file header). */
function outsiders(domain: Domain): [string, Caller][] {
  const general: [string, Caller][] = [
    ['stranger', s.owner],
    ['stranger child', s.child],
    ['stranger scenario member', s.scenario.members.a],
    ['session of another Agent', otherWorker],
    ['dispatch session of another graph', s.dispatch],
  ];
  const otherTeam: [string, Caller][] = [
    ['other team’s operator', teamB.operator],
    ['other team’s root session', teamB.world.owner],
    ['other team’s scenario member', teamB.world.scenario.members.a],
    ['other team’s worker', teamB.world.worker],
    ['other team’s dispatch session', teamB.world.dispatch],
  ];
  // The owner's worker (bound to the graphs' implementer) and dispatch session see its graphs.
  return domain === 'graph' ? [...general, ...otherTeam] : [...general, ...otherTeam, ['owner’s worker', w.worker], ['owner’s dispatch session', w.dispatch]];
}

/** One path of an operation with a world's ids, the same path with ids that do not exist, and whose objects it names. */
interface Target {
  label: string;
  domain: Domain;
  path: (x: World) => string;
  missing: string;
  /** The id strings of `path(w)` to swap for the missing ones when comparing answers. */
  swap: (x: World) => [string, string][];
}

const MISSING = {
  todo: 'td-0000000000000000',
  session: 's-0000000000000000',
  graph: 'task-fz-missing',
  scenario: 'sc-missing',
  scenarioId: 'sc-0000000000000000',
  mg: 'mg-missing',
  intent: 'intent-missing',
  token: 'tk-0000000000000000',
};

function targets(op: Operation): Target[] {
  const p = op.path;
  const fill = (values: Record<string, string>) => p.replace(/\{(\w+)\}/g, (_, k) => encodeURIComponent(values[k]));
  const byScope: [string, Domain, (x: World) => string, string][] = [
    ['session scope (root)', 'owner', (x) => `session:${x.owner.id}`, `session:${MISSING.session}`],
    ['session scope (child)', 'owner', (x) => `session:${x.child.id}`, `session:${MISSING.session}`],
    ['scenario scope by name', 'scenario', (x) => `scenario:${x.scenario.name}`, `scenario:${MISSING.scenario}`],
    ['scenario scope by id', 'scenario', (x) => x.scenario.scope, `scenario:${MISSING.scenarioId}`],
    ['graph scope', 'graph', (x) => `graph:${x.graphs.graph}`, `graph:${MISSING.graph}`],
    ['metagit scope', 'owner', (x) => `metagit:${x.metagit.graph}`, `metagit:${MISSING.mg}`],
  ];
  const one = (label: string, domain: Domain, values: (x: World) => Record<string, string>, missing: Record<string, string>): Target => ({
    label,
    domain,
    path: (x) => fill(values(x)),
    missing: fill(missing),
    swap: (x) =>
      Object.entries(values(x))
        .map(([k, v]) => [v, missing[k]] as [string, string])
        .filter(([a, b]) => a !== b),
  });
  if (p.startsWith('/v1/sessions/')) {
    return [
      one('root session', 'owner', (x) => ({ id: x.owner.id }), { id: MISSING.session }),
      one('child session', 'owner', (x) => ({ id: x.child.id }), { id: MISSING.session }),
      one('stopped session', 'owner', (x) => ({ id: x.stopped.id }), { id: MISSING.session }),
    ];
  }
  if (p.startsWith('/v1/todos/')) {
    return [
      // Removals in the owner's controls go in this order: `plain` last, once its sub-item is gone.
      ...(['sub', 'dependent', 'claimed', 'done', 'plain'] as const).map((k) => one(`${k} todo`, 'owner', (x) => ({ id: x.todos[k] }), { id: MISSING.todo })),
      one('scenario seed', 'scenario', (x) => ({ id: x.scenario.members.a.seedId }), { id: MISSING.todo }),
    ];
  }
  if (p.startsWith('/v1/scenarios/')) {
    return [
      one('scenario by name', 'scenario', (x) => ({ name: x.scenario.name, member: 'a' }), { name: MISSING.scenario, member: 'a' }),
      one('scenario by id', 'scenario', (x) => ({ name: x.scenario.id, member: 'b' }), { name: MISSING.scenarioId, member: 'b' }),
    ];
  }
  if (p.startsWith('/v1/scopes/'))
    return byScope.map(([label, domain, scope, missing]) => one(label, domain, (x) => ({ scope: scope(x) }), { scope: missing }));
  if (p.startsWith('/v1/graphs/')) {
    return [
      one('running graph', 'graph', (x) => ({ id: x.graphs.graph, sid: 'backend' }), { id: MISSING.graph, sid: 'backend' }),
      one('idle graph', 'graph', (x) => ({ id: x.graphs.idle, sid: 'frontend' }), { id: MISSING.graph, sid: 'frontend' }),
    ];
  }
  if (p.startsWith('/v1/intents/')) {
    return [
      one('intent', 'owner', (x) => ({ id: x.metagit.intent }), { id: MISSING.intent }),
      one('root intent of a task graph', 'owner', (x) => ({ id: `intent-${x.metagit.graph}` }), { id: MISSING.intent }),
    ];
  }
  if (p.startsWith('/v1/task-graphs/')) {
    return [
      one('task graph (root node)', 'owner', (x) => ({ id: x.metagit.graph, nodeId: x.metagit.nodes[0] }), { id: MISSING.mg, nodeId: 'root' }),
      one('task graph (leaf node)', 'owner', (x) => ({ id: x.metagit.graph, nodeId: x.metagit.nodes[2] }), { id: MISSING.mg, nodeId: 'leaf' }),
    ];
  }
  // A session's tokens are its own (operators may revoke them, never another session).
  if (p.startsWith('/v1/tokens/')) return [one('the owner’s spare token', 'owner', (x) => ({ id: x.spareToken }), { id: MISSING.token })];
  // Teams refuse every session with 403 whatever the id (a refusal that depends on no object);
  // their outsiders are another team's operators: test/teams/teams.api.test.ts.
  if (p.startsWith('/v1/teams/')) return [];
  throw new Error(`isolation: no targets for ${op.key}; add the new route family here`);
}

/** A valid body for each operation with one (the owner's twin call proves it valid). */
const BODIES: Record<string, (x: World) => unknown> = {
  'PATCH /v1/todos/{id}': () => ({ title: 'renamed', tags: ['x'] }),
  'PUT /v1/todos/{id}/dependencies': () => ({ dependsOn: [] }),
  'POST /v1/todos/{id}/done': () => ({}),
  'POST /v1/todos/{id}/block': () => ({ note: 'blocked by the test' }),
  'POST /v1/todos/{id}/reopen': () => ({}),
  'PUT /v1/todos/{id}/assignee': (x) => ({ assignee: x.child.id }),
  'POST /v1/scenarios/{name}/members/{member}/result': () => ({ result: { ok: true } }),
  'POST /v1/graphs/{id}/run': (x) => ({ baseCommit: x.graphs.base }),
  'POST /v1/graphs/{id}/subtasks/{sid}/claim': (x) => ({ baseCommit: x.graphs.base }),
  'POST /v1/graphs/{id}/subtasks/{sid}/heartbeat': () => ({}),
  'POST /v1/graphs/{id}/subtasks/{sid}/complete': (x) => ({
    graphBaseCommit: x.graphs.base,
    implementationCommit: 'e'.repeat(40),
    committedChanges: [{ status: 'M', path: 'src/server/a.ts' }],
    dirtyChanges: [],
    dirtyWorktreeAvailable: true,
  }),
  'POST /v1/graphs/{id}/subtasks/{sid}/fail': () => ({ code: 'AGENT_EXIT_NONZERO', message: 'exited with 3', exitCode: 3 }),
  'POST /v1/graphs/{id}/recover': () => ({}),
  'POST /v1/graphs/{id}/resume': () => ({ subtaskId: 'backend' }),
  'POST /v1/graphs/{id}/stop': () => ({ reason: 'the test stops it', subtaskId: 'frontend' }),
  'POST /v1/graphs/{id}/cleanup': () => ({ outcomes: [{ subtaskId: 'frontend', status: 'SKIPPED' }] }),
  'PUT /v1/graphs/{id}/integration': (x) => ({
    baseCommit: x.graphs.base,
    status: 'SUCCEEDED',
    sources: [{ subtaskId: 'backend', branch: `coord/${x.graphs.graph}/backend`, commit: 'e'.repeat(40) }],
    aggregateCommit: 'e'.repeat(40),
  }),
  'POST /v1/graphs/{id}/review': (x) => ({ decision: 'REVIEW_APPROVED', sourceFingerprint: '0'.repeat(64), aggregateCommit: x.graphs.base }),
  'POST /v1/task-graphs/{id}/expand': () => ({ outline: 'Another\n  Below' }),
  'POST /v1/task-graphs/{id}/nodes/{nodeId}/block': () => ({ reason: 'blocked by the test' }),
  'PUT /v1/task-graphs/{id}/nodes/{nodeId}/acl': () => ({ agentId: 'agent-7', branch: 'agent/x' }),
};

function request(op: Operation, path: string, token: string, x: World): FuzzRequest {
  const body = op.body ? (BODIES[op.key]?.(x) ?? {}) : undefined;
  const query = op.path.endsWith('/status') ? '?format=json' : '';
  return {
    method: op.method,
    url: path + query,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
    mutations: [],
  };
}

/**
 * `text` with each real id swapped for its missing twin (also URL-encoded, and for scope strings
 * also the name after the kind, which messages quote on its own), longest first.
 */
function swapAll(text: string, pairs: [string, string][]): string {
  const all = pairs.flatMap(([a, b]) => {
    const out: [string, string][] = [
      [a, b],
      [encodeURIComponent(a), encodeURIComponent(b)],
    ];
    const i = a.indexOf(':');
    if (i > 0 && b.startsWith(a.slice(0, i + 1))) out.push([a.slice(i + 1), b.slice(i + 1)]);
    return out;
  });
  return all.sort((x, y) => y[0].length - x[0].length).reduce((acc, [a, b]) => acc.split(a).join(b), text);
}

/** What the owner reads of every object of `x` (compared before and after the outsiders' calls). */
async function snapshot(x: World): Promise<string> {
  const c = new InjectClient(t.app, x.owner.token);
  const reads = [
    ...Object.values(x.todos).map((id) => `/v1/todos/${id}`),
    `/v1/todos/${x.scenario.members.a.seedId}`,
    `/v1/sessions/${x.owner.id}`,
    `/v1/sessions/${x.child.id}`,
    `/v1/sessions/${x.stopped.id}`,
    `/v1/scenarios/${x.scenario.name}`,
    `/v1/graphs/${x.graphs.graph}`,
    `/v1/graphs/${x.graphs.idle}`,
    `/v1/task-graphs/${x.metagit.graph}`,
    `/v1/intents/${x.metagit.intent}`,
    '/v1/tokens?includeRevoked=true',
    `/v1/events/log?topic=${encodeURIComponent(`todo:session:${x.owner.id}`)}&after=0&limit=1000`,
  ];
  const out: string[] = [];
  for (const path of reads) {
    const r = await c.get(path);
    if (r.status !== 200) throw new Error(`snapshot ${path}: ${r.status} ${JSON.stringify(r.body)}`);
    // lastSeenAt moves with the owner's own calls (these reads included), never an outsider's.
    out.push(JSON.stringify(r.body, (k, v) => (k === 'lastSeenAt' ? undefined : v)));
  }
  return out.join('\n');
}

/** Statuses of a control call that prove its request was valid and its ids real. */
const REFUSED_BEFORE_THE_SERVICE = new Set([400, 401, 404, 413, 414, 415]);

describe('isolation generated from the OpenAPI document: every route with an id, as every outsider', () => {
  it('should cover every operation with a path parameter', () => {
    expect(ops.length).toBeGreaterThan(40);
  });

  it('should answer every outsider with the 404 a missing id gets, and change nothing the owner can read', async () => {
    const before = await snapshot(w);
    // The owner's controls run on the twin world first: they may change it, never `w`. Removals
    // go last (a removed id would read 404 to the controls after it), and the session routes
    // last of all, as an operator (stopping the owner ends its token).
    const controls: string[] = [];
    const rank = (op: Operation) => (op.path.startsWith('/v1/sessions/') ? 2 : op.method === 'DELETE' ? 1 : 0);
    for (const op of [...ops].sort((a, b) => rank(a) - rank(b))) {
      const token = rank(op) === 2 ? t.admin.token! : twin.owner.token;
      for (const target of targets(op)) {
        const a = await send(t.app, request(op, target.path(twin), token, twin), op.sse);
        if (REFUSED_BEFORE_THE_SERVICE.has(a.status)) controls.push(`${op.key} (${target.label}) as its owner: ${a.status} ${a.text.slice(0, 200)}`);
      }
    }
    expect(controls, 'the owner’s own calls must be valid requests on real ids').toEqual([]);

    const fp = await fingerprint(t.sql);
    const leaks: string[] = [];
    let calls = 0;
    for (const op of ops) {
      for (const target of targets(op)) {
        for (const [who, outsider] of outsiders(target.domain)) {
          const real = await send(t.app, request(op, target.path(w), outsider.token, w), op.sse);
          const missing = await send(t.app, request(op, target.missing, outsider.token, w), op.sse);
          calls += 2;
          const at = `${op.key} (${target.label}) as ${who}`;
          // An operator is refused a claim before any lookup (it has no session identity): the
          // same 403 as for a missing id, compared below, so it tells nothing.
          const refusedBeforeLookup = outsider === teamB.operator && real.status === 403 && /claim_requires_session/.test(real.text);
          if (real.status !== 404 && !refusedBeforeLookup) leaks.push(`${at}: ${real.status} (want 404) ${real.text.slice(0, 200)}`);
          else if (!real.type.startsWith('application/problem+json')) leaks.push(`${at}: 404 is ${real.type}`);
          const same = swapAll(real.text, target.swap(w)) === missing.text && real.status === missing.status;
          if (!same)
            leaks.push(
              `${at}: differs from a missing id:\n    real    ${real.status} ${real.text.slice(0, 300)}\n    missing ${missing.status} ${missing.text.slice(0, 300)}`,
            );
        }
      }
    }
    expect(leaks).toEqual([]);
    expect(calls).toBeGreaterThan(500);
    expect(await fingerprint(t.sql), 'an outsider’s call wrote').toBe(fp);
    expect(await snapshot(w)).toBe(before);
  });
});

describe('isolation of ids that travel in queries and bodies', () => {
  const answer = async (c: InjectClient, method: string, url: string, body?: unknown): Promise<Answer> =>
    send(
      t.app,
      {
        method,
        url,
        headers: { authorization: `Bearer ${c.token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
        mutations: [],
      },
      url.startsWith('/v1/events?'),
    );

  /** The same request with the owner's id and with a missing one: one answer, and not a success. */
  async function expectIndistinguishable(
    c: InjectClient,
    method: string,
    make: (id: string) => string | [string, unknown],
    real: string,
    missing: string,
    want: number,
  ) {
    const [url1, body1] = ([] as unknown[]).concat(make(real)) as [string, unknown];
    const [url2, body2] = ([] as unknown[]).concat(make(missing)) as [string, unknown];
    const a = await answer(c, method, url1, body1);
    const b = await answer(c, method, url2, body2);
    expect([a.status, a.type.split(';')[0]], `${method} ${url1} ${JSON.stringify(body1)}: ${a.text}`).toEqual([want, 'application/problem+json']);
    expect(swapAll(a.text, [[real, missing]]), `${method} ${url1}`).toBe(b.text);
  }

  it('should answer a scope or topic of the owner like one that does not exist, on every route that takes one', async () => {
    const fp = await fingerprint(t.sql);
    const scopes: [string, string][] = [
      [`session:${w.owner.id}`, `session:${MISSING.session}`],
      [`session:${w.child.id}`, `session:${MISSING.session}`],
      [`scenario:${w.scenario.name}`, `scenario:${MISSING.scenario}`],
      [w.scenario.scope, `scenario:${MISSING.scenarioId}`],
      [`graph:${w.graphs.graph}`, `graph:${MISSING.graph}`],
      [`metagit:${w.metagit.graph}`, `metagit:${MISSING.mg}`],
    ];
    for (const [, outsider] of outsiders('graph')) {
      const c = new InjectClient(t.app, outsider.token);
      for (const [real, missing] of scopes) {
        await expectIndistinguishable(c, 'GET', (sc) => `/v1/todos?scope=${encodeURIComponent(sc)}`, real, missing, 404);
        await expectIndistinguishable(c, 'POST', (sc) => ['/v1/todos', { title: 'planted', scope: sc }], real, missing, 404);
        // An operator has no session identity to claim with: refused before the scope is looked up.
        await expectIndistinguishable(c, 'POST', (sc) => ['/v1/todos/next', { scope: sc }], real, missing, outsider === teamB.operator ? 403 : 404);
        await expectIndistinguishable(c, 'GET', (sc) => `/v1/events/log?topic=${encodeURIComponent(`todo:${sc}`)}`, real, missing, 404);
        await expectIndistinguishable(c, 'GET', (sc) => `/v1/events?topic=${encodeURIComponent(`todo:${sc}`)}`, real, missing, 404);
      }
    }
    expect(await fingerprint(t.sql)).toBe(fp);
  });

  it('should answer the owner’s items as parents and dependencies like missing ones', async () => {
    const c = new InjectClient(t.app, s.owner.token);
    const own = (await c.post('/v1/todos', { title: 'the outsider’s own' })).body.item.id as string;
    const fp = await fingerprint(t.sql);
    await expectIndistinguishable(c, 'POST', (id) => ['/v1/todos', { title: 'x', parentId: id }], w.todos.plain, MISSING.todo, 422);
    await expectIndistinguishable(c, 'POST', (id) => ['/v1/todos', { title: 'x', dependsOn: [id] }], w.todos.plain, MISSING.todo, 422);
    await expectIndistinguishable(c, 'PATCH', (id) => [`/v1/todos/${own}`, { dependsOn: [id] }], w.todos.plain, MISSING.todo, 422);
    await expectIndistinguishable(c, 'PUT', (id) => [`/v1/todos/${own}/dependencies`, { dependsOn: [id] }], w.todos.done, MISSING.todo, 422);
    expect(await fingerprint(t.sql)).toBe(fp);
  });

  it('should answer the owner’s sessions as parents, orchestrators and shared members like missing ones', async () => {
    const c = new InjectClient(t.app, s.owner.token);
    const fp = await fingerprint(t.sql);
    // 403, yet no leak: "a session may register children of itself only" and "a session may start
    // a scenario only as its own orchestrator" are decided before any lookup, the same for an id
    // that does not exist (src/sessions/sessions.service.ts, src/scenarios/scenarios.service.ts).
    await expectIndistinguishable(c, 'POST', (id) => ['/v1/sessions', { name: 'x', parentId: id }], w.owner.id, MISSING.session, 403);
    await expectIndistinguishable(
      c,
      'POST',
      (id) => ['/v1/scenarios', { name: 'iso-orch', orchestrator: id, members: [{ name: 'a' }] }],
      w.owner.id,
      MISSING.session,
      403,
    );
    for (const id of [w.owner.id, w.child.id, w.stopped.id]) {
      await expectIndistinguishable(
        c,
        'POST',
        (x) => ['/v1/scenarios', { name: 'iso-shared', members: [{ name: 'a', session: x }] }],
        id,
        MISSING.session,
        404,
      );
    }
    expect(await fingerprint(t.sql)).toBe(fp);
  });

  it('should list none of the owner’s objects to an outsider', async () => {
    const ids = [
      w.owner.id,
      w.child.id,
      ...Object.values(w.todos),
      w.scenario.id,
      w.scenario.name,
      w.graphs.graph,
      w.graphs.idle,
      w.metagit.graph,
      w.metagit.intent,
      w.spareToken,
    ];
    for (const [who, outsider] of outsiders('graph')) {
      const c = new InjectClient(t.app, outsider.token);
      const lists = [
        ...['/v1/sessions', '/v1/todos', '/v1/graphs', '/v1/intents', '/v1/task-graphs', '/v1/agents', '/v1/scopes', '/v1/scenarios', '/v1/audit'].map(
          (l) => `${l}?limit=500`,
        ),
        '/v1/todos?all=true&limit=500',
        '/v1/tokens?principalKind=user&includeRevoked=true',
      ];
      for (const list of lists) {
        const r = await c.get(list);
        if (r.status >= 400) continue; // e.g. a session without a list of its own
        for (const id of ids) expect(JSON.stringify(r.body).includes(id), `${list} as ${who} lists ${id}`).toBe(false);
      }
    }
  });

  it('should answer a create whose id another subtree holds exactly as a create whose id the caller holds, and change nothing', async () => {
    // Ids are names within a team (a Task Graph's parent task id, a scenario's name, a metagit
    // graph or intent id): a create cannot answer like a miss, since a miss creates. Within the
    // team it answers one 409
    // that names only the id, whoever holds it, so it says "taken" and nothing else (not who
    // holds it, not what it is); every read and write of it by id stays a 404 for the outsider.
    // (Another team holds its own names: its create succeeds, test/teams/teams.names.test.ts.)
    const mine = new InjectClient(t.app, w.owner.token);
    const theirs = new InjectClient(t.app, s.owner.token);
    const fp = await fingerprint(t.sql);
    const creates: [string, unknown][] = [
      ['/v1/graphs', worldGraph(w.graphs.graph)],
      ['/v1/graphs', worldGraph(w.graphs.idle).graph],
      ['/v1/scenarios', { name: w.scenario.name, members: [{ name: 'a', task: 'x' }] }],
      ['/v1/task-graphs', { graphId: w.metagit.graph, title: 'T', goal: 'G' }],
      ['/v1/intents', { intentId: w.metagit.intent, title: 'T', goal: 'G' }],
      ['/v1/intents', { intentId: `intent-${w.metagit.graph}`, title: 'T', goal: 'G' }],
    ];
    for (const [path, body] of creates) {
      const visible = await answer(mine, 'POST', path, body);
      const invisible = await answer(theirs, 'POST', path, body);
      expect(visible.status, `${path} ${visible.text}`).toBe(409);
      expect(invisible.status).toBe(409);
      expect(invisible.text, path).toBe(visible.text);
    }
    expect(await fingerprint(t.sql)).toBe(fp);
  });
});
