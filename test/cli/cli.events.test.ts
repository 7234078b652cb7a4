/**
 * `coord events follow` as a process: it prints events written by other processes, and
 * when its server restarts it reconnects by itself and resumes after the last event it printed,
 * with nothing missed and nothing twice, including events written (through another replica)
 * while its server was down.
 */
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { testConfig } from '../../src/config.js';
import { openDb } from '../../src/db/client.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { cleanEnv, runCoord, spawnCoord, tempHome } from './helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ eventPollMs: 200 });
});
afterAll(async () => t?.close());

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

/** A replica of the app on `t`'s database, listening on a port the test chooses (so it can come back on it). */
async function replicaOn(port: number) {
  const sql = openDb(t.dbUrl, { max: 5, lockTimeoutMs: 5000 });
  const app = await buildApp({ sql, config: testConfig(), eventPollMs: 200 });
  await app.listen({ port, host: '127.0.0.1' });
  return {
    async close() {
      await app.close();
      await sql.end({ timeout: 5 });
    },
  };
}

interface Line {
  seq: number;
  event: string;
  data: { id: string };
}
const parse = (out: string): Line[] =>
  out
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Line);

describe('coord events follow', () => {
  it('should print events written by another process and resume after its server restarts', async () => {
    const home = tempHome();
    const a = await t.session({ name: 'watched' });
    const topic = `todo:session:${a.id}`;
    const port = await freePort();
    let server = await replicaOn(port);
    const follower = spawnCoord(['events', 'follow', topic, '--after', '0', '--json'], {
      env: cleanEnv(home, { COORD_URL: `http://127.0.0.1:${port}`, COORD_TOKEN: a.token }),
    });
    try {
      // 1. Another process (a second coord) adds an item through the other replica (t).
      const added = await runCoord(['todo', 'add', 'first'], { env: cleanEnv(home, { COORD_URL: t.base, COORD_TOKEN: a.token }) });
      expect(added.code).toBe(0);
      const first = JSON.parse(added.stdout).item.id as string;
      await follower.waitFor((out) => parse(out).some((e) => e.data.id === first));

      // 2. The follower's server goes away; meanwhile three more changes land through the other replica.
      await server.close();
      const second = (await a.client.post('/v1/todos', { title: 'second' })).body.item.id as string;
      await a.client.post(`/v1/todos/${first}/claim`);
      await a.client.post(`/v1/todos/${first}/done`);
      await new Promise((r) => setTimeout(r, 300));

      // 3. The server comes back on the same port: the follower reconnects with Last-Event-ID.
      server = await replicaOn(port);
      await follower.waitFor((out) => parse(out).some((e) => e.event === 'done'), 20_000);
      const third = (await a.client.post('/v1/todos', { title: 'third' })).body.item.id as string;
      await follower.waitFor((out) => parse(out).some((e) => e.data.id === third));

      const got = parse(follower.out());
      expect(got.map((e) => `${e.event} ${e.data.id}`)).toEqual([`added ${first}`, `added ${second}`, `claimed ${first}`, `done ${first}`, `added ${third}`]);
      const seqs = got.map((e) => e.seq);
      expect([...seqs].sort((x, y) => x - y)).toEqual(seqs);
      expect(new Set(seqs).size).toBe(seqs.length);
      // The log agrees with what was printed.
      const log = (await a.client.get(`/v1/events/log?topic=${encodeURIComponent(topic)}&after=0`)).body.events as { seq: number }[];
      expect(log.map((e) => e.seq)).toEqual(seqs);
      expect(follower.err()).toMatch(/reconnecting in \d+ ms/);

      // 4. Ctrl-C ends it cleanly.
      follower.child.kill('SIGINT');
      expect(await follower.exited).toBe(0);
    } finally {
      follower.child.kill('SIGKILL');
      await server.close().catch(() => {});
    }
  });

  it('should stop after --limit events and print one line per event for people', async () => {
    const a = await t.session();
    const topic = `session:${a.id}`;
    const item = (await a.client.post('/v1/todos', { title: 'x' })).body.item;
    await a.client.post(`/v1/todos/${item.id}/claim`);
    const r = await runCoord(['events', 'follow', topic, '--after', '0', '--limit', '2', '--human'], {
      env: cleanEnv(tempHome(), { COORD_URL: t.base, COORD_TOKEN: a.token }),
    });
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(new RegExp(`^#\\d+ added ${item.id} status=todo rev=1$`));
    expect(lines[1]).toMatch(new RegExp(`^#\\d+ claimed ${item.id} status=in-progress owner=${a.id} rev=2$`));
  });

  it('should exit 1 without retrying when the topic is not readable', async () => {
    const a = await t.session();
    const b = await t.session();
    const r = await runCoord(['events', 'follow', `session:${b.id}`], { env: cleanEnv(tempHome(), { COORD_URL: t.base, COORD_TOKEN: a.token }) });
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stderr).error.code).toBe('not_found');
  });

  it('should print a page of the log', async () => {
    const a = await t.session();
    await a.client.post('/v1/todos', { title: 'x' });
    const r = await runCoord(['events', 'log', `session:${a.id}`, '--json'], { env: cleanEnv(tempHome(), { COORD_URL: t.base, COORD_TOKEN: a.token }) });
    expect(r.code).toBe(0);
    const page = JSON.parse(r.stdout);
    expect(page.events.map((e: { event: string }) => e.event)).toEqual(['added']);
    expect(page.resync).toBe(false);
  });

  it('should print only one item’s events with --subject', async () => {
    const a = await t.session();
    const one = (await a.client.post('/v1/todos', { title: 'one' })).body.item;
    await a.client.post('/v1/todos', { title: 'other' });
    await a.client.post(`/v1/todos/${one.id}/claim`);
    const r = await runCoord(['events', 'log', `session:${a.id}`, '--subject', one.id, '--json'], {
      env: cleanEnv(tempHome(), { COORD_URL: t.base, COORD_TOKEN: a.token }),
    });
    expect(r.code).toBe(0);
    const page = JSON.parse(r.stdout);
    expect(page.events.map((e: { event: string; data: { id: string } }) => [e.event, e.data.id])).toEqual([
      ['added', one.id],
      ['claimed', one.id],
    ]);
  });
});
