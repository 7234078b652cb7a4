/**
 * One owner's world of every kind of object Coord stores, built through the public API, for the
 * suites generated from the OpenAPI document (fuzz.test.ts, isolation.test.ts): sessions, todos
 * (with a sub-item, an edge, a claim, a done item), a scenario, Task Graphs (one with a running
 * dispatch), a metagit task graph with nodes, and an intent. Every world is built from scratch
 * with its own names, so a batch of requests can change or stop what it likes without touching
 * the next batch.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Sql } from '../../src/db/client.js';
import { Client, type Res, type TestApp } from '../helpers/app.js';

/**
 * The test helpers' `Client`, over `app.inject` instead of a socket: the same requests, a fraction
 * of the time (no HTTP parser, no loopback), so the generated suites can afford thousands.
 */
export class InjectClient extends Client {
  constructor(
    readonly app: FastifyInstance,
    token?: string,
  ) {
    super('', token);
  }
  override async req<T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Res<T>> {
    const r = await this.app.inject({
      method: method as 'GET',
      url: path,
      headers: {
        ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      ...(body === undefined ? {} : { payload: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    let parsed: unknown = r.body;
    try {
      parsed = r.body ? JSON.parse(r.body) : undefined;
    } catch {
      /* keep text */
    }
    return { status: r.statusCode, body: parsed as T, headers: new Headers(r.headers as Record<string, string>) };
  }
  override as(token: string): InjectClient {
    return new InjectClient(this.app, token);
  }
}

/** The Agents every world's graphs name (registered once per app; an existing one is fine). */
export const WORLD_AGENTS = ['codex', 'reviewer', 'agent-fz', 'agent-other'];

export async function registerWorldAgents(admin: Client): Promise<void> {
  for (const id of WORLD_AGENTS) {
    const r = await admin.post('/v1/agents', { id });
    if (r.status !== 201 && r.body?.code !== 'agent_exists') throw new Error(`agent ${id}: ${r.status} ${JSON.stringify(r.body)}`);
  }
}

export interface Caller {
  id: string;
  token: string;
  client: Client;
}

export interface World {
  /** A short unique tag; every name in the world carries it. */
  tag: string;
  owner: Caller;
  child: Caller;
  /** A session bound to `agent-fz`, the implementer of the world's graphs (a worker). */
  worker: Caller;
  /** The dispatch session of `graph/backend` (an implementer's own token). */
  dispatch: Caller;
  /** A stopped session of the owner's subtree: its token no longer authenticates. */
  stopped: Caller;
  todos: { plain: string; sub: string; dependent: string; claimed: string; done: string };
  scenario: { id: string; name: string; scope: string; members: Record<'a' | 'b', Caller & { seedId: string }> };
  /** `graph` has run once (backend RUNNING with `dispatch`); `idle` never ran. */
  graphs: { graph: string; idle: string; base: string };
  metagit: { graph: string; nodes: string[]; intent: string };
  /** The id of the owner's second token (named `spare`; its `default` token is `owner.token`). */
  spareToken: string;
}

async function must<T = any>(p: Promise<{ status: number; body: any }>, status: number, what: string): Promise<T> {
  const r = await p;
  if (r.status !== status) throw new Error(`world: ${what}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body as T;
}

/** The operator's client, over inject. */
export const admin = (t: TestApp) => new InjectClient(t.app, t.admin.token);

/**
 * A root session (or a child of `parent`, registered by it), as `{id, token, client}`; a root
 * session is registered by `operator` (default: the test app's operator, of the default team).
 */
export async function newSession(t: TestApp, o: { name?: string; parent?: Caller; agentId?: string; operator?: InjectClient } = {}): Promise<Caller> {
  const by = o.parent?.client ?? o.operator ?? admin(t);
  const body = await must(by.post('/v1/sessions', { name: o.name, ...(o.agentId ? { agentId: o.agentId } : {}) }), 201, `session ${o.name}`);
  return { id: body.session.id, token: body.token, client: by.as(body.token) };
}

/** The Task Graph document of a world (`backend` ← `frontend`, both `agent-fz`). */
export function worldGraph(id: string) {
  return {
    graph: {
      schemaVersion: 1,
      parentTask: { id, title: `Graph ${id}`, planner: 'codex', reviewer: 'reviewer' },
      subtasks: [
        { id: 'backend', implementer: 'agent-fz', spec: 'Build the backend.', dependsOn: [] },
        { id: 'frontend', implementer: 'agent-fz', spec: 'Build the frontend.', dependsOn: ['backend'] },
      ],
      maxConcurrency: 2,
    },
    intentMap: {
      schemaVersion: 1,
      parentTaskId: id,
      scopePolicy: 'warn',
      subtasks: [
        { id: 'backend', writeIntent: ['src/server/**'] },
        { id: 'frontend', writeIntent: ['src/web/**'] },
      ],
    },
  };
}

/** The parts of a world beyond its sessions; a world built with fewer takes the rest from a base world. */
export type Part = 'todos' | 'scenario' | 'graphs' | 'metagit';
export const ALL_PARTS: readonly Part[] = ['todos', 'scenario', 'graphs', 'metagit'];

/**
 * Builds a world owned by a new root session (see the file header), registered by `operator`
 * (default: the test app's; another team's operator builds a world in that team). `parts` limits
 * what is built fresh; the other parts are `base`'s (objects of another owner: foreign ids for the
 * fuzz). Agents must be registered (in the operator's team). `tag` fixes the names' tag (two
 * teams may build worlds with the same names).
 */
export async function buildWorld(t: TestApp, opts: { parts?: readonly Part[]; base?: World; operator?: InjectClient; tag?: string } = {}): Promise<World> {
  const parts = new Set(opts.parts ?? ALL_PARTS);
  const base = opts.base;
  if (!base && parts.size < ALL_PARTS.length) throw new Error('world: a partial world needs a base world');
  const tag = opts.tag ?? randomBytes(4).toString('hex');
  const owner = await newSession(t, { name: `owner-${tag}`, operator: opts.operator });
  const child = await newSession(t, { name: `child-${tag}`, parent: owner });
  const worker = await newSession(t, { name: `worker-${tag}`, agentId: 'agent-fz', operator: opts.operator });
  const stopped = await newSession(t, { name: `stopped-${tag}`, parent: owner });
  await must(owner.client.post(`/v1/sessions/${stopped.id}/stop`), 200, 'stop');
  const spareToken = (await must(owner.client.post('/v1/tokens', { name: 'spare' }), 201, 'token')).token.id as string;

  let todos = base?.todos;
  if (parts.has('todos')) {
    const add = async (title: string, extra: Record<string, unknown> = {}) =>
      (await must(owner.client.post('/v1/todos', { title, ...extra }), 201, `todo ${title}`)).item.id as string;
    const plain = await add('plain', { tags: ['a', 'b'], note: 'a note' });
    const sub = await add('sub', { parentId: plain });
    const dependent = await add('dependent', { dependsOn: [plain] });
    const claimed = await add('claimed');
    await must(owner.client.post(`/v1/todos/${claimed}/claim`), 200, 'claim');
    const done = await add('done');
    await must(owner.client.post(`/v1/todos/${done}/claim`), 200, 'claim done');
    await must(owner.client.post(`/v1/todos/${done}/done`), 200, 'done');
    todos = { plain, sub, dependent, claimed, done };
  }

  let scenario = base?.scenario;
  if (parts.has('scenario')) {
    const name = `sc-${tag}`;
    const sc = await must(
      owner.client.post('/v1/scenarios', {
        name,
        members: [
          { name: 'a', task: 'Task A' },
          { name: 'b', task: 'Task B', dependsOn: ['a'], requiresResult: true },
        ],
      }),
      201,
      'scenario',
    );
    const member = (m: 'a' | 'b') => {
      const row = sc.scenario.members.find((x: { name: string }) => x.name === m);
      return { id: row.sessionId as string, token: sc.tokens[m] as string, client: owner.client.as(sc.tokens[m]), seedId: row.seedId as string };
    };
    scenario = { id: sc.scenario.id, name, scope: sc.scenario.scope, members: { a: member('a'), b: member('b') } };
  }

  let graphs = base?.graphs;
  let dispatch = base?.dispatch;
  if (parts.has('graphs')) {
    const graph = `task-fz-${tag}`;
    const idle = `task-fz-${tag}-idle`;
    const baseCommit = randomBytes(20).toString('hex');
    await must(owner.client.post('/v1/graphs', worldGraph(graph)), 201, 'graph');
    await must(owner.client.post('/v1/graphs', worldGraph(idle)), 201, 'idle graph');
    const run = await must(owner.client.post(`/v1/graphs/${graph}/run`, { baseCommit }), 200, 'run');
    const d = run.dispatches[0];
    dispatch = { id: d.session.id as string, token: d.session.token as string, client: owner.client.as(d.session.token) };
    graphs = { graph, idle, base: baseCommit };
  }

  let metagit = base?.metagit;
  if (parts.has('metagit')) {
    const mg = `mg-${tag}`;
    await must(owner.client.post('/v1/task-graphs', { graphId: mg, title: `Metagit ${tag}`, goal: 'Ship it' }), 201, 'task graph');
    const expanded = await must(owner.client.post(`/v1/task-graphs/${mg}/expand`, { outline: 'Root\n  Child\n    Leaf' }), 200, 'expand');
    const intent = `intent-fz-${tag}`;
    await must(owner.client.post('/v1/intents', { intentId: intent, title: 'An intent', goal: 'A goal' }), 201, 'intent');
    metagit = { graph: mg, nodes: expanded.added.map((n: { nodeId: string }) => n.nodeId), intent };
  }

  return { tag, owner, child, worker, dispatch: dispatch!, stopped, todos: todos!, scenario: scenario!, graphs: graphs!, metagit: metagit!, spareToken };
}

/**
 * A cheap fingerprint of everything Coord stores: row counts and the sums or maxima of the
 * columns every write moves (revisions, event ids, update times, lease progress). Two equal
 * fingerprints around a refused call prove it wrote nothing ("nothing written by a
 * refused call"). One statement, a few milliseconds on a test database.
 */
export async function fingerprint(sql: Sql): Promise<string> {
  const [row] = await sql<{ fp: string }[]>`
    select concat_ws('|',
      (select count(*) || ':' || coalesce(sum(revision), 0) || ':' || coalesce(max(updated_at)::text, '') || ':' || coalesce(max(progress_at)::text, '') from todos),
      (select count(*) from todo_dependencies),
      (select count(*) || ':' || coalesce(sum(last_position), 0) from scopes),
      (select count(*) || ':' || coalesce(max(id), 0) from events),
      (select count(*) || ':' || coalesce(sum(revision), 0) from sessions),
      (select count(*) from users),
      (select count(*) from teams),
      (select count(*) || ':' || coalesce(max(revoked_at)::text, '') || ':' || coalesce(max(rotated_at)::text, '') from tokens),
      (select count(*) from agents),
      (select count(*) || ':' || coalesce(sum(revision), 0) from graphs),
      (select count(*) || ':' || coalesce(max(updated_at)::text, '') || ':' || coalesce(sum(attempt), 0) from graph_subtasks),
      (select count(*) || ':' || coalesce(sum(revision), 0) from scenarios),
      (select count(*) || ':' || coalesce(max(result_at)::text, '') from scenario_members),
      (select count(*) from todo_scenario_seeds),
      (select count(*) || ':' || coalesce(max(updated_at)::text, '') from metagit_intents),
      (select count(*) || ':' || coalesce(sum(revision), 0) from metagit_graphs),
      (select count(*) || ':' || coalesce(max(cancelled_at)::text, '') || ':' || count(acl) from metagit_nodes)
    ) as fp`;
  return row.fp;
}
