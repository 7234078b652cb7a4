/**
 * The real coding agents as MCP clients (docs/guides/mcp.md "Claude Code and Codex"): Claude Code
 * and Codex, configured by their own `mcp add` lines exactly as the guide prints them, connect to
 * Coord over stdio (`npx coord mcp`) and over HTTP (`POST /mcp` with a bearer token). Driven by a
 * scripted model, each claims an item with `todo_next`, completes it with a result by
 * `todo_done`, and reads a graph with `coordinate_agents_task_graph_status`; the effects are
 * asserted in Coord's records and event log, and the tool results in what the agent sent back to
 * the model.
 *
 * Real: the agents and their MCP clients, `coord mcp`, the server, Postgres. Stand-in: the model
 * only (test/helpers/model-servers.ts).
 */
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { anthropicModel, openaiModel, type ModelRequest, type Script, type ScriptedModel } from '../helpers/model-servers.js';
import { bash, docText } from '../helpers/process.js';
import { readerShell } from '../cli/helpers.js';
import { AGENT_BIN, agentEnv, configureCoordMcp, installCoord, MCP_GUIDE as GUIDE, mcpGuideSection as section } from './agents.helpers.js';

let t: TestApp;
let models: { anthropic: ScriptedModel; openai: ScriptedModel };
const cleanups: string[] = [];
let graphId: string;

/** The item id in `todo_next`'s result, as the agent handed it back to the model (JSON, perhaps inside a JSON string). */
function claimedId(result: string): string {
  const m = /\\*"item\\*"\s*:\s*\{[^}]*?\\*"id\\*"\s*:\s*\\*"([\w-]+)/.exec(result);
  if (!m) throw new Error(`no claimed item in the tool result: ${result.slice(0, 500)}`);
  return m[1];
}

/** The script: the prompt says which tag and graph; claim, complete, read the graph, report. */
const client: Script = (req: ModelRequest) => {
  const [, tag, graph, who] = /Take your next Coord item tagged (\S+), finish it, then read graph (\S+)\. You are (\S+)\./.exec(req.text) ?? [];
  if (!tag) return { text: 'No Coord task in the prompt.' };
  switch (req.turn) {
    case 0:
      return { mcp: { server: 'coord', tool: 'todo_next', args: { tags: [tag] } } };
    case 1:
      return { mcp: { server: 'coord', tool: 'todo_done', args: { id: claimedId(req.toolResults[0]), result: `finished by ${who}` } } };
    case 2:
      return { mcp: { server: 'coord', tool: 'coordinate_agents_task_graph_status', args: { id: graph } } };
    default:
      return { text: `Finished the item and read ${graph}.` };
  }
};

beforeAll(async () => {
  t = await startTestApp();
  models = { anthropic: await anthropicModel(client), openai: await openaiModel(client) };
  for (const id of ['planner', 'reviewer', 'builder']) await t.admin.post('/v1/agents', { id });
  graphId = 'task-agents-mcp';
  const graph = {
    schemaVersion: 1,
    parentTask: { id: graphId, title: 'Read over MCP', planner: 'planner', reviewer: 'reviewer' },
    subtasks: [{ id: 'only', implementer: 'builder', spec: 'Nothing to do.' }],
    maxConcurrency: 1,
  };
  const owner = await t.session({ name: 'mcp-graph-owner' });
  const r = await owner.client.post('/v1/graphs', graph);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
});
afterAll(async () => {
  await models?.anthropic.close();
  await models?.openai.close();
  for (const d of cleanups) rmSync(d, { recursive: true, force: true });
  await t?.close();
});

/** The guide's unattended command of `agent` (`claude -p "…" --allowedTools …`, `codex exec "…"`), with the prompt replaced. */
function unattended(agent: 'claude' | 'codex', prompt: string): string {
  const m = (agent === 'claude' ? /`(claude -p) "[^"]*" (--allowedTools \S+)`/ : /`(codex exec) "[^"]*"()`/).exec(section().replace(/\n/g, ' '));
  if (!m) throw new Error(`${GUIDE} shows no unattended ${agent} command`);
  return agent === 'claude' ? `${m[1]} "${prompt}" ${m[2]}` : `${m[1]} "${prompt}"`;
}

