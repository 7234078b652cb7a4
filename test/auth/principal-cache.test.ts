/** The token cache never outlives a stop: on the stopping replica at once, on others on the doorbell. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

let a: TestApp;
let b: TestApp;
beforeAll(async () => {
  a = await startTestApp();
  b = await startTestApp({ dbUrl: a.dbUrl });
});
afterAll(async () => {
  await b?.app.close();
  await b?.sql.end();
  await a?.close();
});

describe('principal cache', () => {
  it('should refuse a stopped session’s token at once on the replica that stopped it and within a second on another', async () => {
    const s = await a.session();
    const onB = b.admin.as(s.token);
    expect((await onB.get('/v1/me')).status).toBe(200); // now cached on B
    expect((await s.client.get('/v1/me')).status).toBe(200); // and on A
    const stop = await a.admin.post(`/v1/sessions/${s.id}/stop`);
    expect(stop.status).toBe(200);
    expect((await s.client.get('/v1/me')).status).toBe(401);
    const t0 = Date.now();
    let status = 200;
    while (Date.now() - t0 < 1000 && status === 200) {
      status = (await onB.get('/v1/me')).status;
      if (status === 200) await new Promise((r) => setTimeout(r, 10));
    }
    expect(status).toBe(401);
  });

  it('should let a new token in after an unknown one was refused (a refusal is cached by token, not by client)', async () => {
    expect((await a.admin.as('coord_unknown').get('/v1/me')).status).toBe(401);
    const s = await a.session();
    expect((await s.client.get('/v1/me')).status).toBe(200);
  });
});

describe('principal cache and token expiry', () => {
  it('should not trust a token past its expiry when the database answered slowly: expiry counts from when it was asked', async () => {
    const dbNow = async () => Number((await a.sql`select (extract(epoch from clock_timestamp()) * 1000)::float8 as n`)[0].n);
    const made = (await a.admin.post('/v1/tokens', { name: 'slow-answer', expiresIn: '1500ms' })).body;
    const expiresAt = Date.parse(made.token.expiresAt);
    const c = a.admin.as(made.secret);
    // Hold the tokens table so the first authentication waits a second for its answer, as on a
    // loaded machine; the database computes the time left when the statement starts.
    const locker = await a.sql.reserve();
    try {
      await locker`begin`;
      await locker`lock table tokens in access exclusive mode`;
      const first = c.get('/v1/me');
      await new Promise((r) => setTimeout(r, 1000));
      await locker`commit`;
      expect((await first).status).toBe(200); // cached from here on, while the token lives
    } finally {
      locker.release();
    }
    while ((await dbNow()) <= expiresAt) await new Promise((r) => setTimeout(r, 25));
    expect((await c.get('/v1/me')).status).toBe(401);
  });
});
