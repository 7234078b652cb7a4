/**
 * The repository acceptance gate (seed 002 "Repository acceptance gate"): a real temporary git repository, shell implementers that write and commit
 * files, the `coord` CLI as a separate process against a real server. A diamond plus one
 * independent subtask with a strict Intent Map runs by `advance` to COMPLETED; every subtask has
 * its own worktree, session, commit and evidence; dependents unlock only after their
 * prerequisites; integration applies the commits in id order; review approves; cleanup removes
 * the worktrees and keeps the branches. The user's checkout, with a modified tracked file and an
 * untracked file, is byte-identical at every stage.
 */
import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { checkoutFingerprint, committingScript, coordAs, git, userRepo } from './runner.helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
  for (const id of ['planner', 'reviewer', 'builder']) await t.admin.post('/v1/agents', { id });
});
afterAll(async () => t?.close());

const ID = 'task-gate';
// alpha ─┬─ beta ─┬─ delta
//        └─ gamma ┘
// solo (independent)
const SUBTASKS: Record<string, string[]> = { alpha: [], beta: ['alpha'], gamma: ['alpha'], delta: ['beta', 'gamma'], solo: [] };

describe('the repository acceptance gate', () => {
  let repo: string;
  let fingerprint: string;
  let owner: Awaited<ReturnType<TestApp['session']>>;
  let cli: ReturnType<typeof coordAs>;

  beforeAll(async () => {
    repo = userRepo({ builder: { adapter: 'shell', command: committingScript(['src/$COORD_SUBTASK_ID/impl.txt']) } });
    fingerprint = checkoutFingerprint(repo);
    owner = await t.session({ name: 'gate-owner' });
    cli = coordAs(t, owner.token);
    const graph = {
      schemaVersion: 1,
      parentTask: { id: ID, title: 'Acceptance gate', planner: 'planner', reviewer: 'reviewer' },
      subtasks: Object.entries(SUBTASKS).map(([id, deps]) => ({ id, implementer: 'builder', spec: `Implement ${id}.`, dependsOn: deps })),
      maxConcurrency: 2,
    };
    const intentMap = {
      schemaVersion: 1,
      parentTaskId: ID,
      scopePolicy: 'strict',
      subtasks: Object.keys(SUBTASKS).map((id) => ({ id, writeIntent: [`src/${id}/**`] })),
    };
    const r = await owner.client.post('/v1/graphs', { graph, intentMap });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
  });
  afterAll(() => rmSync(repo, { recursive: true, force: true }));

  it('advances wave by wave to COMPLETED, the user checkout untouched', async () => {
    const r = await cli.json(['graph', 'advance', ID, '--max-waves', '8', '--root', repo]);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    expect(r.body.stop.code).toBe('COMPLETED');
    expect(r.body.waves.map((w: any) => w.selected)).toEqual([['alpha', 'solo'], ['beta', 'gamma'], ['delta']]);
    expect(r.body.boundaries).toMatchObject({ automaticRetry: false, integrates: false, reviews: false });
    expect(checkoutFingerprint(repo)).toBe(fingerprint);
    // `.coord/` stays out of the user's status: still just their own two changes.
    expect(git(repo, 'status', '--porcelain=v1')).toBe('M README.md\n?? "notes with spaces $;[].txt"');
  });

  it('gave every subtask its own worktree, session, commit and evidence', async () => {
    const graph = (await owner.client.get(`/v1/graphs/${ID}`)).body.graph;
    expect(graph.state).toBe('REVIEWING');
    const base = git(repo, 'rev-parse', 'HEAD');
    expect(graph.baseCommit).toBe(base);
    const sessions = new Set<string>();
    const commits = new Set<string>();
    for (const s of graph.subtasks) {
      expect(s.state).toBe('SUCCEEDED');
      expect(s.worktreePath).toBe(`.coord/worktrees/${ID}/${s.subtaskId}`);
      expect(existsSync(path.join(repo, s.worktreePath))).toBe(true);
      expect(git(repo, 'rev-parse', `refs/heads/coord/${ID}/${s.subtaskId}`)).toBe(s.implementationCommit);
      expect(git(repo, 'merge-base', '--is-ancestor', base, s.implementationCommit)).toBe('');
      expect(s.evidence).toMatchObject({ kind: 'IMPLEMENTATION_DONE', verified: true, graphBaseCommit: base, committedChangeCount: 1 });
      expect(s.scopeEvidence).toMatchObject({ drift: false, actualPaths: [`src/${s.subtaskId}/impl.txt`] });
      sessions.add(s.sessionId);
      commits.add(s.implementationCommit);
    }
    expect(sessions.size).toBe(5);
    expect(commits.size).toBe(5);
  });

  it('unlocked dependents only after their prerequisites succeeded', async () => {
    const log = (await owner.client.get(`/v1/events/log?topic=todo:graph:${ID}&limit=1000`)).body.events;
    const seq = (sid: string, to: string) =>
      log.find((e: any) => e.event === 'TASK_GRAPH_SUBTASK_STATE_CHANGED' && e.data.subtaskId === sid && e.data.to === to)?.seq;
    for (const [sid, deps] of Object.entries(SUBTASKS)) {
      for (const dep of deps) expect(seq(sid, 'RUNNING'), `${sid} after ${dep}`).toBeGreaterThan(seq(dep, 'SUCCEEDED'));
    }
  });

  it('integrates the verified commits in subtask-id order into the integration branch', async () => {
    const r = await cli.json(['graph', 'integrate', ID, '--root', repo]);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    expect(r.body.integration).toMatchObject({ status: 'SUCCEEDED', branch: `coord/${ID}/__integration__` });
    const subjects = git(repo, 'log', '--reverse', '--format=%s', `${git(repo, 'rev-parse', 'HEAD')}..coord/${ID}/__integration__`).split('\n');
    expect(subjects).toEqual(['alpha: implementation', 'beta: implementation', 'delta: implementation', 'gamma: implementation', 'solo: implementation']);
    expect(git(repo, 'rev-parse', `coord/${ID}/__integration__`)).toBe(r.body.integration.aggregateCommit);
    expect(checkoutFingerprint(repo)).toBe(fingerprint);
  });

  it('reviews the aggregate (approval authorises nothing else)', async () => {
    const reviewer = await t.admin.post('/v1/sessions', { name: 'reviewer', agentId: 'reviewer' });
    const r = await coordAs(t, reviewer.body.token).json(['graph', 'review', ID, '--decision', 'REVIEW_APPROVED', '--root', repo]);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    expect(r.body).toMatchObject({ state: 'APPROVED', authorizes: { merge: false, push: false, release: false } });
    expect(checkoutFingerprint(repo)).toBe(fingerprint);
  });

  it('cleans up the worktrees and keeps branches and commits; a repeat is idempotent', async () => {
    const r = await cli.json(['graph', 'cleanup', ID, '--root', repo]);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    expect(r.body.outcomes.map((o: any) => o.cleanup.status)).toEqual(['CLEANED', 'CLEANED', 'CLEANED', 'CLEANED', 'CLEANED']);
    for (const sid of Object.keys(SUBTASKS)) {
      expect(existsSync(path.join(repo, '.coord', 'worktrees', ID, sid))).toBe(false);
      expect(git(repo, 'rev-parse', '--verify', `refs/heads/coord/${ID}/${sid}`)).toMatch(/^[0-9a-f]{40}$/);
    }
    expect(existsSync(path.join(repo, '.coord', 'worktrees', ID, '__integration__'))).toBe(false);
    expect(
      git(repo, 'worktree', 'list', '--porcelain')
        .split('\n')
        .filter((l) => l.startsWith('worktree ')).length,
    ).toBe(1);
    const again = await cli.json(['graph', 'cleanup', ID, '--root', repo]);
    expect(again.body.outcomes.every((o: any) => o.idempotent)).toBe(true);
    expect(checkoutFingerprint(repo)).toBe(fingerprint);
  });

  it('a completed repeat of advance runs zero waves', async () => {
    const r = await cli.json(['graph', 'advance', ID, '--max-waves', '3', '--root', repo]);
    expect(r.code).toBe(0);
    expect([r.body.wavesExecuted, r.body.stop.code]).toEqual([0, 'COMPLETED']);
  });
});
