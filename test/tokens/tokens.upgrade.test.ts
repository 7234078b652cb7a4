/**
 * The upgrade to the tokens table (migration 0015): a database as the previous release
 * left it, with operator and session tokens stored on their rows, keeps every token working as a
 * `default` token of its principal, and a stopped session's stays refused.
 */
import { createHash } from 'node:crypto';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { migrateDatabase } from '../../src/db/migrate.js';
import { startTestApp } from '../helpers/app.js';
import { createTestDatabase, migrateAsRelease } from '../helpers/db.js';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

describe('upgrade to the tokens table', () => {
  it('should keep the previous release’s operator and session tokens working as their "default" tokens', async () => {
    const target = await createTestDatabase({ empty: true });
    const url = target.url;
    try {
      // The previous release: migrations up to 0014.
      await migrateAsRelease(url, 14);
      const db = postgres(url, { max: 1, onnotice: () => {} });
      const opToken = 'coord_old_operator',
        liveToken = 'coord_old_session',
        stoppedToken = 'coord_old_stopped';
      await db`insert into users (id, name, token_hash) values ('u-old', 'admin', ${sha(opToken)})`;
      await db`insert into sessions (id, name, root_id, created_by, token_hash) values ('s-live', 'live', 's-live', 'u-old', ${sha(liveToken)})`;
      await db`insert into sessions (id, name, root_id, created_by, token_hash, status) values ('s-gone', 'gone', 's-gone', 'u-old', ${sha(stoppedToken)}, 'stopped')`;
      await db.end();

      await migrateDatabase(url); // this release
      const t = await startTestApp({ dbUrl: url });
      try {
        const op = t.admin.as(opToken);
        expect((await op.get('/v1/me')).body).toMatchObject({ kind: 'user', id: 'u-old', token: { name: 'default' } });
        expect((await op.as(liveToken).get('/v1/me')).body).toMatchObject({ kind: 'session', id: 's-live', token: { name: 'default' } });
        expect((await op.as(stoppedToken).get('/v1/me')).status).toBe(401);
        const mine = (await op.get('/v1/tokens')).body.tokens;
        expect(mine).toMatchObject([{ name: 'default', principal: { kind: 'user', id: 'u-old' }, createdBy: 'u-old', state: 'active', current: true }]);
        const theirs = (await op.get('/v1/tokens?principal=s-live')).body.tokens;
        expect(theirs).toMatchObject([{ name: 'default', principal: { kind: 'session', id: 's-live' }, createdBy: 'u-old' }]);
        // And the carried-over tokens are managed like any other.
        expect((await op.del(`/v1/tokens/${theirs[0].id}`)).status).toBe(200);
        expect((await op.as(liveToken).get('/v1/me')).status).toBe(401);
      } finally {
        await t.app.close();
        await t.sql.end({ timeout: 5 });
      }
    } finally {
      await target.drop();
    }
  });
});
