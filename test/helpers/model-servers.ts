/**
 * Scripted model servers on 127.0.0.1: stand-ins for the model vendors' HTTP APIs, and for
 * nothing else. There is no internet here, so the one part of a real coding agent that cannot run
 * is its model; these answer the real agent binaries (`claude` from @anthropic-ai/claude-code,
 * `codex` from @openai/codex, both pinned in devDependencies) with a fixed script of tool calls, and
 * record every request so a test can assert what the agent sent (its prompt, the tools it offered,
 * its working directory). The agents, their tools, git, the runner, `coord mcp` and the Coord
 * server are all real.
 *
 * - anthropicModel(): Anthropic's Messages API (`POST /v1/messages`, streamed as server-sent
 *   events when the request says `stream`), which Claude Code calls at `ANTHROPIC_BASE_URL`.
 * - openaiModel(): OpenAI's Responses API (`POST /v1/responses`, streamed), which Codex calls at
 *   its model provider's `base_url`.
 *
 * A script is a function from the request to the model's next turn; `byTurn` answers the n-th
 * turn of each conversation with the n-th entry. Turns are vendor-neutral (`shell`, `write`,
 * `mcp`, `text`) and each server spells them in its agent's own tools.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** The model's next turn: one tool call, a final text, an API error, or no answer at all. */
export type Turn =
  | { shell: string }
  | { write: { path: string; content: string } }
  | { mcp: { server: string; tool: string; args: Record<string, unknown> } }
  | { text: string }
  | { error: { status: number; message: string } }
  | { hang: true };

/** One request an agent made, as the server read it. */
export interface ModelRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: any;
  /** Which turn of its conversation this is: the number of model turns already in it. */
  turn: number;
  /** The names of the tools the agent offered the model. */
  tools: string[];
  /** Every text of the request (system prompt, messages, tool results), joined. */
  text: string;
  /** The tool results in the conversation so far, in order. */
  toolResults: string[];
}

export type Script = (req: ModelRequest) => Turn;

/** A script that answers turn n of each conversation with `turns[n]` (the last one after that). */
export const byTurn =
  (turns: Turn[]): Script =>
  (req) =>
    turns[Math.min(req.turn, turns.length - 1)];

export interface ScriptedModel {
  /** The base URL to give the agent (`ANTHROPIC_BASE_URL`, or a Codex provider's `base_url`). */
  url: string;
  /** Every request, in arrival order. */
  requests: ModelRequest[];
  /** Why the script could not answer a request (each got an API error 400). */
  scriptErrors: string[];
  /** The requests of agent turns (those that offered tools). */
  agentTurns(): ModelRequest[];
  close(): Promise<void>;
}

/** Every string under `v` (texts, tool results, tool inputs), depth first. */
function texts(v: unknown, out: string[] = []): string[] {
  if (typeof v === 'string') out.push(v);
  else if (Array.isArray(v)) for (const x of v) texts(x, out);
  else if (v && typeof v === 'object') for (const x of Object.values(v)) texts(x, out);
  return out;
}

interface Vendor {
  /** The request path this vendor answers (others get 404). */
  path: RegExp;
  read(body: any): Pick<ModelRequest, 'turn' | 'tools' | 'toolResults'>;
  /** Writes the answer for `turn`: streamed when the request asked for it. */
  answer(res: http.ServerResponse, turn: Exclude<Turn, { hang: true } | { error: unknown }>, body: any, n: number): void;
  error(res: http.ServerResponse, status: number, message: string): void;
}

