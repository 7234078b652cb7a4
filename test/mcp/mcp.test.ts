/**
 * MCP: the official SDK's own client against
 * a real server, over streamable HTTP (`/mcp`) and over stdio (a `coord mcp` process). The agent
 * loop, a claim race between two MCP clients, strict inputs with no write, refusals for an
 * outsider, output schemas, the tool list's size, and a graph driven through MCP with the same
 * durable facts as through the CLI.
 */
import { rmSync } from 'node:fs';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { rowCounts } from '../graphs/graphs.helpers.js';
import { committingScript, coordAs, userRepo } from '../runner/runner.helpers.js';
import { call, httpClient, stdioClient } from './mcp.helpers.js';

let t: TestApp;
const repos: string[] = [];
beforeAll(async () => {
  t = await startTestApp();
  for (const id of ['planner', 'reviewer', 'builder']) await t.admin.post('/v1/agents', { id });
});
afterAll(async () => {
  for (const r of repos) rmSync(r, { recursive: true, force: true });
  await t?.close();
});

const transports: [string, (token: string, tools?: string) => Promise<Client>][] = [
  ['http', (token, tools) => httpClient(t.base, token, tools)],
  ['stdio', (token, tools) => stdioClient(t.base, token, tools ? ['--tools', tools] : [])],
];

