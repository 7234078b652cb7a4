/**
 * The MCP server of Coord's tools (tools.ts), on the official SDK's low-level `Server`: the tool
 * list with the routes' own JSON Schemas (input and output), and calls that go to a {@link Backend} — the server's
 * routes through `app.inject` (`/mcp`), or the API over HTTP (`coord mcp`). Transport-agnostic: the
 * caller connects it to stdio or streamable HTTP.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { bindTools, DEFAULT_TOOL_SETS, INSTRUCTIONS, nextStep, outputSchema, TOOL_SETS, type JsonSchema, type ToolBinding, type ToolSet } from './tools.js';

/** How an API tool reaches its route: one HTTP-shaped call. */
export interface Backend {
  /**
   * `headers`: request headers from the tool's arguments (`idempotency-key`, `if-match`).
   * `signal`: aborted when the MCP client cancels the call or goes away; the route then sees its
   * client gone (a waiting `next` claims nothing).
   */
  call(method: string, path: string, body: unknown, headers: Record<string, string>, signal?: AbortSignal): Promise<{ status: number; body: unknown }>;
}

/** A tool that runs here rather than on the coordinator (the runner's, in `coord mcp`). */
export interface LocalTool {
  name: string;
  description: string;
  inputSchema: JsonSchema;
  /** The schema of what `run` resolves with (the tool's `result`). */
  resultSchema: JsonSchema;
  /** Resolves with the result, or rejects; `problemOf` turns the rejection into the error shape. */
  run(args: Record<string, unknown>): Promise<unknown>;
  problemOf(err: unknown): { code: string; status: number; message: string; stage?: string; details?: unknown } | undefined;
}

export interface McpServerOptions {
  /** The OpenAPI document the routes generate (`/openapi.json`). */
  document: unknown;
  backend: Backend;
  /** Tool sets to offer (default DEFAULT_TOOL_SETS). */
  sets?: readonly ToolSet[];
  /** Extra local tools; one with an API tool's name replaces it. */
  local?: LocalTool[];
  version?: string;
}

/** Parses `--tools todo,graph` (or `all`); throws on an unknown set. */
export function parseToolSets(spec: string | undefined): ToolSet[] {
  if (!spec) return [...DEFAULT_TOOL_SETS];
  if (spec === 'all') return [...TOOL_SETS];
  const sets = spec
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const s of sets) if (!TOOL_SETS.includes(s as ToolSet)) throw new Error(`unknown tool set "${s}"; the sets are ${TOOL_SETS.join(', ')}, or all`);
  return sets as ToolSet[];
}

/** An isError result carrying a problem for an agent to read. */
export function errorResult(p: { code: string; status: number; message: string; recoverable?: boolean; stage?: string; details?: unknown }): CallToolResult {
  const error = {
    code: p.code,
    status: p.status,
    message: p.message,
    recoverable: p.recoverable ?? (p.status !== 404 && p.status !== 403),
    ...(p.stage ? { stage: p.stage } : {}),
    ...(p.details !== undefined ? { details: p.details } : {}),
    next: nextStep(p.code, p.status),
  };
  return {
    isError: true,
    content: [{ type: 'text', text: `${error.code} (${error.status}): ${error.message} Next: ${error.next}` }],
    structuredContent: { error },
  };
}

/**
 * The text twin of a result (the MCP spec: a tool that returns structured content SHOULD also
 * return it serialised in a text block): the whole JSON up to this many characters, for clients
 * that read only the text. Past it, the text is cut there and says so, and how to get the rest:
 * the whole result is always in `structuredContent.result`, and list tools page with
 * `limit`/`cursor`.
 */
export const TEXT_RESULT_CHARS = 65_536;

function okResult(result: unknown): CallToolResult {
  const json = JSON.stringify(result);
  const text =
    json.length <= TEXT_RESULT_CHARS
      ? json
      : `${json.slice(0, TEXT_RESULT_CHARS)}… (cut at ${TEXT_RESULT_CHARS} of ${json.length} characters: the whole result is in structuredContent.result; ` +
        'a list tool takes limit and cursor to read it a page at a time)';
  return { content: [{ type: 'text', text }], structuredContent: { result } };
}

/** The problem of a non-2xx route answer (RFC 9457, with the contract's members when present). */
function problemOf(status: number, body: unknown) {
  const b = (body ?? {}) as Record<string, unknown>;
  const detail = typeof b.detail === 'string' ? b.detail : typeof b.title === 'string' ? b.title : `HTTP ${status}`;
  const fields = Array.isArray(b.errors)
    ? (b.errors as { path: string; message: string }[]).map((e) => `${e.path}: ${e.message}`).filter((f) => !detail.includes(f))
    : [];
  // Members beyond RFC 9457 and the contract's (`ids`, `owner`, `dependsOn`, `blockedBy`, …) are the machine-readable facts.
  const standard = new Set(['type', 'title', 'status', 'detail', 'instance', 'code', 'errors', 'stage', 'message', 'recoverable', 'taskId', 'details']);
  const extra = Object.fromEntries(Object.entries(b).filter(([k]) => !standard.has(k)));
  const details = b.details ?? (Array.isArray(b.errors) ? b.errors : undefined);
  return {
    code: typeof b.code === 'string' ? b.code : `http_${status}`,
    status,
    message: fields.length ? `${detail} ${fields.join('; ')}` : detail,
    recoverable: typeof b.recoverable === 'boolean' ? b.recoverable : undefined,
    stage: typeof b.stage === 'string' ? b.stage : undefined,
    details: Object.keys(extra).length
      ? { ...(details && typeof details === 'object' && !Array.isArray(details) ? details : details ? { errors: details } : {}), ...extra }
      : details,
  };
}

