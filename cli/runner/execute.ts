/**
 * Executes one dispatch on this machine (seed 002 "Subtask dispatch in an isolated Git worktree"
 * steps 2–5; seeds-notes §3.7): the worktree at the graph base, the implementer launched there
 * with the dispatch's own `COORD_URL`/`COORD_TOKEN`, a heartbeat while it runs, its output in
 * `.coord/logs/<parent>/<subtask>.<attempt>.log`, and the evidence reported with the dispatch's
 * token when it exits.
 *
 * Evidence. Exit 0 is not proof: the worktree's HEAD must be a new commit that descends from the
 * base (else `AGENT_RUNTIME_ERROR` at `completion`). The runner then reports `git diff
 * --name-status -M` base→HEAD and `git status --porcelain` (untracked included) to `complete`,
 * where the coordinator audits them. A non-zero exit is `AGENT_EXIT_NONZERO` with the exit code.
 *
 * Observation window. With `sessionWaitMs`, an implementer still running after that long is left
 * running and reported `RUNNING` (its pid is in `.coord/runs/<parent>/<subtask>.json`, so a later
 * `recover` can tell whether it is still alive); nothing is inferred from its files.
 */
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, writeFileSync, readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { createClient, CoordError, type TaskGraphDispatch } from '@coord/sdk';
import { committedChanges, dirtyChanges, headCommit, isAncestor, type Change } from './git.js';
import { argvFor, promptFor, resolveImplementer, type LaunchPlan } from './implementers.js';
import { ensureWorktree, RUNTIME_DIR, RunnerError } from './worktrees.js';

/** At most this many changes per list go to the coordinator (its bound); the rest is flagged truncated. */
export const MAX_REPORTED_CHANGES = 10_000;

/** What happened to one dispatch, as `run`/`advance`/`dispatch` report it (seeds-notes §3.7 outcomes). */
export interface Outcome {
  subtaskId: string;
  ok: boolean;
  state: string;
  attempt: number;
  worktree: { path: string; branch: string; ref: string; baseCommit: string };
  session: { id: string };
  agent: { id: string; adapter: string | null; commandSource: string | null; resolvedCommand: string | null };
  log: string | null;
  exitCode: number | null;
  implementationCommit: string | null;
  error: { code: string; message: string; stage: string } | null;
}

export interface ExecuteOptions {
  root: string;
  url: string;
  env: NodeJS.ProcessEnv;
  /** The coordinator's registry record of the implementer (adapter-default facts). */
  registry?: { adapter?: string | null; command?: string | null };
  /** Stop waiting after this long and report RUNNING (the implementer keeps running). */
  sessionWaitMs?: number | null;
  /** How often to heartbeat, in ms (default: a third of the claim lease, at most 30 s). */
  heartbeatMs?: number;
}

/** The run record of a dispatch on this machine (for recover: is its implementer still alive?). */
export interface RunRecord {
  parentTaskId: string;
  subtaskId: string;
  attempt: number;
  sessionId: string;
  pid: number | null;
  startedAt: string;
  log: string;
}

export const runRecordPath = (root: string, parentTaskId: string, subtaskId: string) => path.join(root, RUNTIME_DIR, 'runs', parentTaskId, `${subtaskId}.json`);

export function readRunRecord(root: string, parentTaskId: string, subtaskId: string): RunRecord | null {
  const file = runRecordPath(root, parentTaskId, subtaskId);
  if (!existsSync(file)) return null;
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as RunRecord;
  } catch {
    return null;
  }
}

