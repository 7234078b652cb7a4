/**
 * The runner's negative controls (seed 002 "Focused negative controls"), each on its own real repository and graph: a failing implementer, strict
 * scope drift, a cherry-pick conflict, a missing executable, a symlinked worktree path, a stale
 * or dirty review, a subtask stopped while running, and a runner killed mid-wave then recover +
 * resume + run.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { spawnCoord } from '../cli/helpers.js';
import { readRunRecord } from '../../cli/runner/execute.js';
import { checkoutFingerprint, committingScript, coordAs, git, until, userRepo } from './runner.helpers.js';

let t: TestApp;
let owner: Awaited<ReturnType<TestApp['session']>>;
const repos: string[] = [];
let seq = 0;

const AGENTS = {
  ok: { adapter: 'shell', command: committingScript(['src/$COORD_SUBTASK_ID/impl.txt']) },
  fails: { adapter: 'shell', command: 'echo "about to fail" && exit 3' },
  nocommit: { adapter: 'shell', command: 'echo "did nothing"' },
  drifts: { adapter: 'shell', command: committingScript(['src/$COORD_SUBTASK_ID/impl.txt', 'outside/leak.txt']) },
  shared: {
    adapter: 'shell',
    command: `printf '%s\\n' "$COORD_SUBTASK_ID was here" > src/shared.txt && git add -A && git commit -qm "$COORD_SUBTASK_ID: shared"`,
  },
  ghost: { adapter: 'exec', command: 'coord-no-such-implementer' },
  sleeper: {
    adapter: 'shell',
    command: `if [ "$COORD_ATTEMPT" = 1 ]; then echo started; sleep 60; fi; ${committingScript(['src/$COORD_SUBTASK_ID/impl.txt'])}`,
  },
};

beforeAll(async () => {
  t = await startTestApp();
  for (const id of ['planner', 'reviewer', ...Object.keys(AGENTS)]) await t.admin.post('/v1/agents', { id });
  owner = await t.session({ name: 'controls-owner' });
});
afterAll(async () => {
  for (const r of repos) rmSync(r, { recursive: true, force: true });
  await t?.close();
});

/** A repository and a graph of `subtasks` (id → [implementer, deps, writeIntent?]) under `policy`. */
async function setup(subtasks: Record<string, [keyof typeof AGENTS, string[], string[]?]>, policy: 'strict' | 'warn' | null = 'strict', maxConcurrency = 2) {
  const repo = userRepo(AGENTS);
  repos.push(repo);
  const id = `task-control-${++seq}`;
  const graph = {
    schemaVersion: 1,
    parentTask: { id, title: `Control ${seq}`, planner: 'planner', reviewer: 'reviewer' },
    subtasks: Object.entries(subtasks).map(([sid, [impl, deps]]) => ({ id: sid, implementer: impl, spec: `Do ${sid}.`, dependsOn: deps })),
    maxConcurrency,
  };
  const intentMap = policy && {
    schemaVersion: 1,
    parentTaskId: id,
    scopePolicy: policy,
    subtasks: Object.entries(subtasks).map(([sid, [, , intent]]) => ({ id: sid, writeIntent: intent ?? [`src/${sid}/**`] })),
  };
  const r = await owner.client.post('/v1/graphs', intentMap ? { graph, intentMap } : graph);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return { repo, id, cli: coordAs(t, owner.token), fingerprint: checkoutFingerprint(repo) };
}

const status = async (id: string) => (await owner.client.get(`/v1/graphs/${id}`)).body.graph;
const stateOf = async (id: string, sid: string) => (await status(id)).subtasks.find((s: any) => s.subtaskId === sid);

