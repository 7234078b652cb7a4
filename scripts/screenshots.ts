/**
 * The README's dashboard screenshots (docs/img/dashboard-*.png): starts a throwaway Coord (embedded
 * Postgres in a temp folder), fills it with a small fleet's work through the public API, and
 * photographs each main view at 1280×800 in Debian's Chromium.
 *
 *   npx tsx scripts/screenshots.ts
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { ensureBuilt } from './build.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = path.join(root, 'docs/img');
const TOKEN = 'screenshots-admin-token-0123456789';

const port = await new Promise<number>((resolve) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const a = s.address();
    s.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
  });
});
const data = mkdtempSync(path.join(tmpdir(), 'coord-shots-'));
const server = spawn(process.execPath, ['--enable-source-maps', (await ensureBuilt()).server], {
  cwd: root,
  env: {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    PORT: String(port),
    HOST: '127.0.0.1',
    COORD_DATA_DIR: data,
    COORD_ADMIN_TOKEN: TOKEN,
    COORD_LOG_LEVEL: 'warn',
  },
  stdio: 'inherit',
});
const base = `http://127.0.0.1:${port}`;

async function api(token: string, method: string, url: string, body?: unknown) {
  const r = await fetch(base + url, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const j = await r.json();
  if (!r.ok) throw new Error(`${method} ${url}: ${r.status} ${JSON.stringify(j)}`);
  return j;
}

try {
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${base}/readyz`)).ok) break;
    } catch {}
    if (i > 300) throw new Error('server did not start');
    await new Promise((r) => setTimeout(r, 200));
  }
  // A lead agent with two workers and a small plan.
  const lead = await api(TOKEN, 'POST', '/v1/sessions', { name: 'lead' });
  const L = lead.token;
  const w1 = await api(L, 'POST', '/v1/sessions', { name: 'worker-api' });
  const w2 = await api(L, 'POST', '/v1/sessions', { name: 'worker-ui' });
  const bulk = await api(L, 'POST', '/v1/todos/bulk', {
    items: [
      { ref: 'schema', title: 'Design the schema', tags: ['backend'], priority: 2 },
      { ref: 'api', title: 'Build the API', tags: ['backend'], dependsOn: ['schema'], priority: 1 },
      { ref: 'ui', title: 'Build the UI', tags: ['frontend'] },
      { ref: 'docs', title: 'Write the docs', tags: ['docs'], dependsOn: ['api', 'ui'] },
      { ref: 'release', title: 'Release', dependsOn: ['docs'] },
      { ref: 'bench', title: 'Benchmark the claim', tags: ['perf'] },
    ],
  });
  const id = (ref: string) => bulk.refs[ref] as string;
  await api(w1.token, 'POST', `/v1/todos/${id('schema')}/claim`);
  await api(w1.token, 'POST', `/v1/todos/${id('schema')}/done`, { result: { tables: 4 } });
  await api(w1.token, 'POST', `/v1/todos/${id('api')}/claim`);
  await api(w2.token, 'POST', `/v1/todos/${id('ui')}/claim`);
  await api(L, 'POST', `/v1/todos/${id('bench')}/claim`);
  await api(L, 'POST', `/v1/todos/${id('bench')}/block`, { note: 'needs a quiet machine' });
  await api(L, 'PUT', `/v1/todos/${id('docs')}/assignee`, { assignee: w2.session.id });
  // A worker that left with an item reserved for it (for the Attention view).
  const w3 = await api(L, 'POST', '/v1/sessions', { name: 'worker-release' });
  await api(L, 'PUT', `/v1/todos/${id('release')}/assignee`, { assignee: w3.session.id });
  await api(L, 'POST', `/v1/sessions/${w3.session.id}/stop`);
  // A scenario, one member done.
  const sc = await api(TOKEN, 'POST', '/v1/scenarios', {
    name: 'strath',
    members: [
      { name: 'api', task: 'Build the API' },
      { name: 'ui', task: 'Build the UI' },
      { name: 'ship', task: 'Ship it', dependsOn: ['api', 'ui'], requiresResult: true },
    ],
  });
  const apiSeed = sc.scenario.members.find((m: { name: string }) => m.name === 'api').seedId;
  await api(sc.tokens.api, 'POST', `/v1/todos/${apiSeed}/claim`);
  await api(sc.tokens.api, 'POST', `/v1/todos/${apiSeed}/done`);
  // A task graph whose plan defers one subtask on a write-intent conflict.
  for (const a of ['codex', 'agent-backend', 'agent-frontend', 'agent-docs']) await api(TOKEN, 'POST', '/v1/agents', { id: a });
  const graph = JSON.parse(readFileSync(path.join(root, 'examples/task-graph.json'), 'utf8'));
  for (const s of graph.subtasks) if (s.id === 'frontend') s.dependsOn = [];
  const intentMap = {
    schemaVersion: 1,
    parentTaskId: graph.parentTask.id,
    scopePolicy: 'warn',
    subtasks: [
      { id: 'backend', writeIntent: ['src/**'] },
      { id: 'frontend', writeIntent: ['src/web/**'] },
      { id: 'docs', writeIntent: ['docs/**'] },
    ],
  };
  await api(TOKEN, 'POST', '/v1/graphs', { graph, intentMap });

  mkdirSync(out, { recursive: true });
  const browser = await chromium.launch({
    executablePath: process.env.COORD_CHROMIUM ?? '/usr/bin/chromium',
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.goto(`${base}/ui/`);
  await page.getByLabel('Token').fill(TOKEN);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('header nav').waitFor();
  const views: [string, string, string][] = [
    ['attention', '#/attention', 'tr[data-kind]'],
    ['scopes', '#/', 'li.card'],
    ['scope', `#/scope/${encodeURIComponent(lead.session.scope)}`, 'tr[data-id]'],
    ['sessions', '#/sessions', 'tr[data-id]'],
    ['scenario', '#/scenario/strath', 'tr[data-member]'],
    ['graph', `#/graph/${graph.parentTask.id}`, 'svg.graph-dag'],
  ];
  for (const [name, hash, ready] of views) {
    await page.evaluate((h) => (location.hash = h), hash);
    await page.locator(ready).first().waitFor();
    await page.waitForTimeout(700);
    await page.screenshot({ path: path.join(out, `dashboard-${name}.png`) });
    console.log(`docs/img/dashboard-${name}.png`);
  }
  await browser.close();
} finally {
  server.kill('SIGTERM');
  await new Promise((r) => server.once('exit', r));
  rmSync(data, { recursive: true, force: true });
}
