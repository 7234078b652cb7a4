/**
 * CLI configuration: `coord login` checks the token and writes the config file with mode
 * 0600; precedence is flags, then COORD_URL/COORD_TOKEN, then the file; `whoami` says which won.
 * Also: every command's help lists examples.
 */
import { readFileSync, statSync, writeFileSync, chmodSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildProgram } from '../../cli/main.js';
import type { Command } from 'commander';
import { configPath, resolveConfig } from '../../cli/config.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { cleanEnv, runCoord, runInProcess, tempHome } from './helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

describe('coord login and configuration', () => {
  it('should check the token, then save URL and token with mode 0600', async () => {
    const home = tempHome();
    const env = cleanEnv(home);
    const r = await runCoord(['login', '--url', t.base, '--token', t.admin.token!], { env });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Logged in to http:\/\/127\.0\.0\.1:\d+ as user test-admin \(u-[0-9a-f]{16}\); saved to .*config\.json \(mode 0600\)\n$/);
    const file = path.join(home, '.config', 'coord', 'config.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ url: t.base, token: t.admin.token });
    // Now a bare command works from the saved file.
    const who = await runCoord(['whoami'], { env });
    expect(who.stdout).toContain('user test-admin');
    expect(who.stdout).toContain(`url   ${t.base} (from file)`);
  });

  it('should read the token from stdin when piped, and refuse a token the server does not know without saving it', async () => {
    const home = tempHome();
    const env = cleanEnv(home);
    const piped = await runCoord(['login', '--url', t.base], { env, input: `${t.admin.token}\n` });
    expect(piped.code).toBe(0);
    const home2 = tempHome();
    const bad = await runCoord(['login', '--url', t.base, '--token', 'coord_nope', '--human'], { env: cleanEnv(home2) });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('(unauthorized)');
    expect(() => statSync(path.join(home2, '.config', 'coord', 'config.json'))).toThrow();
  });

  it('should prefer flags over the environment and the environment over the file (an agent’s COORD_TOKEN is never overridden by a saved login)', () => {
    const home = tempHome();
    const file = path.join(home, 'coord.json');
    writeFileSync(file, JSON.stringify({ url: 'http://file:1', token: 'file-token' }), { mode: 0o600 });
    const env = { HOME: home, COORD_CLI_CONFIG: file, COORD_URL: 'http://env:2/', COORD_TOKEN: 'env-token' };
    expect(resolveConfig({ url: 'http://flag:3', token: 'flag-token' }, env)).toMatchObject({
      url: 'http://flag:3',
      token: 'flag-token',
      source: { url: 'flag', token: 'flag' },
      warnings: [],
    });
    expect(resolveConfig({}, env)).toMatchObject({ url: 'http://env:2', token: 'env-token', source: { url: 'env', token: 'env' }, warnings: [] });
    // Only the token in the environment: the saved URL still names the server.
    expect(resolveConfig({}, { HOME: home, COORD_CLI_CONFIG: file, COORD_TOKEN: 'env-token' })).toMatchObject({
      url: 'http://file:1',
      token: 'env-token',
      source: { url: 'file', token: 'env' },
    });
    expect(resolveConfig({}, { HOME: home, COORD_CLI_CONFIG: file })).toMatchObject({
      url: 'http://file:1',
      token: 'file-token',
      source: { url: 'file', token: 'file' },
    });
    expect(resolveConfig({}, { HOME: home })).toMatchObject({ url: 'http://127.0.0.1:3000', token: undefined, source: { url: 'default', token: 'none' } });
  });

  it('should warn about a config file other users can read', () => {
    const home = tempHome();
    const file = configPath({ HOME: home });
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, JSON.stringify({ token: 'x' }));
    chmodSync(file, 0o644);
    expect(resolveConfig({}, { HOME: home }).warnings[0]).toContain('chmod 600');
  });

  it('should remove the saved file on logout', async () => {
    const home = tempHome();
    const file = path.join(home, 'c.json');
    writeFileSync(file, JSON.stringify({ url: t.base, token: t.admin.token }), { mode: 0o600 });
    const r = await runInProcess(['logout'], { HOME: home, COORD_CLI_CONFIG: file });
    expect(r).toMatchObject({ code: 0, stdout: `Removed ${file}\n` });
    expect(() => statSync(file)).toThrow();
  });
});

describe('help', () => {
  /** Every command path in the tree, e.g. ['todo', 'add']. */
  function paths(cmd: Command, prefix: string[] = []): string[][] {
    return cmd.commands.filter((c) => c.name() !== 'help').flatMap((c) => [[...prefix, c.name()], ...paths(c, [...prefix, c.name()])]);
  }

  it('should list examples in the help of every command', async () => {
    const program = buildProgram({ env: {}, stdout: process.stdout, stderr: process.stderr }, () => {}, new AbortController().signal);
    const all = paths(program);
    expect(all.map((p) => p.join(' '))).toEqual(expect.arrayContaining(['todo add', 'todo next', 'session create', 'events follow', 'login']));
    const missing: string[] = [];
    for (const p of all) {
      const r = await runInProcess([...p, '--help']);
      expect(r.code, p.join(' ')).toBe(0);
      if (!r.stdout.includes('Examples:')) missing.push(p.join(' '));
    }
    expect(missing).toEqual([]);
  });
});
