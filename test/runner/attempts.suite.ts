/**
 * The runner's attempts, on real repositories with a `coord` binary (the run's build in
 * runner.attempts.test.ts, the packed and installed one in runner.install.test.ts): a branch the runner did
 * not create is never built on, every attempt starts at the graph base (the previous tip kept), a
 * vanished worktree folder is the runner's to prune, and a signal at any phase ends the attempt as
 * RUNNER_INTERRUPTED with nothing left running. Phases are hit deterministically by a `git` on the
 * PATH that stops at a chosen command until the test lets it go (after the runner has said it saw
 * the signal), never by sleeping.
 */
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess } from '../helpers/process.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { processAlive, readRunRecord } from '../../cli/runner/execute.js';
import { cleanEnv, spawnCoord, tempHome } from '../cli/helpers.js';
import { checkoutFingerprint, committingScript, git, userRepo } from './runner.helpers.js';

/** `coord` at `bin` as a process with `token` against `base`; `json` parses the answer. */
function cliOf(bin: string, base: string, token: string) {
  const env = cleanEnv(tempHome(), { COORD_URL: base, COORD_TOKEN: token });
  return {
    env,
    json: async (args: string[]) => {
      const r = await runProcess(process.execPath, [bin, ...args, '--json'], { env });
      let body: any;
      try {
        body = JSON.parse(r.stdout);
      } catch {
        body = undefined;
      }
      return { ...r, body };
    },
  };
}

