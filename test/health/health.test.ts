import { describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { testConfig } from '../../src/config.js';
import { freePort } from '../../src/db/embedded.js';
import { openDb } from '../../src/db/client.js';

describe('health and routing edges', () => {
  it('should say the database is unreachable (not "not migrated") when it is down, and route long ids to a problem', async () => {
    const port = await freePort(); // nothing listens there
    const sql = openDb(`postgres://postgres:postgres@127.0.0.1:${port}/nope`, { max: 1 });
    const app = await buildApp({ sql, config: testConfig(), documentOnly: true });
    try {
      const r = await app.inject({ url: '/readyz' });
      expect(r.statusCode).toBe(503);
      expect(r.json()).toMatchObject({ code: 'database_unavailable', detail: 'the database is unreachable' });
      expect(r.headers['retry-after']).toBe('1'); // like every other 503 database_unavailable
      const long = await app.inject({ url: `/v1/todos/td-${'x'.repeat(300)}` });
      expect(long.statusCode).toBe(401); // reached the route's auth hook: a problem document, not Fastify's 414
      expect(long.headers['content-type']).toContain('application/problem+json');
    } finally {
      await app.close();
      await sql.end({ timeout: 1 });
    }
  });
});
