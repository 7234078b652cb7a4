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

  it('should not cache unknown tokens', async () => {
    expect((await a.admin.as('coord_unknown').get('/v1/me')).status).toBe(401);
    const s = await a.session();
    expect((await s.client.get('/v1/me')).status).toBe(200);
  });
});
