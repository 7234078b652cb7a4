/**
 * `coord mcp` (its command is in mcp.ts, which loads this module only when it runs, so the MCP SDK
 * costs nothing to the other commands): Coord's MCP tools over stdio, for an agent's MCP client to launch.
 * The same tool set as the server's `/mcp` (mcp/server.ts), each API tool calling its route over
 * HTTP with this process's token (COORD_URL/COORD_TOKEN as for every command), plus the runner's
 * tools that need the local repository (`--root`): `coordinate_agents_task_graph_run`, `_advance`,
 * `_dispatch`, `_recover`, `_stop`, `_cleanup`, `_integrate`, `_review` run here as the matching
 * `coord graph …` commands do. stdout carries JSON-RPC only; notes go to stderr.
 */
import { CoordError, retryingFetch } from '@coord/sdk';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createMcpServer, parseToolSets, type Backend, type LocalTool } from '../../mcp/server.js';
import type { JsonSchema } from '../../mcp/tools.js';
import { UsageError, USER_AGENT, type Ctx } from '../runtime.js';
import { advance, cleanup, dispatchOne, integrate, recover, repositoryRoot, review, runWave, stop, type RunnerContext } from '../runner/runner.js';
import { RunnerError } from '../runner/worktrees.js';

const id = { type: 'string', description: 'The parent task id (task-…)' };
const subtaskId = { type: 'string', description: 'The subtask id' };
const schema = (properties: Record<string, unknown>, required: string[]): JsonSchema => ({ type: 'object', properties, required, additionalProperties: false });
/**
 * A runner report's schema: the fields every report of that command carries (the rest are the
 * coordinator's answers it passes on, as `coord graph … --json` prints them).
 */
const report = (command: string | null, fields: Record<string, JsonSchema>): JsonSchema => {
  const properties: Record<string, JsonSchema> = { root: { type: 'string' }, ...(command ? { command: { const: command } } : {}), ...fields };
  return { type: 'object', properties, required: Object.keys(properties) };
};
const list: JsonSchema = { type: 'array' };
const object: JsonSchema = { type: 'object' };
const ok: JsonSchema = { type: 'boolean' };
const text: JsonSchema = { type: 'string' };

/** A runner failure or a coordinator refusal as the tool error shape. */
function problemOf(err: unknown) {
  if (err instanceof RunnerError) return { code: err.code, status: 409, message: err.message, stage: err.stage, details: err.facts };
  if (err instanceof CoordError) {
    const stage = typeof err.problem.stage === 'string' ? err.problem.stage : undefined;
    return { code: err.code, status: err.status, message: err.detail ?? err.message, stage, details: err.problem.details };
  }
  return undefined;
}

