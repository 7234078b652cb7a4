/**
 * `/mcp`: Coord's MCP tools over streamable HTTP on the server, for agents that reach Coord only
 * over the network. Authenticated with the same bearer tokens as `/v1` (the auth
 * hook covers `/mcp`). Stateless: each POST builds the tool server (mcp/server.ts) for the
 * caller and answers with JSON. Every tool calls its route through `app.inject` with the caller's
 * own `Authorization`, so validation, scope and authority are exactly the routes' — an outsider's
 * call is refused exactly as the route would refuse it. Not in the OpenAPI document: it is
 * JSON-RPC, not REST.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createMcpServer, parseToolSets, type Backend } from '../../mcp/server.js';
import { IDEMPOTENCY_HEADER } from '../idempotency/idempotency.plugin.js';

/** Marks a route call made for a tool (see `calls` in mcpRoutes). */
const CALL_HEADER = 'x-coord-mcp-call';

/** A JSON-RPC message's method and id, when the body is one (not a batch). */
function messageOf(body: unknown): { method?: string; id?: unknown; params?: { requestId?: unknown } } {
  return body && typeof body === 'object' && !Array.isArray(body) ? (body as { method?: string; id?: unknown }) : {};
}

/**
 * Registers `POST /mcp` (and 405 for GET/DELETE: stateless, no server-initiated stream).
 *
 * Cancellation. A `tools/call` ends, and its route sees its client gone (a waiting `next` claims
 * nothing), when the caller's connection closes before the answer, or when the same token sends
 * `notifications/cancelled` for its request id. Stateless, the notification comes as another POST:
 * it reaches the call only on the same replica (the calls in flight are kept per replica, keyed
 * by token and request id); on another it is acknowledged and does nothing.
 */
export function mcpRoutes(app: FastifyInstance): void {
  const inFlight = new Map<string, AbortController>();
  /**
   * The route calls a tool is making, by a random id in CALL_HEADER, with the signal that ends
   * them. An injected request's response is not closed by aborting `inject` once its body has
   * been read, so this hook closes it: the route sees its client gone exactly as over a socket.
   * A header with an id not in the map (any outside request) changes nothing.
   */
  const calls = new Map<string, AbortSignal>();
  app.addHook('onRequest', async (req, reply) => {
    const id = req.headers[CALL_HEADER];
    const signal = typeof id === 'string' ? calls.get(id) : undefined;
    if (!signal) return;
    if (signal.aborted) reply.raw.destroy();
    else signal.addEventListener('abort', () => reply.raw.destroy(), { once: true });
  });
  const keyOf = (authorization: string, id: unknown) => `${authorization}\u0000${JSON.stringify(id)}`;
  const methodNotAllowed = { jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed: POST JSON-RPC to /mcp (stateless)' }, id: null };
  app.get('/mcp', { schema: { hide: true } }, async (_req, reply) => reply.status(405).header('allow', 'POST').send(methodNotAllowed));
  app.delete('/mcp', { schema: { hide: true } }, async (_req, reply) => reply.status(405).header('allow', 'POST').send(methodNotAllowed));
  app.post('/mcp', { schema: { hide: true } }, async (req, reply) => {
    const authorization = req.headers.authorization!;
    const message = messageOf(req.body);
    if (message.method === 'notifications/cancelled') inFlight.get(keyOf(authorization, message.params?.requestId))?.abort();
    // The caller going away, or cancelling, aborts the route call below.
    const gone = new AbortController();
    reply.raw.once('close', () => gone.abort());
    const key = message.method === 'tools/call' && message.id !== undefined ? keyOf(authorization, message.id) : undefined;
    if (key) inFlight.set(key, gone);
    // A client that retries a tools/call may send the same Idempotency-Key on its POST to /mcp; the
    // tool's own idempotencyKey argument wins over it.
    const forwarded = typeof req.headers[IDEMPOTENCY_HEADER] === 'string' ? req.headers[IDEMPOTENCY_HEADER] : undefined;
    const backend: Backend = {
      async call(method, url, body, headers, signal) {
        const key = method === 'POST' ? (headers[IDEMPOTENCY_HEADER] ?? forwarded) : undefined;
        const call = randomUUID();
        calls.set(call, signal ? AbortSignal.any([signal, gone.signal]) : gone.signal);
        let r;
        try {
          r = await app.inject({
            method: method as 'GET',
            url,
            headers: {
              authorization,
              [CALL_HEADER]: call,
              ...headers,
              ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
              ...(key ? { [IDEMPOTENCY_HEADER]: key } : {}),
            },
            ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
          });
        } finally {
          calls.delete(call);
        }
        let parsed: unknown;
        try {
          parsed = r.body ? JSON.parse(r.body) : undefined;
        } catch {
          parsed = { detail: r.body };
        }
        return { status: r.statusCode, body: parsed };
      },
    };
    const tools = typeof req.query === 'object' && req.query && 'tools' in req.query ? String((req.query as { tools: unknown }).tools) : undefined;
    let sets;
    try {
      sets = parseToolSets(tools);
    } catch (err) {
      if (key) inFlight.delete(key);
      return reply.status(400).send({ jsonrpc: '2.0', error: { code: -32602, message: (err as Error).message }, id: null });
    }
    const server = createMcpServer({ document: app.swagger(), backend, sets });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    reply.hijack();
    reply.raw.on('close', () => {
      if (key && inFlight.get(key) === gone) inFlight.delete(key);
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req.raw, reply.raw, req.body);
  });
}
