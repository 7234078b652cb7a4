/**
 * What a person sees while the runner works: `coord graph advance` prints a progress line on
 * stderr as each subtask starts and ends (read here while the command is still running), the
 * result table shows a success's scope-drift warning, the stop names the commands that act on
 * it, `--quiet` silences the progress, and `--json` to a pipe is one compact line.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { spawnCoord } from '../cli/helpers.js';
import { committingScript, coordAs, userRepo } from './runner.helpers.js';

let t: TestApp;
let owner: Awaited<ReturnType<TestApp['session']>>;
const dirs: string[] = [];
const gates = mkdtempSync(path.join(os.tmpdir(), 'coord-gate-'));

const AGENTS = {
  // Waits until the test opens its gate (a file named after the subtask), then commits.
  gated: {
    adapter: 'shell',
    command: `while [ ! -e "${gates}/$COORD_SUBTASK_ID" ]; do sleep 0.1; done; ${committingScript(['src/$COORD_SUBTASK_ID/impl.txt'])}`,
  },
  drifts: { adapter: 'shell', command: committingScript(['src/$COORD_SUBTASK_ID/impl.txt', 'outside/leak.txt']) },
};

beforeAll(async () => {
  t = await startTestApp();
  for (const id of ['planner', 'reviewer', ...Object.keys(AGENTS)]) await t.admin.post('/v1/agents', { id });
  owner = await t.session({ name: 'progress-owner' });
});
afterAll(async () => {
  for (const d of [...dirs, gates]) rmSync(d, { recursive: true, force: true });
  await t?.close();
});

let seq = 0;
async function graphOf(subtasks: Record<string, keyof typeof AGENTS>) {
  const repo = userRepo(AGENTS);
  dirs.push(repo);
  const id = `task-progress-${++seq}`;
  const graph = {
    schemaVersion: 1,
    parentTask: { id, title: `Progress ${seq}`, planner: 'planner', reviewer: 'reviewer' },
    subtasks: Object.entries(subtasks).map(([sid, impl]) => ({ id: sid, implementer: impl, spec: `Do ${sid}.`, dependsOn: [] })),
    maxConcurrency: 4,
  };
  const intentMap = {
    schemaVersion: 1,
    parentTaskId: id,
    scopePolicy: 'warn',
    subtasks: Object.keys(subtasks).map((sid) => ({ id: sid, writeIntent: [`src/${sid}/**`] })),
  };
  expect((await owner.client.post('/v1/graphs', { graph, intentMap })).status).toBe(201);
  return { repo, id, cli: coordAs(t, owner.token) };
}

async function until(pred: () => boolean, what: () => string, ms = 20_000) {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out; ${what()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('runner progress', () => {
  it('prints a line per subtask state change while advance runs, then the table with drift warnings and the next commands', async () => {
    const { repo, id, cli } = await graphOf({ slow: 'gated', leak: 'drifts' });
    const p = spawnCoord(['graph', 'advance', id, '--max-waves', '2', '--root', repo, '--human'], { env: cli.env });
    // Before the command ends: the wave, both starts, and the drifting subtask's end with its warning.
    await until(
      () => /slow #1 RUNNING/.test(p.err()) && /leak #1 SUCCEEDED after [\d.]+s \w{12} \(warning: /.test(p.err()),
      () => `stderr:\n${p.err()}`,
    );
    expect(p.child.exitCode).toBeNull();
    expect(p.err()).toMatch(new RegExp(`^\\[ *[\\d.]+s\\] ${id}: wave 1 claimed: leak, slow$`, 'm'));
    expect(existsSync(path.join(gates, 'slow'))).toBe(false);
    writeFileSync(path.join(gates, 'slow'), '');
    expect(await p.exited, p.err()).toBe(0);
    expect(p.err()).toMatch(/slow #1 SUCCEEDED after [\d.]+s \w{12}$/m);
    const out = p.out();
    expect(out).toContain(`Advanced ${id}: 1 wave(s), stop COMPLETED`);
    expect(out).toMatch(/leak +SUCCEEDED .* warning: /);
    expect(out).toContain(`Next:\n  coord graph integrate ${id}\n`);
    // --quiet: no progress; --json to a pipe: one compact line, with the next commands.
    const quiet = await cli.run(['graph', 'advance', id, '--max-waves', '1', '--root', repo, '--quiet', '--json']);
    expect(quiet.stderr).toBe('');
    expect(quiet.stdout.trim().split('\n')).toHaveLength(1);
    expect(JSON.parse(quiet.stdout)).toMatchObject({
      stop: { code: 'COMPLETED' },
      next: [
        `coord graph integrate ${id}`,
        `coord graph review ${id} --decision REVIEW_APPROVED`,
        `coord graph review ${id} --decision CHANGES_REQUESTED --feedback "<what to change>"`,
      ],
    });
  });
});
