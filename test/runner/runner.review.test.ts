/**
 * Regression tests for what a fresh user found when trying to break the runner: each failed
 * before its fix. An implementer reported its own (false) completion with its token; symlinks
 * under `.coord/` were followed; a spec over 128 KiB crashed the wave (E2BIG); a do-nothing attempt
 * "succeeded" on an earlier attempt's commit; a commit on another branch was accepted; the runner
 * ignored SIGTERM; an earlier attempt's implementer kept running beside the next; a foreign folder
 * at the worktree path was found only after the claim.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { spawnCoord } from '../cli/helpers.js';
import { processAlive, readRunRecord } from '../../cli/runner/execute.js';
import { checkoutFingerprint, committingScript, coordAs, git, until, userRepo } from './runner.helpers.js';

let t: TestApp;
let owner: Awaited<ReturnType<TestApp['session']>>;
const cleanups: string[] = [];
let seq = 0;

const commitA = committingScript(['src/$COORD_SUBTASK_ID/impl.txt']);
const AGENTS = {
  ok: { adapter: 'shell', command: commitA },
  // Commits outside its intent, then reports a clean completion with its own token.
  liar: {
    adapter: 'shell',
    command:
      'echo leak >> README.md && git add -A && git commit -qm leak && ' +
      `node -e 'fetch(process.env.COORD_URL+"/v1/graphs/"+process.env.COORD_GRAPH_ID+"/subtasks/"+process.env.COORD_SUBTASK_ID+"/complete",{method:"POST",headers:{authorization:"Bearer "+process.env.COORD_TOKEN,"content-type":"application/json"},body:JSON.stringify({graphBaseCommit:process.env.COORD_BASE_COMMIT,implementationCommit:require("child_process").execSync("git rev-parse HEAD").toString().trim(),committedChanges:[{status:"A",path:"src/"+process.env.COORD_SUBTASK_ID+"/fine.txt"}],dirtyChanges:[],dirtyWorktreeAvailable:true})}).then(r=>console.log("self-report",r.status))'`,
  },
  readsSpec: { adapter: 'shell', command: `test "$(wc -c < "$COORD_SUBTASK_SPEC_FILE")" -gt 200000 && ${commitA}` },
  flaky: { adapter: 'shell', command: `if [ "$COORD_ATTEMPT" = 1 ]; then ${commitA}; exit 1; fi; echo "attempt $COORD_ATTEMPT does nothing"` },
  switcher: { adapter: 'shell', command: 'git checkout -q -b side-branch && echo x > src/side.txt && git add -A && git commit -qm side' },
  forever: { adapter: 'shell', command: `if [ "$COORD_ATTEMPT" = 1 ]; then sleep 300; fi; ${commitA}` },
};

beforeAll(async () => {
  t = await startTestApp();
  for (const id of ['planner', 'reviewer', ...Object.keys(AGENTS).map((a) => a.toLowerCase())]) await t.admin.post('/v1/agents', { id });
  owner = await t.session({ name: 'review-owner' });
});
afterAll(async () => {
  for (const d of cleanups) rmSync(d, { recursive: true, force: true });
  await t?.close();
});

async function setup(subtasks: Record<string, keyof typeof AGENTS>, opts: { policy?: 'strict' | null; spec?: string; before?: (repo: string) => void } = {}) {
  const agents = Object.fromEntries(Object.entries(AGENTS).map(([k, v]) => [k.toLowerCase(), v]));
  const repo = userRepo(agents);
  cleanups.push(repo);
  opts.before?.(repo);
  const id = `task-rreview-${++seq}`;
  const graph = {
    schemaVersion: 1,
    parentTask: { id, title: `Review ${seq}`, planner: 'planner', reviewer: 'reviewer' },
    subtasks: Object.entries(subtasks).map(([sid, impl]) => ({ id: sid, implementer: impl.toLowerCase(), spec: opts.spec ?? `Do ${sid}.` })),
    maxConcurrency: 2,
  };
  const policy = opts.policy === undefined ? 'strict' : opts.policy;
  const intentMap = policy && {
    schemaVersion: 1,
    parentTaskId: id,
    scopePolicy: policy,
    subtasks: Object.keys(subtasks).map((sid) => ({ id: sid, writeIntent: [`src/${sid}/**`] })),
  };
  const r = await owner.client.post('/v1/graphs', intentMap ? { graph, intentMap } : graph);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return { repo, id, cli: coordAs(t, owner.token) };
}
const subtask = async (id: string, sid: string) => (await owner.client.get(`/v1/graphs/${id}`)).body.graph.subtasks.find((s: any) => s.subtaskId === sid);
describe('the runner, after review', () => {
  it('an implementer cannot report its own completion: the runner reports what it committed, and strict catches the leak', async () => {
    const { repo, id, cli } = await setup({ a: 'liar' });
    const r = await cli.json(['graph', 'run', id, '--root', repo]);
    expect(r.body.outcomes[0]).toMatchObject({ state: 'FAILED', error: { code: 'INTENT_SCOPE_DRIFT' } });
    const log = readFileSync(path.join(repo, r.body.outcomes[0].log), 'utf8');
    expect(log).toContain('self-report 403');
    expect((await subtask(id, 'a')).scopeEvidence.outsideIntentPaths).toEqual(['README.md']);
  });

  it('refuses symlinks under .coord/ before anything is claimed, and writes nothing through them', async () => {
    const victim = path.join(path.dirname(userRepo()), `victim-${seq}.txt`);
    writeFileSync(victim, 'precious\n');
    cleanups.push(victim);
    const { repo, id, cli } = await setup(
      { a: 'ok' },
      {
        before: (repo) => {
          mkdirSync(path.join(repo, '.coord', 'runs', `task-rreview-${seq + 1}`), { recursive: true });
          symlinkSync(victim, path.join(repo, '.coord', 'runs', `task-rreview-${seq + 1}`, 'a.json'));
        },
      },
    );
    const r = await cli.json(['graph', 'run', id, '--root', repo]);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stderr).error.code).toBe('WORKTREE_CONFLICT');
    expect((await subtask(id, 'a')).attempt).toBe(0);
    expect(readFileSync(victim, 'utf8')).toBe('precious\n');
  });

  it('passes a 200 KiB spec by file (no E2BIG), and runs it', async () => {
    const { repo, id, cli } = await setup({ big: 'readsSpec' }, { spec: 'x'.repeat(200 * 1024) });
    const r = await cli.json(['graph', 'run', id, '--root', repo]);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    expect(r.body.outcomes[0].state).toBe('SUCCEEDED');
  });

  it('a do-nothing attempt does not succeed on an earlier attempt’s commit', async () => {
    const { repo, id, cli } = await setup({ a: 'flaky' });
    expect((await cli.json(['graph', 'run', id, '--root', repo])).body.outcomes[0].error.code).toBe('AGENT_EXIT_NONZERO');
    await cli.json(['graph', 'resume', id, 'a', '--root', repo]);
    const second = await cli.json(['graph', 'run', id, '--root', repo]);
    expect(second.body.outcomes[0]).toMatchObject({ attempt: 2, state: 'FAILED', error: { code: 'AGENT_RUNTIME_ERROR' } });
  });

  it('a commit left on another branch is not the dispatch’s', async () => {
    const { repo, id, cli } = await setup({ a: 'switcher' }, { policy: null });
    const r = await cli.json(['graph', 'run', id, '--root', repo]);
    expect(r.body.outcomes[0]).toMatchObject({ state: 'FAILED', error: { code: 'AGENT_RUNTIME_ERROR' } });
    expect(r.body.outcomes[0].error.message).toContain('side-branch');
  });

  it('a foreign folder at the worktree path is refused before the claim', async () => {
    const { repo, id, cli } = await setup(
      { a: 'ok' },
      {
        before: (repo) => mkdirSync(path.join(repo, '.coord', 'worktrees', `task-rreview-${seq + 1}`, 'a'), { recursive: true }),
      },
    );
    const r = await cli.json(['graph', 'run', id, '--root', repo]);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stderr).error.code).toBe('WORKTREE_CONFLICT');
    expect((await subtask(id, 'a')).attempt).toBe(0);
  });

  it('SIGTERM to the runner ends its implementers and reports them RUNNER_INTERRUPTED', async () => {
    const { repo, id, cli } = await setup({ a: 'forever' });
    const fingerprint = checkoutFingerprint(repo);
    const runner = spawnCoord(['graph', 'run', id, '--root', repo, '--json'], { env: cli.env });
    await until(async () => readRunRecord(repo, id, 'a') !== null && (await subtask(id, 'a')).state === 'RUNNING');
    const pid = readRunRecord(repo, id, 'a')!.pid;
    runner.child.kill('SIGTERM');
    expect(await runner.exited).toBe(1);
    await until(() => !processAlive(pid), 5000);
    expect(await subtask(id, 'a')).toMatchObject({ state: 'FAILED', lastError: { code: 'RUNNER_INTERRUPTED' } });
    expect(checkoutFingerprint(repo)).toBe(fingerprint);
  });

  it('a new attempt ends an earlier attempt’s implementer still running in the worktree', async () => {
    const { repo, id, cli } = await setup({ a: 'forever' });
    const first = await cli.json(['graph', 'run', id, '--root', repo, '--session-wait-ms', '300']);
    expect(first.body.outcomes[0].state).toBe('RUNNING');
    const pid = readRunRecord(repo, id, 'a')!.pid;
    expect(processAlive(pid)).toBe(true);
    // Its dispatch ends (the owner stops the dispatch session); resume, and run attempt 2.
    expect((await owner.client.post(`/v1/sessions/${first.body.outcomes[0].session.id}/stop`)).status).toBe(200);
    await cli.json(['graph', 'resume', id, 'a', '--root', repo]);
    const second = await cli.json(['graph', 'run', id, '--root', repo]);
    expect(second.body.outcomes[0]).toMatchObject({ attempt: 2, state: 'SUCCEEDED' });
    expect(processAlive(pid)).toBe(false);
    expect(existsSync(path.join(repo, '.coord', 'worktrees', id, 'a'))).toBe(true);
    void git;
  });
});
