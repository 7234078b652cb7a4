/**
 * MCP clients for the tests: the official SDK's own Client, over streamable HTTP against a real
 * server's `/mcp`, or over stdio against a real `coord mcp` process.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { BIN, REPO } from '../cli/helpers.js';

/** A connected MCP client on `<base>/mcp` with `token`. */
export async function httpClient(base: string, token: string, tools?: string): Promise<Client> {
  const client = new Client({ name: 'coord-test', version: '0.0.0' });
  const url = new URL(`${base}/mcp${tools ? `?tools=${tools}` : ''}`);
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return client;
}

/** A connected MCP client on a `coord mcp` process (stdio), with COORD_URL/COORD_TOKEN. */
export async function stdioClient(base: string, token: string, args: string[] = [], env: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'coord-test', version: '0.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [BIN, 'mcp', ...args],
      cwd: REPO,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', COORD_URL: base, COORD_TOKEN: token, ...env },
      stderr: 'pipe',
    }),
  );
  return client;
}

/** `structuredContent` of a tool call, as `{result}` or `{error}`. */
export async function call(client: Client, name: string, args: Record<string, unknown> = {}) {
  const r = await client.callTool({ name, arguments: args });
  return { isError: r.isError === true, result: (r.structuredContent as any)?.result, error: (r.structuredContent as any)?.error, raw: r };
}
