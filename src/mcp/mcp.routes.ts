/**
 * `/mcp`: Coord's MCP tools over streamable HTTP on the server, for agents that reach Coord only
 * over the network. Authenticated with the same bearer tokens as `/v1` (the auth
 * hook covers `/mcp`). Stateless: each POST builds the tool server (mcp/server.ts) for the
 * caller and answers with JSON. Every tool calls its route through `app.inject` with the caller's
 * own `Authorization`, so validation, scope and authority are exactly the routes' — an outsider's
 * call is refused exactly as the route would refuse it. Not in the OpenAPI document: it is
 * JSON-RPC, not REST.
 */
import type { FastifyInstance } from 'fastify';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createMcpServer, parseToolSets, type Backend } from '../../mcp/server.js';
import { IDEMPOTENCY_HEADER } from '../idempotency/idempotency.plugin.js';

/** Registers `POST /mcp` (and 405 for GET/DELETE: stateless, no server-initiated stream). */
export function mcpRoutes(app: FastifyInstance): void {
  const methodNotAllowed = { jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed: POST JSON-RPC to /mcp (stateless)' }, id: null };
  app.get('/mcp', { schema: { hide: true } }, async (_req, reply) => reply.status(405).header('allow', 'POST').send(methodNotAllowed));
  app.delete('/mcp', { schema: { hide: true } }, async (_req, reply) => reply.status(405).header('allow', 'POST').send(methodNotAllowed));
  app.post('/mcp', { schema: { hide: true } }, async (req, reply) => {
    const authorization = req.headers.authorization!;
    // A client that retries a tools/call may send the same Idempotency-Key on its POST to /mcp; the
    // tool's own idempotencyKey argument wins over it.
    const forwarded = typeof req.headers[IDEMPOTENCY_HEADER] === 'string' ? req.headers[IDEMPOTENCY_HEADER] : undefined;
    const backend: Backend = {
      async call(method, url, body, idempotencyKey) {
        const key = method === 'POST' ? (idempotencyKey ?? forwarded) : undefined;
        const r = await app.inject({
          method: method as 'GET',
          url,
          headers: {
            authorization,
            ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
            ...(key ? { [IDEMPOTENCY_HEADER]: key } : {}),
          },
          ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
        });
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
      return reply.status(400).send({ jsonrpc: '2.0', error: { code: -32602, message: (err as Error).message }, id: null });
    }
    const server = createMcpServer({ document: app.swagger(), backend, sets });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    reply.hijack();
    reply.raw.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req.raw, reply.raw, req.body);
  });
}