async function serve(vendor: Vendor, script: Script): Promise<ScriptedModel> {
  const requests: ModelRequest[] = [];
  const scriptErrors: string[] = [];
  const hanging = new Set<http.ServerResponse>();
  let n = 0;
  const server = http.createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (d) => (raw += d));
    req.on('end', () => {
      let body: any = null;
      try {
        body = raw ? JSON.parse(raw) : null;
      } catch {
        body = raw;
      }
      const path = req.url ?? '/';
      const seen = body && typeof body === 'object' ? vendor.read(body) : { turn: 0, tools: [], toolResults: [] };
      const request: ModelRequest = { method: req.method ?? 'GET', path, headers: req.headers, body, text: texts(body).join('\n'), ...seen };
      requests.push(request);
      if (req.method !== 'POST' || !vendor.path.test(path.split('?')[0])) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"type":"not_found_error","message":"not scripted"}}');
        return;
      }
      n += 1;
      try {
        // A request that offers no tools is the agent's own housekeeping (a title, a quota probe): a short text.
        const turn: Turn = request.tools.length ? script(request) : { text: 'ok' };
        if ('hang' in turn) {
          hanging.add(res);
          res.on('close', () => hanging.delete(res));
          return;
        }
        if ('error' in turn) vendor.error(res, turn.error.status, turn.error.message);
        else vendor.answer(res, turn, body, n);
      } catch (err) {
        // The script could not answer (the agent sent what it did not expect): the agent gets an
        // API error and stops, and the test reads why in scriptErrors.
        scriptErrors.push((err as Error).message);
        if (!res.headersSent) vendor.error(res, 400, `scripted model: ${(err as Error).message}`);
        else res.end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    scriptErrors,
    agentTurns: () => requests.filter((r) => r.tools.length > 0),
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of hanging) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Server-sent events, one `event:`/`data:` pair each. */
function sse(res: http.ServerResponse): (type: string, data: Record<string, unknown>) => void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  return (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
}

/** `text` in pieces of at most 16 characters: a stream that really streams. */
const pieces = (text: string) => text.match(/[\s\S]{1,16}/g) ?? [''];

/** Anthropic's Messages API, as Claude Code calls it. Tools: `Bash`, `Write`, `mcp__<server>__<tool>`. */
export function anthropicModel(script: Script): Promise<ScriptedModel> {
  return serve(
    {
      path: /^\/v1\/messages$/,
      read: (body) => ({
        turn: (body.messages ?? []).filter((m: any) => m.role === 'assistant').length,
        tools: (body.tools ?? []).map((t: any) => t.name),
        toolResults: (body.messages ?? []).flatMap((m: any) =>
          Array.isArray(m.content) ? m.content.filter((c: any) => c.type === 'tool_result').map((c: any) => texts(c.content).join('\n')) : [],
        ),
      }),
      answer(res, turn, body, n) {
        const id = `msg_scripted_${n}`;
        const usage = { input_tokens: 100, output_tokens: 20, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
        const call =
          'shell' in turn
            ? { name: 'Bash', input: { command: turn.shell, description: 'scripted step' } }
            : 'write' in turn
              ? { name: 'Write', input: { file_path: turn.write.path, content: turn.write.content } }
              : 'mcp' in turn
                ? { name: `mcp__${turn.mcp.server}__${turn.mcp.tool}`, input: turn.mcp.args }
                : null;
        const text = 'text' in turn ? turn.text : '';
        const stop = call ? 'tool_use' : 'end_turn';
        if (!body.stream) {
          const content = call ? [{ type: 'tool_use', id: `toolu_scripted_${n}`, ...call }] : [{ type: 'text', text }];
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ id, type: 'message', role: 'assistant', model: body.model, content, stop_reason: stop, stop_sequence: null, usage }));
          return;
        }
        const ev = sse(res);
        ev('message_start', {
          message: { id, type: 'message', role: 'assistant', model: body.model, content: [], stop_reason: null, stop_sequence: null, usage },
        });
        if (call) {
          ev('content_block_start', { index: 0, content_block: { type: 'tool_use', id: `toolu_scripted_${n}`, name: call.name, input: {} } });
          for (const p of pieces(JSON.stringify(call.input))) ev('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: p } });
        } else {
          ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
          for (const p of pieces(text)) ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: p } });
        }
        ev('content_block_stop', { index: 0 });
        ev('message_delta', { delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 20 } });
        ev('message_stop', {});
        res.end();
      },
      error(res, status, message) {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ type: 'error', error: { type: status === 400 ? 'invalid_request_error' : 'api_error', message } }));
      },
    },
    script,
  );
}

/**
 * OpenAI's Responses API, as Codex calls it. Tools: `exec_command` (a shell command; a `write` is
 * a heredoc through it), and an MCP tool by the name Codex offered for it (`mcp__<server>__<tool>`).
 */