describe.each([
  ['claude', 'stdio'],
  ['claude', 'http'],
  ['codex', 'stdio'],
  ['codex', 'http'],
] as const)('%s over %s', (agent, transport) => {
  it('claims an item with todo_next, completes it with a result, and reads a graph', async () => {
    const who = `${agent}-${transport}`;
    const session = await t.session({ name: who });
    const tag = `mcp-${who}`;
    const item = (await session.client.post('/v1/todos', { title: `work for ${who}`, tags: [tag] })).body.item;
    const shell = readerShell(session.token);
    cleanups.push(shell.home);
    // The installed CLI on PATH, answering only after 2 s as on a loaded machine (npx's is slower still).
    installCoord(shell.home, 2);
    const env = { ...agentEnv(shell.home, models), ...shell.env, PATH: `${AGENT_BIN}:${shell.env.PATH}` };
    // Configured while COORD_TOKEN holds another token: the agent must use the one it runs with.
    // The agent works in a project: a git repository (Codex's exec refuses to start elsewhere).
    await bash('git init -q .', { cwd: shell.cwd, env });
    await configureCoordMcp(agent, transport, t.base, { home: shell.home, cwd: shell.cwd, env: { ...env, COORD_TOKEN: 'coord_not-the-agents-token' } });

    const prompt = `Take your next Coord item tagged ${tag}, finish it, then read graph ${graphId}. You are ${who}.`;
    const r = await bash(`${unattended(agent, prompt)} < /dev/null`, { cwd: shell.cwd, env: { ...env, COORD_URL: t.base, COORD_TOKEN: session.token } });
    const model = agent === 'claude' ? models.anthropic : models.openai;
    expect(model.scriptErrors).toEqual([]);
    expect(r.code, r.stderr + r.stdout).toBe(0);

    // What the agent sent the model: Coord's tools offered, and each call's result handed back.
    const turns = model.agentTurns().filter((q) => q.text.includes(prompt));
    expect(turns.map((q) => q.turn)).toEqual([0, 1, 2, 3]);
    // Codex offers them as tools of the namespace mcp__coord, from the first turn (`required`
    // makes it wait for the server). Claude Code defers MCP tools behind its tool search and names
    // them (mcp__coord__todo_next, …) in the request's text; `-p` does not wait for a server still
    // starting, whose tools the first turn announces as coming and the next one has.
    const named = (q: ModelRequest) =>
      agent === 'codex' ? q.tools.map((x) => x.replace(/^mcp__coord/, 'mcp__coord__')) : (q.text.match(/mcp__coord__\w+/g) ?? []);
    const coordTools = ['todo_next', 'todo_done', 'coordinate_agents_task_graph_status'].map((x) => `mcp__coord__${x}`);
    if (agent === 'claude' && named(turns[0]).length === 0) expect(turns[0].text).toMatch(/MCP servers are still connecting[^\n]*\n(?:\S+\n)*coord\n/);
    else expect(named(turns[0])).toEqual(expect.arrayContaining(coordTools));
    expect(named(turns[1])).toEqual(expect.arrayContaining(coordTools));
    expect(claimedId(turns[1].toolResults[0])).toBe(item.id);
    expect(turns[3].toolResults[1]).toContain('done');
    expect(turns[3].toolResults[2]).toContain(graphId);

    // What Coord recorded: the item done by this session, with the result, and its events.
    const stored = (await t.admin.get(`/v1/todos/${item.id}`)).body.item;
    expect(stored).toMatchObject({ status: 'done', result: `finished by ${who}` });
    const log = (await t.admin.get(`/v1/events/log?topic=${encodeURIComponent(`todo:${item.scope}`)}&limit=1000`)).body.events;
    const mine = log.filter((e: any) => e.data?.id === item.id || e.data?.item?.id === item.id);
    expect(mine.map((e: any) => e.event)).toEqual(expect.arrayContaining(['claimed', 'done']));
  });
});

it('the README’s configuration for both agents is the guide’s', () => {
  const readme = /## Claude Code and Codex\n([\s\S]*?)\n## /.exec(docText('README.md'))?.[1] ?? '';
  const claude = readme.split('\n').filter((l) => l.startsWith('claude mcp add '));
  expect(claude).toHaveLength(1);
  expect(section().split('\n')).toContain(claude[0]);
  const toml = [...readme.matchAll(/```toml\n([\s\S]*?)```/g)].map((m) => m[1]);
  expect(toml).toHaveLength(1);
  expect(section()).toContain(toml[0]);
});