/** The runner's tools (seed 002 names), bound to this process's repository and token. */
function runnerTools(ctx: () => Promise<RunnerContext>): LocalTool[] {
  const tool = (
    name: string,
    description: string,
    input: JsonSchema,
    resultSchema: JsonSchema,
    run: (r: RunnerContext, a: Record<string, any>) => Promise<unknown>,
  ): LocalTool => ({
    name,
    description: `${description} Runs here, in the repository coord mcp was started for.`,
    inputSchema: input,
    resultSchema,
    run: async (a) => run(await ctx(), a),
    problemOf,
  });
  return [
    tool(
      'coordinate_agents_task_graph_run',
      'Run the next wave: claim it and execute each subtask in its own git worktree; report the evidence.',
      schema({ id, sessionWaitMs: { type: 'integer', minimum: 0 } }, ['id']),
      report('task.graph-run', { ok, parentTaskId: text, outcomes: list, frontier: object, state: text }),
      (r, a) => runWave({ ...r, sessionWaitMs: a.sessionWaitMs ?? null }, a.id),
    ),
    tool(
      'coordinate_agents_task_graph_advance',
      'Run up to maxWaves (1–32) freshly planned waves; stops with the contract’s stop code.',
      schema({ id, maxWaves: { type: 'integer', minimum: 1, maximum: 32 }, sessionWaitMs: { type: 'integer', minimum: 0 } }, ['id', 'maxWaves']),
      report('task.graph-advance', { ok, graphId: text, wavesExecuted: { type: 'integer' }, waves: list, stop: object, graph: object }),
      (r, a) => advance({ ...r, sessionWaitMs: a.sessionWaitMs ?? null }, a.id, a.maxWaves),
    ),
    tool(
      'coordinate_agents_task_graph_dispatch',
      'Claim one READY subtask and execute it here.',
      schema({ id, subtaskId }, ['id', 'subtaskId']),
      report('task.graph-dispatch', { ok, parentTaskId: text, outcome: object }),
      (r, a) => dispatchOne(r, a.id, a.subtaskId),
    ),
    tool(
      'coordinate_agents_task_graph_recover',
      'Report this machine’s dead dispatches; the coordinator records them FAILED interrupted.',
      schema({ id, subtaskId }, ['id']),
      report(null, { observations: list }),
      (r, a) => recover(r, a.id, a.subtaskId),
    ),
    tool(
      'coordinate_agents_task_graph_stop',
      'Stop the graph or one subtask; local implementers end, their worktrees are removed (branches kept).',
      schema({ id, subtaskId, reason: { type: 'string', minLength: 1 } }, ['id', 'reason']),
      report(null, { outcomes: list, cleanup: list }),
      (r, a) => stop(r, a.id, a.reason, a.subtaskId),
    ),
    tool(
      'coordinate_agents_task_graph_cleanup',
      'Remove finished subtasks’ worktrees (RUNNING ones skipped) and record the outcomes.',
      schema({ id, subtaskId }, ['id']),
      report(null, { ok, outcomes: list }),
      (r, a) => cleanup(r, a.id, a.subtaskId),
    ),
    tool(
      'coordinate_agents_task_graph_integrate',
      'Cherry-pick the verified commits in subtask-id order into the integration worktree and record it.',
      schema({ id }, ['id']),
      report(null, {}),
      (r, a) => integrate(r, a.id),
    ),
    tool(
      'coordinate_agents_task_graph_review',
      'Re-check the aggregate worktree and record REVIEW_APPROVED or CHANGES_REQUESTED; authorises nothing else.',
      schema({ id, decision: { enum: ['REVIEW_APPROVED', 'CHANGES_REQUESTED'] }, feedback: { type: 'string' } }, ['id', 'decision']),
      report(null, {}),
      (r, a) => review(r, a.id, a.decision, a.feedback),
    ),
  ];
}

/** Serves the tools on this process's stdio until the client closes it or `stop` aborts. */
export async function serveStdio(ctx: Ctx<{ tools?: string; root?: string }>, opts: { stop: AbortSignal }): Promise<void> {
  let sets;
  try {
    sets = parseToolSets(ctx.opts.tools);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { url, token } = ctx.config();
  if (!token) throw new UsageError('no token: set COORD_TOKEN (or pass --token, or run `coord login`)');
  const headers = { authorization: `Bearer ${token}`, 'user-agent': USER_AGENT };
  const document = await fetch(`${url}/openapi.json`, { headers }).then(
    (r) => (r.ok ? r.json() : Promise.reject(new Error(`GET ${url}/openapi.json answered ${r.status}`))),
    (err: Error) => Promise.reject(new Error(`cannot reach Coord at ${url}: ${err.message}`)),
  );
  // The SDK's retrying fetch: each POST a tool makes carries an Idempotency-Key and is retried
  // with it on a dropped connection, 503, 429 or 409 idempotency_key_in_progress (docs/reference/http-api.md "Safe retries").
  const send = retryingFetch(fetch);
  const backend: Backend = {
    async call(method, path, body, extraHeaders, signal) {
      const r = await send(url + path, {
        method,
        signal,
        headers: { ...headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...extraHeaders },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      const text = await r.text();
      let parsed: unknown;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        parsed = { detail: text };
      }
      return { status: r.status, body: parsed };
    },
  };
  let runner: Promise<RunnerContext> | undefined;
  const runnerCtx = () =>
    (runner ??= repositoryRoot(ctx.opts.root ?? ctx.io.cwd ?? process.cwd()).then((root) => ({
      client: ctx.client(),
      url,
      root,
      env: ctx.io.env,
      signal: opts.stop,
    })));
  const local = sets.includes('graph') ? runnerTools(runnerCtx) : [];
  const server = createMcpServer({ document, backend, sets, local });
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    server.onclose = () => resolve();
    opts.stop.addEventListener('abort', () => void server.close(), { once: true });
    // The client closing our stdin ends the session.
    process.stdin.once('end', () => void server.close());
  });
  await server.connect(transport);
  await closed;
}