describe('negative controls', () => {
  it('a failing implementer: WAVE_FAILED with AGENT_EXIT_NONZERO, its sibling untouched, no retry on a repeat', async () => {
    const { repo, id, cli, fingerprint } = await setup({ bad: ['fails', []], good: ['ok', []], after: ['ok', ['bad']] });
    const r = await cli.json(['graph', 'advance', id, '--max-waves', '4', '--root', repo]);
    expect(r.body, r.stdout.slice(0, 3000) + r.stderr).toBeDefined();
    expect(r.body.stop).toMatchObject({ code: 'WAVE_FAILED', subtaskIds: ['bad'] });
    const bad = await stateOf(id, 'bad');
    expect(bad).toMatchObject({ state: 'FAILED', lastError: { code: 'AGENT_EXIT_NONZERO', exitCode: 3 } });
    expect((await stateOf(id, 'good')).state).toBe('SUCCEEDED');
    expect((await stateOf(id, 'after')).state).toBe('BLOCKED');
    const log = r.body.waves[0].outcomes.find((o: any) => o.subtaskId === 'bad').log;
    expect(log).toBe(`.coord/logs/${id}/bad.1.log`);
    const again = await cli.json(['graph', 'advance', id, '--max-waves', '4', '--root', repo]);
    expect([again.body.wavesExecuted, again.body.stop.code]).toEqual([0, 'SUBTASK_FAILED']);
    expect(checkoutFingerprint(repo)).toBe(fingerprint);
  });

  it('exit 0 without a commit is not completion: AGENT_RUNTIME_ERROR at completion', async () => {
    const { repo, id, cli } = await setup({ idle: ['nocommit', []] });
    const r = await cli.json(['graph', 'run', id, '--root', repo]);
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.body.outcomes[0].error).toMatchObject({ code: 'AGENT_RUNTIME_ERROR', stage: 'completion' });
    expect(await stateOf(id, 'idle')).toMatchObject({ state: 'FAILED', lastError: { code: 'AGENT_RUNTIME_ERROR' } });
  });

  it('strict scope drift: FAILED INTENT_SCOPE_DRIFT with the commit kept, dependents BLOCKED', async () => {
    const { repo, id, cli } = await setup({ leak: ['drifts', []], next: ['ok', ['leak']] });
    const r = await cli.json(['graph', 'advance', id, '--max-waves', '3', '--root', repo]);
    expect(r.body.stop.code).toBe('WAVE_FAILED');
    expect(r.body.waves[0].outcomes[0].error).toMatchObject({ code: 'INTENT_SCOPE_DRIFT' });
    const leak = await stateOf(id, 'leak');
    expect(leak).toMatchObject({ state: 'FAILED', lastError: { code: 'INTENT_SCOPE_DRIFT', recoverable: true } });
    expect(leak.scopeEvidence.outsideIntentPaths).toEqual(['outside/leak.txt']);
    expect(git(repo, 'rev-parse', `coord/${id}/leak`)).toBe(leak.implementationCommit);
    expect((await stateOf(id, 'next')).state).toBe('BLOCKED');
  });

  it('a cherry-pick conflict is a durable, inspectable CONFLICT record (never resolved or reset)', async () => {
    const { repo, id, cli } = await setup({ left: ['shared', [], ['src/shared.txt']], right: ['shared', [], ['src/*.txt']] }, 'warn', 2);
    // Their write intents overlap: advance stops before dispatching anything (docs/seeds/task-graph-v1.md §8) …
    const adv = await cli.json(['graph', 'advance', id, '--max-waves', '4', '--root', repo]);
    expect([adv.body.wavesExecuted, adv.body.stop.code, adv.body.stop.subtaskIds]).toEqual([0, 'WRITE_INTENT_CONFLICT', ['right']]);
    expect((await stateOf(id, 'left')).attempt).toBe(0);
    // … while explicit runs take them one wave each.
    expect((await cli.json(['graph', 'run', id, '--root', repo])).body.selected).toEqual(['left']);
    expect((await cli.json(['graph', 'run', id, '--root', repo])).body.selected).toEqual(['right']);
    const r = await cli.json(['graph', 'integrate', id, '--root', repo]);
    expect(r.code).toBe(1);
    expect(r.body.integration).toMatchObject({ status: 'CONFLICT', conflict: { subtaskId: 'right', paths: ['src/shared.txt'] } });
    const wt = path.join(repo, '.coord', 'worktrees', id, '__integration__');
    expect(git(wt, 'diff', '--name-only', '--diff-filter=U')).toBe('src/shared.txt');
    const again = await cli.json(['graph', 'advance', id, '--max-waves', '1', '--root', repo]);
    expect(again.body.stop.code).toBe('INTEGRATION_CONFLICT');
  });

  it('a missing executable is refused before anything is claimed or created', async () => {
    const { repo, id, cli } = await setup({ phantom: ['ghost', []] });
    const r = await cli.json(['graph', 'run', id, '--root', repo]);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stderr).error).toMatchObject({ code: 'EXECUTABLE_NOT_FOUND', stage: 'agent-resolution' });
    const s = await stateOf(id, 'phantom');
    expect([s.state, s.attempt]).toEqual(['READY', 0]);
    expect(existsSync(path.join(repo, '.coord', 'worktrees'))).toBe(false);
  });

  it('a symlinked worktree path is refused before anything is claimed; nothing is written through it', async () => {
    const { repo, id, cli } = await setup({ linked: ['ok', []] });
    const elsewhere = mkdtempSync(path.join(os.tmpdir(), 'coord-elsewhere-'));
    repos.push(elsewhere);
    mkdirSync(path.join(repo, '.coord'), { recursive: true });
    symlinkSync(elsewhere, path.join(repo, '.coord', 'worktrees'));
    const r = await cli.json(['graph', 'run', id, '--root', repo]);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stderr).error).toMatchObject({ code: 'WORKTREE_CONFLICT' });
    expect((await stateOf(id, 'linked')).attempt).toBe(0);
    expect(readdirSync(elsewhere)).toEqual([]);
  });

  it('a stale or dirty aggregate is not reviewed', async () => {
    const { repo, id, cli } = await setup({ only: ['ok', []] });
    expect((await cli.json(['graph', 'advance', id, '--max-waves', '1', '--root', repo])).body.stop.code).toBe('COMPLETED');
    expect((await cli.json(['graph', 'integrate', id, '--root', repo])).code).toBe(0);
    const reviewer = coordAs(t, (await t.admin.post('/v1/sessions', { name: 'rev', agentId: 'reviewer' })).body.token);
    const wt = path.join(repo, '.coord', 'worktrees', id, '__integration__');
    writeFileSync(path.join(wt, 'scratch.txt'), 'dirty\n');
    const dirty = await reviewer.json(['graph', 'review', id, '--decision', 'REVIEW_APPROVED', '--root', repo]);
    expect(dirty.code).toBe(1);
    expect(JSON.parse(dirty.stderr).error.code).toBe('DIRTY_WORKTREE');
    git(wt, 'add', '-A');
    git(wt, 'commit', '-qm', 'a commit after integration');
    const stale = await reviewer.json(['graph', 'review', id, '--decision', 'REVIEW_APPROVED', '--root', repo]);
    expect(stale.code).toBe(1);
    expect(JSON.parse(stale.stderr).error).toMatchObject({ code: 'TASK_STATE_CONFLICT', stage: 'review' });
    expect((await status(id)).state).toBe('REVIEWING');
  });

  it('a subtask stopped while running: STOPPED, its implementer ended, its worktree removed, its branch kept', async () => {
    const { repo, id, cli, fingerprint } = await setup({ slow: ['sleeper', []] });
    const runner = spawnCoord(['graph', 'run', id, '--root', repo, '--json'], { env: cli.env });
    await until(async () => (await stateOf(id, 'slow')).state === 'RUNNING' && readRunRecord(repo, id, 'slow') !== null);
    const r = await cli.json(['graph', 'stop', id, 'slow', '--reason', 'operator requested stop', '--root', repo]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.body.outcomes[0]).toMatchObject({ subtaskId: 'slow', action: 'stopped', state: 'STOPPED' });
    expect(r.body.cleanup).toEqual([{ subtaskId: 'slow', status: 'CLEANED' }]);
    expect(await runner.exited).toBe(1);
    expect((await stateOf(id, 'slow')).state).toBe('STOPPED');
    expect(existsSync(path.join(repo, '.coord', 'worktrees', id, 'slow'))).toBe(false);
    expect(git(repo, 'rev-parse', '--verify', `refs/heads/coord/${id}/slow`)).toMatch(/^[0-9a-f]{40}$/);
    expect(checkoutFingerprint(repo)).toBe(fingerprint);
  });

  it('a runner killed mid-wave: recover records it interrupted, resume clears it, run finishes it as attempt 2', async () => {
    const { repo, id, cli } = await setup({ crash: ['sleeper', []] });
    const runner = spawnCoord(['graph', 'run', id, '--root', repo, '--json'], { env: cli.env });
    await until(async () => (await stateOf(id, 'crash')).state === 'RUNNING' && readRunRecord(repo, id, 'crash') !== null);
    const record = readRunRecord(repo, id, 'crash')!;
    runner.child.kill('SIGKILL');
    await runner.exited;
    process.kill(-record.pid!, 'SIGKILL'); // the implementer's process group: the machine lost both
    await until(async () => {
      try {
        process.kill(record.pid!, 0);
        return false;
      } catch {
        return true;
      }
    });
    expect((await stateOf(id, 'crash')).state).toBe('RUNNING'); // the lease has not expired: only the runner can tell
    const rec = await cli.json(['graph', 'recover', id, '--root', repo]);
    expect(rec.code, rec.stderr).toBe(0);
    expect(rec.body.observations).toEqual([{ subtaskId: 'crash', processAlive: false, worktreeExists: true }]);
    expect(rec.body.outcomes.find((o: any) => o.subtaskId === 'crash')).toMatchObject({ state: 'FAILED', classification: 'interrupted', changed: true });
    expect((await cli.json(['graph', 'resume', id, 'crash', '--root', repo])).body.outcomes[0].action).toBe('ready-for-explicit-dispatch');
    const run = await cli.json(['graph', 'run', id, '--root', repo]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.body.outcomes[0]).toMatchObject({ subtaskId: 'crash', attempt: 2, state: 'SUCCEEDED' });
  });
});
