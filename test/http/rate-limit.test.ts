/**
 * Rate limits per token: a small configured limit, real HTTP. Over it: 429
 * `rate_limited` problem+json with Retry-After; tokens counted apart; health routes exempt; an SSE
 * stream counted once, when it opens.
 */
import { createClient, RateLimited } from '@coord/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUser } from '../../src/tokens/tokens.bootstrap.js';
import { ConfigError, loadConfig, RATE_LIMIT_DEFAULT, AUTH_FAILURE_LIMIT_DEFAULT } from '../../src/config.js';
import { addItem, Client, startTestApp, type Res, type TestApp } from '../helpers/app.js';
import { parsePrometheus } from '../helpers/prometheus.js';
import { openSse } from '../helpers/sse.js';

const LIMIT = 3;
const WINDOW_MS = 600_000; // long enough that no window resets during the test

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ config: { rateLimit: LIMIT, rateLimitWindowMs: WINDOW_MS } });
});
afterAll(async () => t?.close());

/** A fresh operator token (its own budget) and `n` root sessions it registers. */
async function sessions(n: number) {
  const admin = new Client(t.base, (await createUser(t.sql, 'operator')).token);
  const out = [];
  for (let i = 0; i < n; i++) out.push(await t.session({ by: admin }));
  return { admin, sessions: out };
}