describe.each(transports)('over %s', (_name, connect) => {
  it('initializes, lists the tools, and runs the agent loop next → done', async () => {
    const s = await t.session({ name: 'mcp-agent' });
    const c = await connect(s.token);
    try {
      const tools = (await c.listTools()).tools;
      for (const name of ['todo_add', 'todo_next', 'todo_done', 'coordinate_agents_task_graph_create', 'coordinate_agents_task_graph_plan', 'graph_complete']) {
        expect(tools.map((x) => x.name)).toContain(name);
      }
      for (const tool of tools) {
        expect(tool.inputSchema.additionalProperties, tool.name).toBe(false);
        expect(tool.outputSchema, tool.name).toBeDefined();
      }
      await call(c, 'todo_add', { title: 'first' });
      await call(c, 'todo_add', { title: 'second' });
      await call(c, 'todo_add', { title: 'third' });
      const seen: string[] = [];
      for (;;) {
        const next = await call(c, 'todo_next');
        expect(next.isError).toBe(false);
        if (!next.result.claimed) break;
        const done = await call(c, 'todo_done', { id: next.result.item.id });
        expect(done.result.item.status).toBe('done');
        seen.push(next.result.item.title);
        if (seen.length === 1) {
          // One call per cycle: todo_done with next completes and claims.
          const both = await call(c, 'todo_done', { id: (await call(c, 'todo_next')).result.item.id, next: {} });
          expect([both.isError, both.result.item.title, both.result.next.claimed, both.result.next.item.title]).toEqual([false, 'second', true, 'third']);
          seen.push('second');
          const last = await call(c, 'todo_done', { id: both.result.next.item.id });
          expect(last.result.item.status).toBe('done');
          seen.push('third');
        }
      }
      expect(seen).toEqual(['first', 'second', 'third']);
    } finally {
      await c.close();
    }
  });

  it('gives a client that reads only text the whole JSON of a long result', async () => {
    const s = await t.session({ name: 'mcp-reader' });
    const c = await connect(s.token);
    try {
      // About 40 items: a todo_list answer of tens of KB, over the old 4 KB preview and under the bound.
      const items = Array.from({ length: 40 }, (_, i) => ({ title: `item ${i} ${'x'.repeat(300)}` }));
      expect((await s.client.post('/v1/todos/bulk', { items })).status).toBe(201);
      const r = await call(c, 'todo_list', {});
      const text = (r.raw.content as { type: string; text: string }[])[0].text;
      expect(text.length).toBeGreaterThan(4096);
      expect(JSON.parse(text)).toEqual(r.result);
      // Past the bound (65,536 characters) the text is cut there and says how to get the rest.
      expect(
        (await s.client.post('/v1/todos/bulk', { items: Array.from({ length: 200 }, (_, i) => ({ title: `more ${i} ${'y'.repeat(300)}` })) })).status,
      ).toBe(201);
      const big = await call(c, 'todo_list', {});
      const cut = (big.raw.content as { type: string; text: string }[])[0].text;
      const whole = JSON.stringify(big.result);
      expect(whole.length).toBeGreaterThan(65_536);
      expect(cut.startsWith(whole.slice(0, 65_536))).toBe(true);
      expect(cut).toMatch(/cut at 65536 of \d+ characters: the whole result is in structuredContent\.result; a list tool takes limit and cursor/);
    } finally {
      await c.close();
    }
  });

  it('two MCP clients racing claim on one item: one winner, the other isError already_claimed', async () => {
    const root = await t.session({ name: 'race-root' });
    const other = await t.session({ name: 'race-other', parentId: root.id });
    const item = (await root.client.post('/v1/todos', { title: 'contested' })).body.item;
    const [a, b] = await Promise.all([connect(root.token), connect(other.token)]);
    try {
      for (let round = 0; round < 5; round++) {
        const x = (await root.client.post('/v1/todos', { title: `contested ${round}` })).body.item;
        const results = await Promise.all([call(a, 'todo_claim', { id: x.id }), call(b, 'todo_claim', { id: x.id })]);
        expect(results.filter((r) => !r.isError).length).toBe(1);
        const loser = results.find((r) => r.isError)!;
        expect(loser.error).toMatchObject({ code: 'already_claimed', status: 409 });
        expect(loser.error.next).toMatch(/todo_next/);
      }
      void item;
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('every tool refuses unknown arguments and wrong types with an isError result and writes nothing', async () => {
    const s = await t.session({ name: 'strict' });
    const c = await connect(s.token, 'all');
    try {
      const tools = (await c.listTools()).tools;
      const before = await rowCounts(t.sql);
      for (const tool of tools) {
        const unknown = await call(c, tool.name, { unexpectedArgument: 1 });
        expect([tool.name, unknown.isError, unknown.error?.code]).toEqual([tool.name, true, 'validation_failed']);
        const props = Object.keys((tool.inputSchema.properties ?? {}) as object);
        if (props.length === 0) continue;
        const wrong = Object.fromEntries(props.map((p) => [p, { not: 'a valid value' }]));
        const r = await call(c, tool.name, wrong);
        expect([tool.name, r.isError]).toEqual([tool.name, true]);
        expect(r.error.status, tool.name).toBeLessThan(500);
      }
      expect(await rowCounts(t.sql)).toEqual(before);
    } finally {
      await c.close();
    }
  });

  it('a waiting todo_next the client gives up on (its timeout sends notifications/cancelled) claims nothing', async () => {
    const s = await t.session({ name: 'gives-up' });
    const c = await connect(s.token);
    try {
      const tag = `late-${Math.random().toString(36).slice(2)}`;
      await expect(c.callTool({ name: 'todo_next', arguments: { waitMs: 20_000, tags: [tag] } }, undefined, { timeout: 1000 })).rejects.toThrow(/timed out/i);
      await new Promise((r) => setTimeout(r, 300)); // the cancellation reaches the server
      const item = (await s.client.post('/v1/todos', { title: 'arrives late', tags: [tag] })).body.item;
      await new Promise((r) => setTimeout(r, 1000));
      expect((await s.client.get(`/v1/todos/${item.id}`)).body.item).toMatchObject({ status: 'todo' });
      expect((await s.client.get(`/v1/todos/${item.id}`)).body.item.owner).toBeUndefined();
    } finally {
      await c.close();
    }
  });

  it('an edit retried with the ifMatch it read is refused, not applied twice', async () => {
    const s = await t.session({ name: 'edits' });
    const c = await connect(s.token);
    try {
      const item = (await call(c, 'todo_add', { title: 'edit me' })).result.item;
      const first = await call(c, 'todo_edit', { id: item.id, priority: 5, ifMatch: item.revision });
      expect(first.result.item.revision).toBe(item.revision + 1);
      const again = await call(c, 'todo_edit', { id: item.id, priority: 5, ifMatch: item.revision });
      expect([again.isError, again.error.status]).toEqual([true, 412]);
      expect((await s.client.get(`/v1/todos/${item.id}`)).body.item.revision).toBe(item.revision + 1);
    } finally {
      await c.close();
    }
  });

  it('an outsider’s token is refused through every tool that takes an id, as the route refuses it', async () => {
    const owner = await t.session({ name: 'owner' });
    const outsider = await t.session({ name: 'outsider' });
    const item = (await owner.client.post('/v1/todos', { title: 'private' })).body.item;
    const graphId = `task-mcp-private-${_name}`;
    await owner.client.post('/v1/graphs', {
      schemaVersion: 1,
      parentTask: { id: graphId, title: 'Private', planner: 'planner', reviewer: 'reviewer' },
      subtasks: [{ id: 'only', implementer: 'builder', spec: 'x' }],
      maxConcurrency: 1,
    });
    const c = await connect(outsider.token, 'all');
    try {
      const before = await rowCounts(t.sql);
      const refused = [
        ['todo_get', { id: item.id }],
        ['todo_done', { id: item.id }],
        ['todo_claim', { id: item.id }],
        ['todo_edit', { id: item.id, title: 'mine' }],
        ['todo_why', { id: item.id }],
        ['coordinate_agents_task_graph_status', { id: graphId }],
        ['coordinate_agents_task_graph_plan', { id: graphId }],
        ['coordinate_agents_task_graph_resume', { id: graphId, subtaskId: 'only' }],
        ['graph_claim', { id: graphId, subtaskId: 'only' }],
        ['graph_record_stop', { id: graphId, reason: 'mine now' }],
      ] as const;
      for (const [name, args] of refused) {
        const r = await call(c, name, args as Record<string, unknown>);
        expect([name, r.isError, r.error?.status]).toEqual([name, true, 404]);
      }
      expect(await rowCounts(t.sql)).toEqual(before);
    } finally {
      await c.close();
    }
  });
});

describe('the tool list', () => {
  it('stays small: what a model reads of the default sets (names, descriptions, inputs) fits in 26 KiB, the whole list in 64 KiB', async () => {
    const s = await t.session({ name: 'size' });
    const c = await httpClient(t.base, s.token);
    const list = await c.listTools();
    await c.close();
    const bytes = JSON.stringify(list).length;
    const read = JSON.stringify(list.tools.map(({ outputSchema: _, ...rest }) => rest)).length;
    console.log(`MCP default tool list: ${bytes} bytes, ${read} without output schemas`);
    expect(read).toBeLessThan(26 * 1024);
    expect(bytes).toBeLessThan(64 * 1024);
  });

  it('declares each tool’s result: the route’s success answer, two levels of properties deep', async () => {
    const s = await t.session({ name: 'schemas' });
    const c = await httpClient(t.base, s.token, 'all');
    const tools = (await c.listTools()).tools;
    await c.close();
    for (const tool of tools) {
      const out = tool.outputSchema as unknown as { properties: { result: { type?: string; properties?: object }; error: { required: string[] } } };
      expect([tool.name, out.properties.error.required]).toEqual([tool.name, ['code', 'status', 'message', 'recoverable', 'next']]);
      expect([tool.name, out.properties.result.type, Object.keys(out.properties.result.properties ?? {}).length > 0]).toEqual([tool.name, 'object', true]);
    }
    const next = tools.find((x) => x.name === 'todo_next')!.outputSchema as any;
    expect(next.properties.result.required).toContain('claimed');
    expect(next.properties.result.properties.item.properties.status.enum).toContain('in-progress');
  });

  it('replays a retried write that carries the same idempotencyKey (tool argument, or the /mcp request’s Idempotency-Key header)', async () => {
    const s = await t.session({ name: 'retry' });
    const count = async () => (await s.client.get(`/v1/todos?scope=session:${s.id}`)).body.items.length;
    for (const c of [await httpClient(t.base, s.token), await stdioClient(t.base, s.token)]) {
      try {
        const key = `retry-${Math.random()}`;
        const first = await call(c, 'todo_add', { title: 'once', idempotencyKey: key });
        const again = await call(c, 'todo_add', { title: 'once', idempotencyKey: key });
        expect(again.result.item.id).toBe(first.result.item.id);
        const other = await call(c, 'todo_add', { title: 'another body', idempotencyKey: key });
        expect([other.isError, other.error.code]).toEqual([true, 'idempotency_key_reused']);
        expect((await call(c, 'todo_add', { title: 'x', idempotencyKey: '' })).error.code).toBe('validation_failed');
      } finally {
        await c.close();
      }
    }
    expect(await count()).toBe(2);
    // Over HTTP, a client that retries the whole POST /mcp with its header gets the first answer.
    const header = `hdr-${Math.random()}`;
    const body = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'todo_add', arguments: { title: 'by header' } } };
    const post = () =>
      fetch(`${t.base}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${s.token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'idempotency-key': header,
        },
        body: JSON.stringify(body),
      }).then((r) => r.json());
    const [a, b] = [await post(), await post()];
    expect(b.result.structuredContent.result.item.id).toBe(a.result.structuredContent.result.item.id);
    expect(await count()).toBe(3);
  });

  it('a waiting todo_next over POST /mcp whose caller closes the connection claims nothing', async () => {
    const s = await t.session({ name: 'hangs-up' });
    const tag = `late-${Math.random().toString(36).slice(2)}`;
    const ac = new AbortController();
    const pending = fetch(`${t.base}/mcp`, {
      method: 'POST',
      signal: ac.signal,
      headers: { authorization: `Bearer ${s.token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'todo_next', arguments: { waitMs: 20_000, tags: [tag] } } }),
    }).catch(() => null);
    await new Promise((r) => setTimeout(r, 500));
    ac.abort();
    await pending;
    await new Promise((r) => setTimeout(r, 300));
    const item = (await s.client.post('/v1/todos', { title: 'arrives late', tags: [tag] })).body.item;
    await new Promise((r) => setTimeout(r, 1000));
    expect((await s.client.get(`/v1/todos/${item.id}`)).body.item).toMatchObject({ status: 'todo' });
  });

  it('offers only the chosen sets', async () => {
    const s = await t.session({ name: 'sets' });
    const c = await httpClient(t.base, s.token, 'todo');
    const names = (await c.listTools()).tools.map((x) => x.name);
    await c.close();
    expect(names.every((n) => n.startsWith('todo_'))).toBe(true);
  });
});