/** Whether a process with `pid` is alive on this machine. */
export function processAlive(pid: number | null): boolean {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function cap(changes: Change[]): { list: Change[]; truncated: boolean } {
  return changes.length > MAX_REPORTED_CHANGES ? { list: changes.slice(0, MAX_REPORTED_CHANGES), truncated: true } : { list: changes, truncated: false };
}

/**
 * Executes dispatch `d` (see the file header) and returns its outcome. Never throws for the
 * implementer's or git's failures: they are reported to the coordinator (`fail`) and returned.
 */
export async function executeDispatch(d: TaskGraphDispatch, opts: ExecuteOptions): Promise<Outcome> {
  const client = createClient({ baseUrl: opts.url, token: d.session.token, headers: { 'user-agent': 'coord-runner/0.1.0' } });
  const base = d.worktree.baseCommit;
  const outcome: Outcome = {
    subtaskId: d.subtaskId,
    ok: false,
    state: 'RUNNING',
    attempt: d.attempt,
    worktree: d.worktree,
    session: { id: d.session.id },
    agent: { id: d.implementer, adapter: null, commandSource: null, resolvedCommand: null },
    log: null,
    exitCode: null,
    implementationCommit: null,
    error: null,
  };
  const fail = async (code: string, message: string, stage: string, extra: { exitCode?: number | null; signal?: string | null } = {}) => {
    outcome.error = { code, message, stage };
    try {
      const r = await client.graphs.fail(d.parentTaskId, d.subtaskId, { attempt: d.attempt, code, message: message.slice(0, 8000), stage, ...extra });
      outcome.state = r.state;
    } catch (err) {
      outcome.state = 'UNKNOWN';
      outcome.error = { code, message: `${message} (and reporting it failed: ${(err as Error).message})`, stage };
    }
    return outcome;
  };

  let launch: LaunchPlan;
  try {
    launch = resolveImplementer(opts.root, d.implementer, opts.registry, opts.env);
  } catch (err) {
    const e = err as RunnerError;
    return fail(e.code ?? 'INVALID_AGENT_CONFIG', e.message, e.stage ?? 'agent-resolution');
  }
  outcome.agent = { id: d.implementer, adapter: launch.adapter, commandSource: launch.commandSource, resolvedCommand: launch.effectiveCommand };

  let worktreeAbs: string;
  try {
    const w = await ensureWorktree(opts.root, d.parentTaskId, d.subtaskId, base);
    worktreeAbs = w.abs;
  } catch (err) {
    const e = err as RunnerError;
    return fail(e instanceof RunnerError ? e.code : 'WORKTREE_CONFLICT', (err as Error).message, 'worktree');
  }

  const logRel = path.posix.join(RUNTIME_DIR, 'logs', d.parentTaskId, `${d.subtaskId}.${d.attempt}.log`);
  const logAbs = path.join(opts.root, ...logRel.split('/'));
  mkdirSync(path.dirname(logAbs), { recursive: true });
  outcome.log = logRel;
  const prompt = promptFor(d.spec, { parentTaskId: d.parentTaskId, subtaskId: d.subtaskId, writeIntent: d.writeIntent ?? null });
  const fd = openSync(logAbs, 'a');
  const child = spawn(launch.executable, argvFor(launch, prompt), {
    cwd: worktreeAbs,
    env: {
      ...opts.env,
      COORD_URL: opts.url,
      COORD_TOKEN: d.session.token,
      COORD_GRAPH_ID: d.parentTaskId,
      COORD_SUBTASK_ID: d.subtaskId,
      COORD_ATTEMPT: String(d.attempt),
      COORD_SUBTASK_SPEC: d.spec,
      COORD_BASE_COMMIT: base,
    },
    stdio: ['pipe', fd, fd],
    detached: true,
  });
  closeSync(fd);
  // An implementer that exits (or never reads stdin) before the prompt is written closes the pipe: not an error.
  child.stdin?.on('error', () => undefined);
  child.stdin?.end(launch.adapter === 'shell' || launch.adapter === 'exec' ? prompt : '');
  const record: RunRecord = { parentTaskId: d.parentTaskId, subtaskId: d.subtaskId, attempt: d.attempt, sessionId: d.session.id, pid: child.pid ?? null, startedAt: new Date().toISOString(), log: logRel };
  const recordFile = runRecordPath(opts.root, d.parentTaskId, d.subtaskId);
  mkdirSync(path.dirname(recordFile), { recursive: true });
  writeFileSync(recordFile, JSON.stringify(record, null, 2) + '\n');

  const every = opts.heartbeatMs ?? Math.max(1000, Math.min(30_000, Math.floor(d.claimLeaseMs / 3) || 30_000));
  const beat = setInterval(() => void client.graphs.heartbeat(d.parentTaskId, d.subtaskId, d.attempt).catch(() => undefined), every);
  const exited = new Promise<{ code: number | null; signal: string | null; spawnError?: Error }>((resolve) => {
    child.once('error', (err) => resolve({ code: null, signal: null, spawnError: err }));
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  const waitMs = opts.sessionWaitMs ?? null;
  const timer = waitMs === null ? null : new Promise<'window'>((resolve) => setTimeout(() => resolve('window'), waitMs).unref());
  const first = await (timer ? Promise.race([exited, timer]) : exited);
  clearInterval(beat);
  if (first === 'window') {
    // Left running past the observation window: reported RUNNING, never inferred done.
    child.unref();
    outcome.state = 'RUNNING';
    outcome.ok = true;
    return outcome;
  }
  const { code, signal, spawnError } = first;
  outcome.exitCode = code;
  if (spawnError) return fail('SPAWN_FAILED', `could not start ${launch.executable}: ${spawnError.message}`, 'agent-launch');
  if (code !== 0) {
    return fail('AGENT_EXIT_NONZERO', `the implementer ${signal ? `was killed by ${signal}` : `exited with ${code}`} (log: ${logRel})`, 'completion', { exitCode: code, signal });
  }
  let head: string;
  try {
    head = await headCommit(worktreeAbs);
  } catch (err) {
    return fail('AGENT_RUNTIME_ERROR', `could not read the worktree HEAD: ${(err as Error).message}`, 'completion');
  }
  if (head === base || !(await isAncestor(worktreeAbs, base, head))) {
    return fail(
      'AGENT_RUNTIME_ERROR',
      head === base
        ? `the implementer exited 0 without a new commit at ${d.worktree.path}: a commit is the only proof of completion`
        : `the worktree HEAD ${head} does not descend from the graph base ${base}`,
      'completion',
    );
  }
  try {
    const committed = cap(await committedChanges(worktreeAbs, base, head));
    const dirty = cap(await dirtyChanges(worktreeAbs));
    const r = await client.graphs.complete(d.parentTaskId, d.subtaskId, {
      attempt: d.attempt,
      graphBaseCommit: base,
      implementationCommit: head,
      committedChanges: committed.list,
      committedChangesTruncated: committed.truncated,
      dirtyChanges: dirty.list,
      dirtyChangesTruncated: dirty.truncated,
      dirtyWorktreeAvailable: true,
    });
    outcome.state = r.state;
    outcome.ok = r.ok;
    outcome.implementationCommit = head;
    if (r.error) outcome.error = { code: r.error.code, message: r.error.message, stage: r.error.stage };
    return outcome;
  } catch (err) {
    if (err instanceof CoordError) {
      const stage = typeof err.problem.stage === 'string' ? err.problem.stage : 'completion';
      outcome.error = { code: err.code, message: err.detail ?? err.message, stage };
      // The coordinator refused the report (nothing changed): record the failure so the subtask does not hang RUNNING.
      if (err.code === 'AGENT_RUNTIME_ERROR' || stage === 'scope-audit') return fail(err.code, err.detail ?? err.message, stage);
      outcome.state = 'UNKNOWN';
      return outcome;
    }
    return fail('AGENT_RUNTIME_ERROR', `could not collect the evidence: ${(err as Error).message}`, 'completion');
  }
}