/** The suite, run with the `coord` binary `bin()` names (read once the suite starts). */
export function attemptsSuite(bin: () => string): void {
  let t: TestApp;
  let owner: Awaited<ReturnType<TestApp['session']>>;
  const cleanups: string[] = [];
  let seq = 0;

  /** A `git` that, for a command containing `$COORD_TEST_GIT_PAUSE`, creates `$COORD_TEST_GIT_MARK` and waits until it is removed. */
  const shimDir = mkdtempSync(path.join(os.tmpdir(), 'coord-git-shim-'));
  const realGit = (() => {
    for (const dir of (process.env.PATH ?? '').split(path.delimiter)) if (existsSync(path.join(dir, 'git'))) return path.join(dir, 'git');
    return '/usr/bin/git';
  })();
  writeFileSync(
    path.join(shimDir, 'git'),
    `#!/bin/sh
  if [ -n "$COORD_TEST_GIT_PAUSE" ]; then
    case " $* " in
      *" $COORD_TEST_GIT_PAUSE "*) : > "$COORD_TEST_GIT_MARK"; while [ -e "$COORD_TEST_GIT_MARK" ]; do sleep 0.02; done ;;
    esac
  fi
  exec ${JSON.stringify(realGit)} "$@"
  `,
  );
  chmodSync(path.join(shimDir, 'git'), 0o755);
  cleanups.push(shimDir);

  /** Writes the same content whatever the attempt, commits it; exits 3 on attempt 1 (its commit stays behind). */
  const SAME_CHANGE = `mkdir -p src/$COORD_SUBTASK_ID && echo "the same change" > src/$COORD_SUBTASK_ID/impl.txt && git add -A && git commit -qm "$COORD_SUBTASK_ID: change" && [ "$COORD_ATTEMPT" != 1 ]`;
  const AGENTS = {
    ok: { adapter: 'shell', command: committingScript(['src/$COORD_SUBTASK_ID/impl.txt']) },
    flaky: { adapter: 'shell', command: SAME_CHANGE },
    // Marks that it started (so a test can tell "never launched"), then runs long.
    marker: { adapter: 'shell', command: `echo started > "$COORD_TEST_RAN"; sleep 60; ${committingScript(['src/$COORD_SUBTASK_ID/impl.txt'])}` },
    // The same, deaf to SIGTERM: the first signal's ending of it takes its whole grace period.
    stubborn: { adapter: 'shell', command: `trap '' TERM; echo started > "$COORD_TEST_RAN"; sleep 60` },
  };

  beforeAll(async () => {
    t = await startTestApp();
    for (const id of ['planner', 'reviewer', ...Object.keys(AGENTS)]) await t.admin.post('/v1/agents', { id });
    owner = await t.session({ name: 'attempts-owner' });
  });
  afterAll(async () => {
    for (const d of cleanups) rmSync(d, { recursive: true, force: true });
    await t?.close();
  });

  async function setup(implementer: keyof typeof AGENTS, sid = 'work') {
    const repo = userRepo(AGENTS);
    cleanups.push(repo);
    const id = `task-attempts-${++seq}`;
    const graph = {
      schemaVersion: 1,
      parentTask: { id, title: `Attempts ${seq}`, planner: 'planner', reviewer: 'reviewer' },
      subtasks: [{ id: sid, implementer, spec: `Do ${sid}.`, dependsOn: [] }],
      maxConcurrency: 1,
    };
    const r = await owner.client.post('/v1/graphs', graph);
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return { repo, id, sid, cli: cliOf(bin(), t.base, owner.token), fingerprint: checkoutFingerprint(repo) };
  }

  const subtask = async (id: string, sid: string) => (await owner.client.get(`/v1/graphs/${id}`)).body.graph.subtasks.find((s: any) => s.subtaskId === sid);

  async function until(what: string, pred: () => boolean | Promise<boolean>, ms = 20_000) {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      if (await pred()) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`timed out: ${what}`);
  }

  describe('branches the runner did not create', () => {
    it('refuses a user branch of the subtask’s name, with or without commits of its own, before anything is claimed, and names the command that moves it aside', async () => {
      const { repo, id, sid, cli, fingerprint } = await setup('ok');
      const base = git(repo, 'rev-parse', 'HEAD');
      const branch = `coord/${id}/${sid}`;
      // At the base, no commits of its own: still the user's (nothing records it as the runner's).
      git(repo, 'branch', branch, base);
      let r = await cli.json(['graph', 'run', id, '--root', repo]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`branch ${branch} exists but Coord's runner did not create it`);
      expect(r.stderr).toContain(`git branch -m ${branch} ${id}/${sid}-mine`);
      // With a commit of the user's on it.
      const wt = path.join(repo, '..', `${path.basename(repo)}-user-wt`);
      cleanups.push(wt);
      git(repo, 'worktree', 'add', '-q', wt, branch);
      writeFileSync(path.join(wt, 'user.txt'), 'mine\n');
      git(wt, 'add', '-A');
      git(wt, '-c', 'user.name=U', '-c', 'user.email=u@example.invalid', 'commit', '-qm', 'user work');
      git(repo, 'worktree', 'remove', wt);
      const userTip = git(repo, 'rev-parse', branch);
      r = await cli.json(['graph', 'run', id, '--root', repo]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('did not create it');
      expect(await subtask(id, sid)).toMatchObject({ state: 'READY', attempt: 0 });
      expect(git(repo, 'rev-parse', branch)).toBe(userTip);
      // Moved aside as told: the run starts at the base on a branch of its own; the user's commit is where it was.
      git(repo, 'branch', '-m', branch, `${id}/${sid}-mine`);
      r = await cli.json(['graph', 'run', id, '--root', repo]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.body.outcomes[0]).toMatchObject({ state: 'SUCCEEDED', attempt: 1 });
      expect(git(repo, 'rev-parse', `${id}/${sid}-mine`)).toBe(userTip);
      expect(git(repo, 'rev-parse', `${branch}~1`)).toBe(base);
      expect(git(repo, 'show', '--name-only', '--format=', branch)).not.toContain('user.txt');
      expect(checkoutFingerprint(repo)).toBe(fingerprint);
    });
  });

  describe('every attempt from the graph base', () => {
    it('starts attempt 2 at the base, keeps attempt 1’s tip under refs/coord/attempts, and needs no cleanup when the worktree folder vanished', async () => {
      const { repo, id, sid, cli, fingerprint } = await setup('flaky');
      const base = git(repo, 'rev-parse', 'HEAD');
      let r = await cli.json(['graph', 'run', id, '--root', repo]);
      expect(r.body.outcomes[0]).toMatchObject({ attempt: 1, state: 'FAILED', error: { code: 'AGENT_EXIT_NONZERO' } });
      const tip1 = git(repo, 'rev-parse', `coord/${id}/${sid}`);
      expect(tip1).not.toBe(base);
      // The worktree folder is deleted by hand (git still has it registered).
      rmSync(path.join(repo, '.coord', 'worktrees', id, sid), { recursive: true, force: true });
      expect((await cli.json(['graph', 'resume', id, sid, '--root', repo])).code).toBe(0);
      r = await cli.json(['graph', 'run', id, '--root', repo]);
      expect(r.code, r.stderr).toBe(0);
      // The same change again commits cleanly only because attempt 2 starts at the base.
      expect(r.body.outcomes[0]).toMatchObject({ attempt: 2, state: 'SUCCEEDED' });
      const tip2 = r.body.outcomes[0].implementationCommit;
      expect(git(repo, 'rev-parse', `${tip2}~1`)).toBe(base);
      expect(git(repo, 'rev-parse', `refs/coord/attempts/${id}/${sid}/1`)).toBe(tip1);
      expect(checkoutFingerprint(repo)).toBe(fingerprint);
    });
  });

  describe('a branch recreated under the runner’s name', () => {
    it('is the user’s: after the runner’s branch was deleted and a user branch of that name made, the next attempt is refused, not reset', async () => {
      const { repo, id, sid, cli } = await setup('flaky');
      const branch = `coord/${id}/${sid}`;
      expect((await cli.json(['graph', 'run', id, '--root', repo])).body.outcomes[0]).toMatchObject({ attempt: 1, state: 'FAILED' });
      git(repo, 'worktree', 'remove', '--force', path.join(repo, '.coord', 'worktrees', id, sid));
      git(repo, 'branch', '-D', branch);
      const wt = path.join(repo, '..', `${path.basename(repo)}-mine-wt`);
      cleanups.push(wt);
      git(repo, 'worktree', 'add', '-q', '-b', branch, wt, 'HEAD');
      writeFileSync(path.join(wt, 'mine.txt'), 'mine\n');
      git(wt, 'add', '-A');
      git(wt, '-c', 'user.name=U', '-c', 'user.email=u@example.invalid', 'commit', '-qm', 'my own work');
      git(repo, 'worktree', 'remove', wt);
      const mine = git(repo, 'rev-parse', branch);
      expect((await cli.json(['graph', 'resume', id, sid, '--root', repo])).code).toBe(0);
      const r = await cli.json(['graph', 'run', id, '--root', repo]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('did not create it');
      expect(git(repo, 'rev-parse', branch)).toBe(mine);
    });
  });

  describe('signals at any phase of an attempt', () => {
    /** Starts `coord graph run` with the git shim stopping at `pause`; returns it and the files it uses. */
    async function runPausedAt(pause: string, implementer: keyof typeof AGENTS = 'marker') {
      const s = await setup(implementer);
      const mark = path.join(s.repo, '..', `${path.basename(s.repo)}.git-paused`);
      const ran = path.join(s.repo, '..', `${path.basename(s.repo)}.implementer-ran`);
      cleanups.push(mark, ran);
      const env = {
        ...s.cli.env,
        PATH: `${shimDir}${path.delimiter}${process.env.PATH}`,
        COORD_TEST_GIT_PAUSE: pause,
        COORD_TEST_GIT_MARK: mark,
        COORD_TEST_RAN: ran,
      };
      const runner = spawnCoord(['graph', 'run', s.id, '--root', s.repo, '--json'], { env, bin: bin() });
      await until(`git paused at "${pause}"`, () => existsSync(mark));
      return { ...s, runner, mark, ran };
    }

    /** SIGINT, then (once the runner said it saw it) lets git go on. */
    async function interrupt(r: Awaited<ReturnType<typeof runPausedAt>>) {
      r.runner.child.kill('SIGINT');
      await until('the runner saw the signal', () => r.runner.err().includes('coord: interrupted'));
      unlinkSync(r.mark);
      return r.runner.exited;
    }

    it('before the claim: nothing is claimed', async () => {
      const r = await runPausedAt('show-ref');
      expect(await interrupt(r)).toBe(1);
      expect(r.runner.err()).toContain('RUNNER_INTERRUPTED');
      expect(await subtask(r.id, r.sid)).toMatchObject({ state: 'READY', attempt: 0 });
      expect(existsSync(r.ran)).toBe(false);
    });

    it('while the worktree is created: FAILED RUNNER_INTERRUPTED at stage worktree, the implementer never launched', async () => {
      const r = await runPausedAt('worktree add');
      expect(await interrupt(r)).toBe(1);
      const s = await subtask(r.id, r.sid);
      expect(s).toMatchObject({ state: 'FAILED', attempt: 1 });
      expect(JSON.stringify(s)).toContain('RUNNER_INTERRUPTED');
      expect(existsSync(r.ran)).toBe(false);
      expect(checkoutFingerprint(r.repo)).toBe(r.fingerprint);
    });

    it('while the evidence is collected: FAILED RUNNER_INTERRUPTED at stage completion, the commit kept on its branch', async () => {
      const r = await runPausedAt('--name-status', 'ok');
      expect(await interrupt(r)).toBe(1);
      const s = await subtask(r.id, r.sid);
      expect(s).toMatchObject({ state: 'FAILED' });
      expect(JSON.stringify(s)).toContain('RUNNER_INTERRUPTED');
      expect(git(r.repo, 'log', '--format=%s', '-1', `coord/${r.id}/${r.sid}`)).toBe(`${r.sid}: implementation`);
    });

    it('a second signal exits at once and leaves no implementer running, even one that ignores SIGTERM', async () => {
      const s = await setup('stubborn');
      const ran = path.join(s.repo, '..', `${path.basename(s.repo)}.implementer-ran`);
      cleanups.push(ran);
      const runner = spawnCoord(['graph', 'run', s.id, '--root', s.repo, '--json'], { env: { ...s.cli.env, COORD_TEST_RAN: ran }, bin: bin() });
      await until('the implementer runs', () => existsSync(ran) && readRunRecord(s.repo, s.id, s.sid) !== null);
      const pid = readRunRecord(s.repo, s.id, s.sid)!.pid!;
      expect(processAlive(pid)).toBe(true);
      runner.child.kill('SIGINT');
      await until('the runner saw the signal', () => runner.err().includes('coord: interrupted'));
      runner.child.kill('SIGINT');
      expect(await runner.exited).toBe(130);
      await until('the implementer’s process group is gone', () => !processAlive(pid), 5000);
      expect(readFileSync(ran, 'utf8')).toBe('started\n');
    });
  });
}
