/**
 * Cheap refusals: a refused token is refused again without a database round trip
 * (the principal cache keeps refusals), and past COORD_AUTH_FAILURE_LIMIT failures an address's
 * unknown tokens get 429 `rate_limited` without one. "Without a database round trip" is shown by
 * holding an ACCESS EXCLUSIVE lock on `tokens`: any lookup would wait for it.
 */
import postgres from 'postgres';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

const LIMIT = 5;

/** `GET /v1/me` with `token` (and optional extra headers): status, code and Retry-After. */
async function me(t: TestApp, token: string, headers: Record<string, string> = {}): Promise<{ status: number; code?: string; retryAfter: string | null }> {
  const res = await fetch(`${t.base}/v1/me`, { headers: { authorization: `Bearer ${token}`, ...headers }, signal: AbortSignal.timeout(10_000) });
  const body = (await res.json()) as { code?: string };
  return { status: res.status, code: body.code, retryAfter: res.headers.get('retry-after') };
}

const randomToken = () => `coord_${randomBytes(32).toString('base64url')}`;

/** Runs `fn` while another connection holds `tokens` locked against every reader. */
async function withTokensLocked<T>(t: TestApp, fn: () => Promise<T>): Promise<T> {
  const conn = postgres(t.dbUrl, { max: 1, onnotice: () => {} });
  const reserved = await conn.reserve();
  await reserved.unsafe('begin');
  await reserved.unsafe('lock table tokens in access exclusive mode');
  try {
    return await fn();
  } finally {
    await reserved.unsafe('rollback');
    reserved.release();
    await conn.end();
  }
}

describe('refused tokens', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ config: { authFailureLimit: LIMIT } });
  });
  afterAll(async () => t?.close());

  it('refuses a token the database refused again without asking it', async () => {
    const bad = randomToken();
    expect((await me(t, bad)).status).toBe(401);
    // A lookup would wait for the lock (and time out): the refusal comes from the cache.
    const again = await withTokensLocked(t, () => me(t, bad));
    expect(again).toMatchObject({ status: 401, code: 'unauthorized' });
  });

  it('does not count refusals from the cache: a client repeating one bad token never reaches the limit', async () => {
    const repeated = randomToken();
    for (let i = 0; i < LIMIT * 3; i++) expect((await me(t, repeated)).status).toBe(401);
  });

  it('answers 429 rate_limited for unknown tokens from an address past the limit, without asking the database, while tokens it accepted before still pass', async () => {
    const s = await t.session();
    expect((await me(t, s.token)).status).toBe(200); // known to this replica now
    // Fresh start for the count: earlier tests of this file made failures too.
    const t2 = await startTestApp({ dbUrl: t.dbUrl, config: { authFailureLimit: LIMIT, principalCacheMs: 1500 } });
    try {
      expect((await me(t2, s.token)).status).toBe(200);
      for (let i = 0; i <= LIMIT; i++) expect((await me(t2, randomToken())).status).toBe(401);
      expect((await me(t2, s.token)).status).toBe(200); // cached afresh
      const limited = await withTokensLocked(t2, async () => ({ known: await me(t2, s.token), unknown: await me(t2, randomToken()) }));
      expect(limited.unknown).toMatchObject({ status: 429, code: 'rate_limited' });
      expect(Number(limited.unknown.retryAfter)).toBeGreaterThan(0);
      expect(limited.known.status).toBe(200);
      // Past its cache entry, a token this replica accepted before is looked up again, limit or not
      // (a client behind the same NAT as an attacker keeps working).
      await new Promise((r) => setTimeout(r, 1600));
      expect((await me(t2, s.token)).status).toBe(200);
      expect((await me(t2, randomToken())).status).toBe(429);
      // A missing token is not a failure of a token and stays a plain 401.
      expect((await fetch(`${t2.base}/v1/me`)).status).toBe(401);
    } finally {
      await t2.app.close();
      await t2.sql.end();
    }
  });
});

describe('client address behind a proxy', () => {
  it('ignores X-Forwarded-For unless COORD_TRUST_PROXY names the proxy, and then counts each forwarded address apart', async () => {
    const direct = await startTestApp({ config: { authFailureLimit: LIMIT } });
    const proxied = await startTestApp({ dbUrl: direct.dbUrl, config: { authFailureLimit: LIMIT, trustProxy: ['127.0.0.1'] } });
    try {
      // Untrusted: every request is 127.0.0.1 whatever it claims, so claiming new addresses does not reset the count.
      for (let i = 0; i <= LIMIT; i++) await me(direct, randomToken(), { 'x-forwarded-for': `203.0.113.${i}` });
      expect((await me(direct, randomToken(), { 'x-forwarded-for': '198.51.100.7' })).status).toBe(429);

      // Trusted: 203.0.113.1 runs out, 198.51.100.7 does not.
      for (let i = 0; i <= LIMIT; i++) await me(proxied, randomToken(), { 'x-forwarded-for': '203.0.113.1' });
      expect((await me(proxied, randomToken(), { 'x-forwarded-for': '203.0.113.1' })).status).toBe(429);
      expect((await me(proxied, randomToken(), { 'x-forwarded-for': '198.51.100.7' })).status).toBe(401);
    } finally {
      await proxied.app.close();
      await proxied.sql.end();
      await direct.close();
    }
  });
});