export function openaiModel(script: Script): Promise<ScriptedModel> {
  return serve(
    {
      path: /^\/v1\/responses$/,
      read: (body) => {
        const input: any[] = Array.isArray(body.input) ? body.input : [];
        const names = (tools: any[]): string[] =>
          tools.flatMap((t: any) => (t.type === 'namespace' ? names(t.tools ?? []).map((x) => `${t.name}${x}`) : [t.name ?? t.type]));
        return {
          turn: input.filter((i) => i.type === 'function_call' || (i.type === 'message' && i.role === 'assistant')).length,
          tools: names(body.tools ?? []),
          toolResults: input.filter((i) => i.type === 'function_call_output').map((i) => texts(i.output).join('\n')),
        };
      },
      answer(res, turn, body, n) {
        const id = `resp_scripted_${n}`;
        const ev = sse(res);
        ev('response.created', { response: { id, status: 'in_progress', output: [] } });
        let item: Record<string, unknown>;
        if ('text' in turn) {
          item = {
            type: 'message',
            role: 'assistant',
            id: `msg_scripted_${n}`,
            status: 'completed',
            content: [{ type: 'output_text', text: turn.text, annotations: [] }],
          };
          ev('response.output_item.added', { output_index: 0, item: { ...item, status: 'in_progress', content: [] } });
          for (const p of pieces(turn.text)) ev('response.output_text.delta', { output_index: 0, content_index: 0, item_id: item.id, delta: p });
        } else {
          const command = 'shell' in turn ? turn.shell : 'write' in turn ? heredoc(turn.write.path, turn.write.content) : null;
          const tools: string[] = (body.tools ?? []).flatMap((t: any) =>
            t.type === 'namespace' ? (t.tools ?? []).map((x: any) => ({ ns: t.name, name: x.name })) : [{ name: t.name }],
          );
          const [tool, args] =
            command !== null
              ? [{ name: 'exec_command' }, { cmd: command, yield_time_ms: 60_000 }]
              : [mcpTool(tools as any, (turn as { mcp: { server: string; tool: string } }).mcp), (turn as { mcp: { args: unknown } }).mcp.args];
          item = {
            type: 'function_call',
            id: `fc_scripted_${n}`,
            status: 'completed',
            call_id: `call_scripted_${n}`,
            name: tool.name,
            ...(tool.ns ? { namespace: tool.ns } : {}),
            arguments: JSON.stringify(args),
          };
          ev('response.output_item.added', { output_index: 0, item: { ...item, arguments: '' } });
          for (const p of pieces(item.arguments as string)) ev('response.function_call_arguments.delta', { output_index: 0, item_id: item.id, delta: p });
        }
        ev('response.output_item.done', { output_index: 0, item });
        ev('response.completed', {
          response: {
            id,
            status: 'completed',
            output: [item],
            usage: { input_tokens: 100, input_tokens_details: null, output_tokens: 20, output_tokens_details: null, total_tokens: 120 },
          },
        });
        res.end();
      },
      error(res, status, message) {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message, type: status === 400 ? 'invalid_request_error' : 'server_error', code: 'scripted' } }));
      },
    },
    script,
  );
}

/** The tool Codex offered for MCP tool `tool` of `server`: `tool` in the namespace `mcp__<server>`. */
function mcpTool(tools: { ns?: string; name: string }[], mcp: { server: string; tool: string }): { ns?: string; name: string } {
  const wanted = `mcp__${mcp.server}__${mcp.tool}`;
  const hit =
    tools.find((t) => `${t.ns ?? ''}${t.name}` === wanted || t.name === wanted) ?? tools.find((t) => t.name === mcp.tool && t.ns?.includes(mcp.server));
  if (!hit)
    throw new Error(`Codex offered no tool ${mcp.tool} of MCP server ${mcp.server}; it offered ${tools.map((t) => `${t.ns ?? ''}${t.name}`).join(', ')}`);
  return hit;
}

/** A shell command that writes `content` to `path` exactly. */
function heredoc(path: string, content: string): string {
  return `mkdir -p "$(dirname '${path}')" && cat > '${path}' <<'COORD_SCRIPTED_EOF'\n${content.replace(/\n$/, '')}\nCOORD_SCRIPTED_EOF`;
}
