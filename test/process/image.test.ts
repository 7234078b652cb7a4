/**
 * The container image, as far as it can be checked without a Docker engine (none runs in CI):
 * the runtime stage's files alone (package.json, dist/, migrations/, bin/, ui/dist/ and
 * scripts/build.mjs, copied into a folder with no sources) serve: the compiled server reads
 * nothing from src/ at run time, and the compiled CLI runs there. And the Dockerfile and
 * docker-compose.yml say what the README promises (compiled, Node 24, non-root, liveness probe,
 * restart policy, Postgres healthy first).
 */
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { build } from '../../scripts/build.mjs';
import { freePort } from '../../src/db/embedded.js';
import { createTestDatabase } from '../helpers/db.js';
import { REPO_ROOT, runProcess } from '../helpers/process.js';

const dockerfile = readFileSync(path.join(REPO_ROOT, 'Dockerfile'), 'utf8');
const compose = readFileSync(path.join(REPO_ROOT, 'docker-compose.yml'), 'utf8');
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('the container image', () => {
  it('should run the compiled server on Node 24 as a non-root user, probed on /healthz, and compose restarts it after Postgres is healthy', () => {
    const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    expect(dockerfile).toMatch(/^FROM node:24-\S+ AS build$/m);
    expect(runtime).toMatch(/^FROM node:24-/m);
    expect(runtime).toMatch(/^USER node$/m);
    expect(runtime).toMatch(/npm ci --omit=dev/);
    expect(runtime).toContain('CMD ["node", "--enable-source-maps", "dist/node/server.mjs"]');
    expect(runtime).toMatch(/HEALTHCHECK[\s\S]*\/healthz/);
    expect(runtime).not.toMatch(/tsx|COPY src/);
    for (const service of ['coord', 'coord-replica']) {
      const block = compose.slice(compose.indexOf(`\n  ${service}:`) + 1).split(/\n {2}\S/)[0];
      expect(block, service).toContain('restart: unless-stopped');
      expect(block, service).toMatch(/depends_on:\s+postgres:\s+condition: service_healthy/);
    }
  });

  it('should serve from the runtime stage’s files alone, without the sources', async () => {
    const app = mkdtempSync(path.join(os.tmpdir(), 'coord-image-'));
    dirs.push(app);
    // What the runtime stage copies (Dockerfile), with this checkout's node_modules standing in for
    // the production install.
    for (const f of ['package.json', 'migrations', 'bin', 'ui/dist', 'scripts/build.mjs'])
      cpSync(path.join(REPO_ROOT, f), path.join(app, f), { recursive: true });
    await build(path.join(app, 'dist', 'node'));
    mkdirSync(path.join(app, 'sdk'));
    symlinkSync(path.join(REPO_ROOT, 'node_modules'), path.join(app, 'node_modules'));
    const db = await createTestDatabase();
    const port = await freePort();
    const child = spawn(process.execPath, ['--enable-source-maps', 'dist/node/server.mjs'], {
      cwd: app,
      env: { PATH: process.env.PATH, HOME: app, HOST: '127.0.0.1', PORT: String(port), DATABASE_URL: db.url, COORD_LOG_LEVEL: 'warn', COORD_SWEEPS: 'off' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout!.on('data', (d) => (output += d));
    child.stderr!.on('data', (d) => (output += d));
    const exited = new Promise((r) => child.on('exit', r));
    try {
      let ready = false;
      for (let i = 0; i < 300 && !ready; i++) {
        ready = await fetch(`http://127.0.0.1:${port}/readyz`).then(
          (r) => r.ok,
          () => false,
        );
        if (!ready) await new Promise((r) => setTimeout(r, 100));
      }
      expect(ready, output).toBe(true);
      expect((await fetch(`http://127.0.0.1:${port}/ui/`)).status).toBe(200);
      const cli = await runProcess(process.execPath, [path.join(app, 'bin', 'coord.mjs'), '--version'], {
        cwd: app,
        env: { PATH: process.env.PATH ?? '', HOME: app },
      });
      expect([cli.code, cli.stdout.trim()], cli.stderr).toEqual([0, expect.stringMatching(/^\d+\.\d+\.\d+/)]);
    } finally {
      child.kill('SIGTERM');
      await exited;
      await db.drop();
    }
  });
});