/** Refuses arguments the schema does not name, and missing required ones, before anything is called. */
function checkArgs(schema: JsonSchema, args: Record<string, unknown>): string | null {
  const props = (schema.properties ?? {}) as Record<string, unknown>;
  const unknown = Object.keys(args).filter((k) => !Object.hasOwn(props, k));
  if (unknown.length) return `unknown argument${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}`;
  const missing = ((schema.required as string[] | undefined) ?? []).filter((k) => args[k] === undefined);
  if (missing.length) return `missing argument${missing.length > 1 ? 's' : ''}: ${missing.join(', ')}`;
  return null;
}

async function callApi(backend: Backend, b: ToolBinding, args: Record<string, unknown>, signal?: AbortSignal): Promise<CallToolResult> {
  let path = b.tool.path;
  for (const p of b.path) {
    const v = args[p.arg];
    if (typeof v !== 'string' || v === '') return errorResult({ code: 'validation_failed', status: 400, message: `${p.arg} must be a non-empty string` });
    path = path.replace(`{${p.name}}`, encodeURIComponent(v));
  }
  const qs = new URLSearchParams();
  for (const q of b.query) if (args[q] !== undefined) qs.set(q, typeof args[q] === 'string' ? (args[q] as string) : JSON.stringify(args[q]));
  const url = qs.size ? `${path}?${qs}` : path;
  let body: unknown;
  if (b.body === 'flat') {
    const skip = new Set([...b.path.map((p) => p.arg), ...b.query, ...b.headers.map((h) => h.arg)]);
    body = Object.fromEntries(Object.entries(args).filter(([k]) => !skip.has(k)));
  } else if (b.body === 'wrapped') {
    body = args.body;
  }
  const headers: Record<string, string> = {};
  for (const h of b.headers) {
    const v = args[h.arg];
    if (v === undefined) continue;
    const ok = h.arg === 'ifMatch' ? Number.isInteger(v) && (v as number) >= 0 : typeof v === 'string' && v.length >= 1 && v.length <= 255;
    if (!ok)
      return errorResult({
        code: 'validation_failed',
        status: 400,
        message: `${h.arg} must be ${h.arg === 'ifMatch' ? 'a revision (an integer ≥ 0)' : 'a string of 1–255 characters'}`,
      });
    headers[h.name] = h.arg === 'ifMatch' ? `"${v}"` : (v as string);
  }
  // A cancelled call rejects here; the SDK sends no answer to a cancelled request (MCP spec).
  const r = await backend.call(b.tool.method, url, body, headers, signal);
  if (r.status >= 200 && r.status < 300) return okResult(r.body ?? null);
  return errorResult(problemOf(r.status, r.body));
}

/**
 * Builds the MCP server: `tools/list` returns the chosen sets (API tools with the routes' input
 * schemas, then local tools), every tool with its output schema (`{result}` or `{error}`); `tools/call` validates the
 * arguments' names, then calls the route or the local tool. Unknown tools are a protocol error.
 */
export function createMcpServer(opts: McpServerOptions): Server {
  const sets = new Set(opts.sets ?? DEFAULT_TOOL_SETS);
  const local = new Map((opts.local ?? []).map((l) => [l.name, l]));
  const bindings = bindTools(opts.document).filter((b) => sets.has(b.tool.set) && !local.has(b.tool.name));
  const byName = new Map(bindings.map((b) => [b.tool.name, b]));
  const tools: Tool[] = [
    ...bindings.map((b) => ({
      name: b.tool.name,
      description: `${b.tool.description} (${b.tool.method} ${b.tool.path})`,
      inputSchema: b.inputSchema as Tool['inputSchema'],
      outputSchema: b.outputSchema as Tool['outputSchema'],
      ...(b.tool.readOnly ? { annotations: { readOnlyHint: true } } : {}),
    })),
    ...[...local.values()].map((l) => ({
      name: l.name,
      description: l.description,
      inputSchema: l.inputSchema as Tool['inputSchema'],
      outputSchema: outputSchema(l.resultSchema) as Tool['outputSchema'],
    })),
  ];
  const server = new Server({ name: 'coord', version: opts.version ?? '0.1.0' }, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, async (req, extra): Promise<CallToolResult> => {
    const name = req.params.name;
    const args = (req.params.arguments ?? {}) as Record<string, unknown>;
    const l = local.get(name);
    const b = byName.get(name);
    if (!l && !b) throw new McpError(ErrorCode.InvalidParams, `unknown tool "${name}"; tools/list names the tools of the chosen sets`);
    const wrong = checkArgs(l ? l.inputSchema : b!.inputSchema, args);
    if (wrong) return errorResult({ code: 'validation_failed', status: 400, message: wrong });
    if (b) return callApi(opts.backend, b, args, extra.signal);
    try {
      return okResult(await l!.run(args));
    } catch (err) {
      const p = l!.problemOf(err);
      if (p) return errorResult(p);
      return errorResult({ code: 'internal_error', status: 500, message: err instanceof Error ? err.message : String(err) });
    }
  });
  return server;
}
