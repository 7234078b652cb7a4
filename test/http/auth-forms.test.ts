/**
 * Authentication is decided by the route the router chose, not by the request's raw target
 * (`/%76%31/me` and the absolute form `http://x/v1/me` reached `/v1` handlers with no
 * principal, and `POST /%6dcp` served MCP with no token). Every operation of the OpenAPI document,
 * and `/mcp`, is sent without a token in every form a target can name it by; each answer must be
 * 401 or 404 problem+json, never a 2xx and never a 5xx. Raw sockets, since an HTTP client would
 * normalise the very forms under test.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderOpenApi } from '../../scripts/gen-openapi.js';
import { routeNeedsPrincipal } from '../../src/auth/auth.plugin.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { operations } from './openapi-fuzz.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

const doc = JSON.parse(await renderOpenApi());
// Every operation that needs a principal (the public ones, /healthz, /readyz and /metrics, answer anyone).
const targets = [
  ...operations(doc)
    .filter((op) => routeNeedsPrincipal(op.path))
    .map((op) => ({ method: op.method, path: op.path.replace(/\{[^}]+\}/g, 'x') })),
  { method: 'POST', path: '/mcp' },
  { method: 'GET', path: '/mcp' },
];

const encodeAll = (s: string) => [...Buffer.from(s)].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');
/** The forms one path can take in a request target. */
function forms(path: string, host: string): Record<string, string> {
  const segs = path.split('/').slice(1);
  return {
    raw: path,
    'percent-encoded segments': `/${segs.map(encodeAll).join('/')}`,
    'percent-encoded first segment': `/${[encodeAll(segs[0]), ...segs.slice(1)].join('/')}`,
    'absolute form': `http://${host}${path}`,
    'double slashes': path.replaceAll('/', '//'),
    'dot segments': `/${segs[0]}/./${segs.slice(1).join('/')}`,
    'parent segments': `/static/../${segs.join('/')}`,
    'upper case': path.toUpperCase(),
  };
}

/** Sends one raw HTTP/1.1 request and resolves with its status and content type. */
function raw(port: number, method: string, target: string): Promise<{ status: number; type: string }> {
  return new Promise((resolve, reject) => {
    const sock = connect(port, '127.0.0.1');
    let data = '';
    const body = method === 'GET' || method === 'DELETE' ? '' : '{}';
    sock.on('connect', () =>
      sock.write(
        `${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\nAccept: application/json\r\n` +
          (body ? `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n` : '') +
          `\r\n${body}`,
      ),
    );
    sock.on('data', (d) => (data += d));
    sock.on('error', reject);
    sock.on('close', () => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(data)?.[1] ?? 0);
      const type = /\r\ncontent-type: ([^\r]*)/i.exec(data)?.[1] ?? '';
      resolve({ status, type });
    });
  });
}

describe('authentication by route, whatever form the target takes', () => {
  it(`answers every operation (${targets.length}) in every form without a token with 401 or 404 problem+json`, async () => {
    const port = Number(new URL(t.base).port);
    const bad: string[] = [];
    let n = 0;
    for (const { method, path } of targets) {
      for (const [form, target] of Object.entries(forms(path, `127.0.0.1:${port}`))) {
        const r = await raw(port, method, target);
        n++;
        if (![401, 404].includes(r.status) || !r.type.startsWith('application/problem+json')) bad.push(`${method} ${target} (${form}) → ${r.status} ${r.type}`);
      }
    }
    expect(bad).toEqual([]);
    expect(n).toBeGreaterThan(500);
  });

  it('still serves the public routes without a token, and /v1 with one', async () => {
    const port = Number(new URL(t.base).port);
    expect((await raw(port, 'GET', '/healthz')).status).toBe(200);
    expect((await raw(port, 'GET', '/%68ealthz')).status).toBe(200);
    expect((await t.admin.get('/v1/me')).status).toBe(200);
    expect((await t.admin.get('/%76%31/me')).status).toBe(200);
  });
});