describe('a graph through MCP', () => {
  it('created, planned and advanced through coord mcp gives the same durable facts as the CLI', async () => {
    const agents = { builder: { adapter: 'shell', command: committingScript(['src/$COORD_SUBTASK_ID/x.txt']) } };
    const graphFor = (id: string) => ({
      graph: {
        schemaVersion: 1,
        parentTask: { id, title: 'Same facts', planner: 'planner', reviewer: 'reviewer' },
        subtasks: [
          { id: 'alpha', implementer: 'builder', spec: 'Alpha.' },
          { id: 'beta', implementer: 'builder', spec: 'Beta.', dependsOn: ['alpha'] },
          { id: 'gamma', implementer: 'builder', spec: 'Gamma.', dependsOn: ['beta'] },
        ],
        maxConcurrency: 1,
      },
    });
    const owner = await t.session({ name: 'mcp-graph-owner' });
    // Through MCP (stdio, with the runner's tools in a real repository) …
    const repoA = userRepo(agents);
    repos.push(repoA);
    const mcp = await stdioClient(t.base, owner.token, ['--root', repoA]);
    let viaMcp: any;
    try {
      const created = await call(mcp, 'coordinate_agents_task_graph_create', { body: graphFor('task-mcp-a') });
      expect(created.isError, JSON.stringify(created.error)).toBe(false);
      const plan = await call(mcp, 'coordinate_agents_task_graph_plan', { id: 'task-mcp-a' });
      expect(plan.result.plan.wave.selected).toEqual(['alpha']);
      const adv = await call(mcp, 'coordinate_agents_task_graph_advance', { id: 'task-mcp-a', maxWaves: 2 });
      expect(adv.isError, JSON.stringify(adv.error)).toBe(false);
      viaMcp = adv.result;
      const refused = await call(mcp, 'coordinate_agents_task_graph_advance', { id: 'task-mcp-a', maxWaves: 99 });
      expect(refused.isError).toBe(true);
    } finally {
      await mcp.close();
    }
    // … and through the CLI, on an identical graph.
    const repoB = userRepo(agents);
    repos.push(repoB);
    await owner.client.post('/v1/graphs', graphFor('task-mcp-b'));
    const viaCli = (await coordAs(t, owner.token).json(['graph', 'advance', 'task-mcp-b', '--max-waves', '2', '--root', repoB])).body;
    const facts = (r: any) => ({
      stop: { code: r.stop.code, waveNumber: r.stop.waveNumber, subtaskIds: r.stop.subtaskIds },
      waves: r.waves.map((w: any) => [w.waveNumber, w.selected, w.summary]),
    });
    expect(facts(viaMcp)).toEqual(facts(viaCli));
    expect(viaMcp.stop.code).toBe('MAX_WAVES_REACHED');
  });
});
