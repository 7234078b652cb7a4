/**
 * `coord token list|create|rotate|revoke` and `coord audit`, in process against a real app: the secret
 * is printed once, works, is replaced by a rotation and refused after a revocation.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { cleanEnv, runInProcess, tempHome } from './helpers.js';

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

    for (const conflicting of [
      ['token', 'rotate', ci.id, '--no-expiry', '--expires-in', '1h'],
      ['token', 'list', '--operators', '--principal', s.id],
    ]) {
      const r = await runInProcess(conflicting, env);
      expect(r.code, conflicting.join(' ')).toBe(2);
      expect(r.stderr).toContain('cannot be used with');
    }
    const missing = await runInProcess(['token', 'revoke', 'tk-nope'], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('token_not_found');
  });
  it('should save the new secret when rotating the token coord login stored, and warn when it came from COORD_TOKEN', async () => {
    const s = await t.session({ name: 'cli-rotate-self' });
    const home = tempHome();
    const env = cleanEnv(home);
    expect((await runInProcess(['login', '--url', t.base, '--token', s.token], env)).code).toBe(0);
    const file = path.join(home, '.config', 'coord', 'config.json');
    const current = JSON.parse((await runInProcess(['token', 'list', '--json'], env)).stdout).tokens.find((k: { current: boolean }) => k.current);
    const rotated = await runInProcess(['token', 'rotate', current.id, '-q'], env);
    expect(rotated.code, rotated.stderr).toBe(0);
    const secret = rotated.stdout.trim();
    expect(rotated.stderr).toContain(`saved the new secret in ${file}`);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ url: t.base, token: secret });
    expect((await runInProcess(['whoami'], env)).code).toBe(0); // the saved token still works

    const fromEnv = await runInProcess(['token', 'rotate', current.id, '-q'], {
      COORD_URL: t.base,
      COORD_TOKEN: secret,
      COORD_CLI_CONFIG: path.join(home, 'none.json'),
    });
    expect(fromEnv.code, fromEnv.stderr).toBe(0);
    expect(fromEnv.stderr).toContain('warning: the token you called with (COORD_TOKEN) was this one and is now refused');
    expect(JSON.parse(readFileSync(file, 'utf8')).token).toBe(secret); // untouched: it was not the source
  });
});

describe('coord audit', () => {
  it('should print who changed an item, newest first, page by page or all at once', async () => {
    const s = await t.session({ name: 'cli-audit' });
    const item = (await s.client.post('/v1/todos', { title: 'audited by the CLI' })).body.item;
    await s.client.post(`/v1/todos/${item.id}/claim`);
    const env = { COORD_URL: t.base, COORD_TOKEN: t.admin.token! };
    const human = await runInProcess(['audit', '--subject', item.id, '--human'], env);
    expect(human.code, human.stderr).toBe(0);
    const lines = human.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^SEQ +AT +ACTOR +TOKEN +EVENT +SUBJECT +TOPIC/);
    expect(lines[1]).toMatch(new RegExp(`session ${s.id} +default +claimed +${item.id} `));
    expect(lines[2]).toMatch(/ added /);
    const paged = await runInProcess(['audit', '--subject', item.id, '--limit', '1', '--human'], env);
    expect(paged.stdout).toMatch(/\(more: coord audit … --cursor \S+, or --all\)/);
    const all = JSON.parse((await runInProcess(['audit', '--subject', item.id, '--limit', '1', '--all'], env)).stdout);
    expect(all.entries.map((e: { event: string }) => e.event)).toEqual(['claimed', 'added']);
    const bad = await runInProcess(['audit', '--limit', '0'], env);
    expect(bad.code).toBe(2);
    const refused = await runInProcess(['audit'], { COORD_URL: t.base, COORD_TOKEN: s.token });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('operators');
  });
});
