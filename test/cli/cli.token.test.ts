/**
 * `coord token list|create|rotate|revoke` (issue 21), in process against a real app: the secret
 * is printed once, works, is replaced by a rotation and refused after a revocation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { runInProcess } from './helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

describe('coord token', () => {
  it('should create, list, rotate and revoke a session’s token', async () => {
    const s = await t.session({ name: 'cli-tokens' });
    const env = { COORD_URL: t.base, COORD_TOKEN: s.token };
    const created = await runInProcess(['token', 'create', 'ci', '--expires-in', '30d', '-q'], env);
    expect(created.code, created.stderr).toBe(0);
    const secret = created.stdout.trim();
    expect(secret).toMatch(/^coord_/);
    expect((await s.client.as(secret).get('/v1/me')).body).toMatchObject({ id: s.id, token: { name: 'ci' } });

    const human = await runInProcess(['token', 'list', '--human'], env);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout.split('\n')[0]).toMatch(/^ID +NAME +STATE +OWNER +EXPIRES +ROTATED +CREATED/);
    expect(human.stdout).toMatch(/ default +active +session .*\(this one\)$/m);
    expect(human.stdout).not.toContain(secret);
    const listed = JSON.parse((await runInProcess(['token', 'list'], env)).stdout).tokens;
    const ci = listed.find((k: { name: string }) => k.name === 'ci');
    expect(ci.expiresAt).not.toBeNull();

    const rotated = await runInProcess(['token', 'rotate', ci.id, '--no-expiry', '--human'], env);
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(rotated.stdout).toMatch(new RegExp(`^Rotated token ${ci.id} \\(ci\\), no expiry$`, 'm'));
    const next = /Secret \(shown once\): (\S+)/.exec(rotated.stdout)![1];
    expect((await s.client.as(secret).get('/v1/me')).status).toBe(401);
    expect((await s.client.as(next).get('/v1/me')).status).toBe(200);

    const revoked = await runInProcess(['token', 'revoke', ci.id, '--human'], env);
    expect(revoked.stdout.trim()).toBe(`Revoked token ${ci.id} (ci) of session ${s.id}`);
    expect((await s.client.as(next).get('/v1/me')).status).toBe(401);
    const all = JSON.parse((await runInProcess(['token', 'list', '--all'], env)).stdout).tokens;
    expect(all.map((k: { name: string; state: string }) => `${k.name}:${k.state}`)).toEqual(['ci:revoked', 'default:active']);

    for (const conflicting of [['token', 'rotate', ci.id, '--no-expiry', '--expires-in', '1h'], ['token', 'list', '--operators', '--principal', s.id]]) {
      const r = await runInProcess(conflicting, env);
      expect(r.code, conflicting.join(' ')).toBe(2);
      expect(r.stderr).toContain('cannot be used with');
    }
    const missing = await runInProcess(['token', 'revoke', 'tk-nope'], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('token_not_found');
  });
});