function expectRateLimited(r: Res) {
  expect(r.status).toBe(429);
  expect(r.headers.get('content-type')).toContain('application/problem+json');
  const retryAfter = Number(r.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(WINDOW_MS / 1000);
  expect(r.body).toMatchObject({
    type: 'https://coord.dev/problems/rate_limited',
    status: 429,
    code: 'rate_limited',
    retryAfterSeconds: retryAfter,
    limit: LIMIT,
    windowSeconds: WINDOW_MS / 1000,
  });
  expect(r.body.detail).toContain(`wait ${retryAfter} s`);
}

describe('rate limit per token', () => {
  it('should answer 429 rate_limited with Retry-After past the limit, and count another token apart', async () => {
    const {
      admin,
      sessions: [a, b],
    } = await sessions(2);
    for (let i = 0; i < LIMIT; i++) {
      const r = await a.client.get('/v1/me');
      expect(r.status).toBe(200);
      expect(r.headers.get('x-ratelimit-remaining')).toBe(String(LIMIT - 1 - i));
    }
    const over = await a.client.get('/v1/me');
    expectRateLimited(over);
    expect(over.body.detail).toContain('this token');
    expectRateLimited(await a.client.post('/v1/todos', { title: 'refused' }));
    expect((await b.client.get('/v1/me')).status).toBe(200);
    expect((await admin.get(`/v1/todos?scope=session:${a.id}`)).body.items).toEqual([]); // nothing was done
  });

  it('should never limit /healthz, /readyz or /metrics', async () => {
    for (let i = 0; i < LIMIT * 3; i++) {
      for (const path of ['/healthz', '/readyz', '/metrics']) {
        const res = await fetch(t.base + path);
        expect(res.status, path).toBe(200);
        expect(res.headers.get('x-ratelimit-limit'), path).toBeNull();
        await res.text();
      }
    }
  });

  it('should count an SSE stream once, when it opens, however many events it delivers', async () => {
    const {
      admin,
      sessions: [c],
    } = await sessions(1);
    const stream = await openSse(`${t.base}/v1/events?topic=todo:session:${c.id}`, c.token); // 1
    try {
      expect(stream.status).toBe(200);
      await addItem(admin, 'one', { scope: `session:${c.id}` });
      await addItem(admin, 'two', { scope: `session:${c.id}` });
      await stream.until((ev) => ev.filter((e) => e.event === 'added').length === 2);
      expect((await c.client.get('/v1/me')).status).toBe(200); // 2
      expect((await c.client.get('/v1/me')).status).toBe(200); // 3
      expectRateLimited(await c.client.get('/v1/me'));
      const refused = await fetch(`${t.base}/v1/events?topic=todo:session:${c.id}`, { headers: { authorization: `Bearer ${c.token}` } });
      expect(refused.status).toBe(429);
      await refused.text();
    } finally {
      stream.close();
    }
  });

  it('should key a route without authentication by client address', async () => {
    const {
      sessions: [d],
    } = await sessions(1);
    for (let i = 0; i < LIMIT; i++) {
      const res = await fetch(`${t.base}/openapi.json`);
      expect(res.status).toBe(200);
      await res.text();
    }
    const res = await fetch(`${t.base}/openapi.json`);
    const body = await res.json();
    expect(res.status).toBe(429);
    expect(body).toMatchObject({ code: 'rate_limited' });
    expect(body.detail).toContain('this client address');
    expect((await d.client.get('/v1/me')).status).toBe(200);
  });

  it('should raise the SDK’s RateLimited with retryAfterMs from Retry-After', async () => {
    const {
      sessions: [e],
    } = await sessions(1);
    const sdk = createClient({ baseUrl: t.base, token: e.token });
    for (let i = 0; i < LIMIT; i++) await sdk.me();
    const err = await sdk.me().then(
      () => undefined,
      (x: unknown) => x,
    );
    expect(err).toBeInstanceOf(RateLimited);
    expect((err as RateLimited).code).toBe('rate_limited');
    expect((err as RateLimited).retryAfterMs).toBeGreaterThanOrEqual(1000);
  });

  it('should count the 429 answers in the metrics, by route pattern', async () => {
    const m = parsePrometheus(await (await fetch(`${t.base}/metrics`)).text());
    expect(m.value('coord_http_requests_total', { route: '/v1/me', method: 'GET', status: '429' })).toBeGreaterThanOrEqual(2);
  });
});

describe('rate limit configuration', () => {
  const env = (extra: Record<string, string>) => ({ COORD_DATA_DIR: '/tmp/coord-rate-limit-test', ...extra });
  it('should default to 6,000 per minute, read COORD_RATE_LIMIT and COORD_RATE_LIMIT_WINDOW, and take 0 as off', () => {
    expect(loadConfig(env({}))).toMatchObject({ rateLimit: RATE_LIMIT_DEFAULT, rateLimitWindowMs: 60_000 });
    expect(RATE_LIMIT_DEFAULT).toBe(6000);
    expect(loadConfig(env({ COORD_RATE_LIMIT: '120', COORD_RATE_LIMIT_WINDOW: '10s' }))).toMatchObject({ rateLimit: 120, rateLimitWindowMs: 10_000 });
    expect(loadConfig(env({ COORD_RATE_LIMIT: '0' })).rateLimit).toBe(0);
  });
  it('should refuse a bad value, naming the key', () => {
    expect(() => loadConfig(env({ COORD_RATE_LIMIT: 'lots' }))).toThrow(ConfigError);
    expect(() => loadConfig(env({ COORD_RATE_LIMIT: 'lots' }))).toThrow(/COORD_RATE_LIMIT/);
    expect(() => loadConfig(env({ COORD_RATE_LIMIT_WINDOW: '10ms' }))).toThrow(/COORD_RATE_LIMIT_WINDOW must be at least 1000 ms/);
  });
  it('should read the failed-authentication limit (default 100 per minute, 0 off) and COORD_TRUST_PROXY', () => {
    expect(loadConfig(env({}))).toMatchObject({ authFailureLimit: AUTH_FAILURE_LIMIT_DEFAULT, authFailureWindowMs: 60_000, trustProxy: undefined });
    expect(AUTH_FAILURE_LIMIT_DEFAULT).toBe(100);
    expect(loadConfig(env({ COORD_AUTH_FAILURE_LIMIT: '0', COORD_AUTH_FAILURE_WINDOW: '10s' }))).toMatchObject({
      authFailureLimit: 0,
      authFailureWindowMs: 10_000,
    });
    expect(loadConfig(env({ COORD_TRUST_PROXY: '10.0.0.0/8, loopback,::1' })).trustProxy).toEqual(['10.0.0.0/8', 'loopback', '::1']);
    expect(loadConfig(env({ COORD_TRUST_PROXY: '2' })).trustProxy).toBe(2);
    expect(() => loadConfig(env({ COORD_TRUST_PROXY: 'proxy.internal' }))).toThrow(/COORD_TRUST_PROXY: "proxy.internal" is not an address/);
    expect(() => loadConfig(env({ COORD_TRUST_PROXY: '10.0.0.0/33' }))).toThrow(/COORD_TRUST_PROXY/);
    expect(() => loadConfig(env({ COORD_AUTH_FAILURE_LIMIT: '-1' }))).toThrow(/COORD_AUTH_FAILURE_LIMIT/);
  });
});
