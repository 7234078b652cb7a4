/**
 * What is refused before a route runs (docs/errors.md): problem+json with a
 * catalogued code, whatever refuses it, and the right one: an unknown route is 404 before its body
 * is read, an unmeetable `Expect` is 417, and a client that resets mid-body is a client abort in
 * the log, not a database outage.
 */
import { once } from 'node:events';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
const logs: Record<string, unknown>[] = [];
beforeAll(async () => {
  t = await startTestApp({ config: { logLevel: 'info' }, logs });
});
afterAll(async () => t?.close());

/** Sends `raw` on a fresh socket and returns everything the server sent until it closed (or 3 s). */
async function rawExchange(raw: string): Promise<string> {
  const { port, hostname } = new URL(t.base);
  const sock = net.connect(Number(port), hostname);
  await once(sock, 'connect');
  let got = '';
  sock.on('data', (d) => (got += d.toString('utf8')));
  sock.write(raw);
  await Promise.race([once(sock, 'close'), new Promise((r) => setTimeout(r, 3000))]);
  sock.destroy();
  return got;
}

describe('refused before a route runs', () => {
  it('answers an Expect header other than 100-continue with 417 expectation_failed as problem+json', async () => {
    const got = await rawExchange(
      `POST /v1/todos HTTP/1.1\r\nHost: coord\r\nExpect: 201-created\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`,
    );
    expect(got).toMatch(/^HTTP\/1\.1 417 /);
    expect(got).toMatch(/content-type: application\/problem\+json/i);
    const body = JSON.parse(got.slice(got.indexOf('\r\n\r\n') + 4));
    expect(body).toMatchObject({ status: 417, code: 'expectation_failed', type: 'https://coord.dev/problems/expectation_failed' });
  });

  it('answers 404 not_found for a method and path no route has, before reading a broken, empty or oversized body', async () => {
    const cases: [string, string, string | undefined][] = [
      ['PUT', '/v1/nope', '{bad'],
      ['DELETE', '/v1/me', ''],
      ['POST', '/v1/me', '{bad'],
      ['POST', '/v1/zzz', 'x'.repeat(2_000_000)],
      ['PATCH', '/v1/todos', '{"a":1}'],
    ];
    for (const [method, path, body] of cases) {
      const res = await fetch(`${t.base}${path}`, { method, body, headers: { 'content-type': 'application/json', authorization: `Bearer ${t.admin.token}` } });
      expect([method, path, res.status, res.headers.get('content-type')]).toEqual([method, path, 404, 'application/problem+json; charset=utf-8']);
      expect(((await res.json()) as { code: string }).code).toBe('not_found');
    }
  });

  it('logs a client that resets its connection mid-body as a client abort, not as database unavailable', async () => {
    const { port, hostname } = new URL(t.base);
    const sock = net.connect(Number(port), hostname);
    await once(sock, 'connect');
    sock.write(
      `POST /v1/todos HTTP/1.1\r\nHost: coord\r\nAuthorization: Bearer ${t.admin.token}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"title":"cut`,
    );
    await new Promise((r) => setTimeout(r, 200));
    sock.resetAndDestroy();
    const deadline = Date.now() + 3000;
    while (!logs.some((l) => l.msg === 'client aborted the request') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(logs.filter((l) => l.msg === 'client aborted the request')).toHaveLength(1);
    expect(logs.filter((l) => l.msg === 'database unavailable')).toEqual([]);
  });
});
