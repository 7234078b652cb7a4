/**
 * Executes one dispatch on this machine (seed 002 "Subtask dispatch in an isolated Git worktree"
 * steps 2–5; docs/seeds/task-graph-v1.md §7): the worktree at the graph base, the implementer launched there
 * with the dispatch's own `COORD_URL`/`COORD_TOKEN`, a heartbeat while it runs, its output in
 * `.coord/logs/<parent>/<subtask>.<attempt>.log`, and the evidence reported with the dispatch's
 * token when it exits.
 *
 * Evidence. Exit 0 is not proof: the worktree's HEAD must be a new commit that descends from the
 * base (else `AGENT_RUNTIME_ERROR` at `completion`). The runner then reports `git diff
 * --name-status -M` base→HEAD and `git status --porcelain` (untracked included) to `complete`,
 * where the coordinator audits them. A non-zero exit is `AGENT_EXIT_NONZERO` with the exit code.
 *
 * Ending. An implementer past its agents file's `timeoutMs` (`AGENT_TIMEOUT`), or running when the
 * runner is interrupted (`RUNNER_INTERRUPTED`), is ended with every process it started
 * (endProcessGroup), not only its process group.
 *
 * Observation window. With `sessionWaitMs`, an implementer still running after that long is left
 * running and reported `RUNNING` (its pid is in `.coord/runs/<parent>/<subtask>.json`, so a later
 * `recover` can tell whether it is still alive); nothing is inferred from its files.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CoordError, type CoordClient, type TaskGraphDispatch } from '@coord/sdk';
import { committedChanges, dirtyChanges, git, headCommit, isAncestor, type Change } from './git.js';
import { promptFor, resolveImplementer, type LaunchPlan } from './implementers.js';
import { assertNoLinks, ensureWorktree, ownedWorktree, RUNTIME_DIR, RunnerError } from './worktrees.js';

/** At most this many changes per list go to the coordinator (its bound); the rest is flagged truncated. */
export const MAX_REPORTED_CHANGES = 10_000;

/** What happened to one dispatch, as `run`/`advance`/`dispatch` report it (docs/seeds/task-graph-v1.md §7 outcomes). */
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
  /** A success's warning: the coordinator's reason (scope drift under `warn`), or drift it observed (`observe`). */
  warning: string | null;
}

export interface ExecuteOptions {
  /** The runner's own client (the owner's or the worker's token): it reports the evidence. */
  client: CoordClient;
  root: string;
  url: string;
  /** Aborts the run: the implementer's process group is ended and the dispatch reported failed. */
  signal?: AbortSignal;
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

export const runRecordRel = (parentTaskId: string, subtaskId: string) => `${RUNTIME_DIR}/runs/${parentTaskId}/${subtaskId}.json`;
export const runRecordPath = (root: string, parentTaskId: string, subtaskId: string) => path.join(root, ...runRecordRel(parentTaskId, subtaskId).split('/'));

export function readRunRecord(root: string, parentTaskId: string, subtaskId: string): RunRecord | null {
  const file = runRecordPath(root, parentTaskId, subtaskId);
  if (!existsSync(file)) return null;
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as RunRecord;
  } catch {
    return null;
  }
}

/** One process as /proc tells it. */
interface ProcessInfo {
  pid: number;
  ppid: number;
  pgrp: number;
  state: string;
  /** Start time in clock ticks since boot: with the pid, it names one process (pids are reused). */
  start: string;
}

/** Every process from /proc (undefined where there is no /proc). */
function processTable(): ProcessInfo[] | undefined {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return undefined;
  }
  const out: ProcessInfo[] = [];
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${e}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    // pid (comm) state ppid pgrp … starttime (field 22): comm may hold spaces and parentheses, so split after its last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    out.push({ pid: Number(e), state: fields[0], ppid: Number(fields[1]), pgrp: Number(fields[2]), start: fields[19] });
  }
  return out;
}

/**
 * Whether the process group of `pid` (an implementer spawned detached: its own group) has a live
 * process. A zombie is not alive: an implementer's child that outlived it is reparented, and where
 * nothing reaps orphans (a container whose first process is not an init) it stays a zombie in the
 * group forever, which `kill(-pid, 0)` cannot tell from a live process. On Linux the group's
 * members are read from /proc; elsewhere the signal test decides.
 */
export function processAlive(pid: number | null): boolean {
  if (!pid) return false;
  try {
    process.kill(-pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  const table = processTable();
  return table === undefined || table.some((p) => p.pgrp === pid && p.state !== 'Z');
}

/**
 * The live descendants of `pid` outside its process group. Agent CLIs run their tools' commands in
 * sessions of their own (Claude Code's and Codex's shells do), which a signal to the group never
 * reaches; they are found by parentage, while it still links them to the agent.
 */
function descendantsOutsideGroup(pid: number): ProcessInfo[] {
  const children = new Map<number, ProcessInfo[]>();
  for (const p of processTable() ?? []) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p]);
  const out: ProcessInfo[] = [];
  const walk = (parent: number) => {
    for (const c of children.get(parent) ?? []) {
      if (c.pgrp !== pid && c.state !== 'Z') out.push(c);
      walk(c.pid);
    }
  };
  walk(pid);
  return out;
}

/** SIGKILLs each process of `list` that is still the same process (same pid and start time). */
function killExact(list: ProcessInfo[]): void {
  const now = new Map((processTable() ?? []).map((p) => [p.pid, p.start]));
  for (const p of list) {
    if (now.get(p.pid) !== p.start) continue;
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
}

/**
 * The process groups of the implementers this process started and has not seen end. If the
 * runner exits anyway (a second Ctrl-C exits at once), they are killed on the way out, so an
 * implementer never outlives the runner that was interrupted.
 */
const liveImplementers = new Set<number>();
let exitHookInstalled = false;
function trackImplementer(pid: number): () => void {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on('exit', () => {
      for (const group of liveImplementers) {
        try {
          process.kill(-group, 'SIGKILL');
        } catch {
          /* already gone */
        }
      }
    });
  }
  liveImplementers.add(pid);
  return () => liveImplementers.delete(pid);
}

/**
 * Ends the implementer `pid` and everything it started: SIGTERM to its process group (an agent CLI
 * ends its own tools' processes on it), then, after `graceMs`, SIGKILL to the group and to every
 * descendant in a session of its own (seen before the SIGTERM, or still linked then).
 */
export async function endProcessGroup(pid: number | null, graceMs = 2000): Promise<void> {
  if (!pid || !processAlive(pid)) return;
  const strays = descendantsOutsideGroup(pid);
  try {
    process.kill(-pid, 'SIGTERM');
  } catch {
    return;
  }
  const end = Date.now() + graceMs;
  while (Date.now() < end && processAlive(pid)) await new Promise((r) => setTimeout(r, 50));
  if (processAlive(pid)) {
    strays.push(...descendantsOutsideGroup(pid));
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  killExact(strays);
}

/** A file of the runner's under `.coord/`, refused when a symlink is anywhere on its path. */
function runtimeFile(root: string, rel: string): string {
  const abs = path.join(root, ...rel.split('/'));
  assertNoLinks(root, abs);
  mkdirSync(path.dirname(abs), { recursive: true });
  assertNoLinks(root, abs);
  return abs;
}

/** The largest spec passed in the environment (Linux caps one string at 128 KiB); stdin always has it whole. */
export const INLINE_SPEC_BYTES = 64 * 1024;

function cap(changes: Change[]): { list: Change[]; truncated: boolean } {
  return changes.length > MAX_REPORTED_CHANGES ? { list: changes.slice(0, MAX_REPORTED_CHANGES), truncated: true } : { list: changes, truncated: false };
}

/**
 * Executes dispatch `d` (see the file header) and returns its outcome. Never throws for the
 * implementer's or git's failures: they are reported to the coordinator (`fail`, with the
 * runner's own token) and returned. The implementer gets the dispatch's own token, which may read
 * its graph and heartbeat, but never report its own completion.
 */
export async function executeDispatch(d: TaskGraphDispatch, opts: ExecuteOptions): Promise<Outcome> {
  const client = opts.client;
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
    warning: null,
  };
  /** The subtask's state as the coordinator records it now (after a refused report). */
  const currentState = async () => {
    try {
      const g = await client.graphs.get(d.parentTaskId);
      return g.subtasks.find((x) => x.subtaskId === d.subtaskId)?.state ?? 'UNKNOWN';
    } catch {
      return 'UNKNOWN';
    }
  };
  const fail = async (code: string, message: string, stage: string, extra: { exitCode?: number | null; signal?: string | null } = {}) => {
    outcome.error = { code, message, stage };
    try {
      const r = await client.graphs.fail(d.parentTaskId, d.subtaskId, { attempt: d.attempt, code, message: message.slice(0, 8000), stage, ...extra });
      outcome.state = r.state;
    } catch (err) {
      // Refused (e.g. the subtask was stopped meanwhile): report what the coordinator says it is.
      outcome.state = await currentState();
      if (!(err instanceof CoordError)) outcome.error = { code, message: `${message} (and reporting it failed: ${(err as Error).message})`, stage };
    }
    return outcome;
  };
  /** Ends the attempt as interrupted when the signal came before the implementer started (`stage`: where it was). */
  const interruptedBefore = (stage: string) =>
    fail('RUNNER_INTERRUPTED', `the runner was interrupted (SIGINT/SIGTERM) at ${stage}, before the implementer started; nothing was launched`, stage);
  if (opts.signal?.aborted) return interruptedBefore('dispatch');

  let launch: LaunchPlan;
  try {
    launch = resolveImplementer(opts.root, d.implementer, opts.registry, opts.env);
  } catch (err) {
    const e = err as RunnerError;
    return fail(e.code ?? 'INVALID_AGENT_CONFIG', e.message, e.stage ?? 'agent-resolution');
  }
  outcome.agent = { id: d.implementer, adapter: launch.adapter, commandSource: launch.commandSource, resolvedCommand: launch.effectiveCommand };

  // An earlier attempt's implementer still running in this worktree (its dispatch is over) is ended first.
  const earlier = readRunRecord(opts.root, d.parentTaskId, d.subtaskId);
  if (earlier && earlier.attempt < d.attempt) await endProcessGroup(earlier.pid);

  let worktreeAbs: string;
  let startHead: string;
  let logAbs: string;
  let recordFile: string;
  let specFile: string;
  const logRel = `${RUNTIME_DIR}/logs/${d.parentTaskId}/${d.subtaskId}.${d.attempt}.log`;
  const specRel = `${RUNTIME_DIR}/specs/${d.parentTaskId}/${d.subtaskId}.${d.attempt}.md`;
  try {
    const w = await ensureWorktree(opts.root, d.parentTaskId, d.subtaskId, base, d.attempt);
    worktreeAbs = w.abs;
    startHead = await headCommit(worktreeAbs);
    logAbs = runtimeFile(opts.root, logRel);
    recordFile = runtimeFile(opts.root, runRecordRel(d.parentTaskId, d.subtaskId));
    specFile = runtimeFile(opts.root, specRel);
  } catch (err) {
    return fail(err instanceof RunnerError ? err.code : 'WORKTREE_CONFLICT', (err as Error).message, 'worktree');
  }
  outcome.log = logRel;
  // A signal during the worktree's creation is seen here, before anything is launched.
  if (opts.signal?.aborted) return interruptedBefore('worktree');
  const prompt = promptFor(d.spec, { parentTaskId: d.parentTaskId, subtaskId: d.subtaskId, writeIntent: d.writeIntent ?? null });
  writeFileSync(specFile, prompt);
  // A long spec is left out of the environment (one string is capped at 128 KiB on Linux): stdin and the file have it.
  const inline = Buffer.byteLength(prompt) <= INLINE_SPEC_BYTES;
  const program = !path.isAbsolute(launch.executable) && launch.executable.includes('/') ? path.resolve(worktreeAbs, launch.executable) : launch.executable;
  const fd = openSync(logAbs, 'a');
  let child: ReturnType<typeof spawn>;
  try {
    child = spawn(program, launch.argv, {
      cwd: worktreeAbs,
      env: {
        ...opts.env,
        COORD_URL: opts.url,
        COORD_TOKEN: d.session.token,
        COORD_GRAPH_ID: d.parentTaskId,
        COORD_SUBTASK_ID: d.subtaskId,
        COORD_ATTEMPT: String(d.attempt),
        COORD_SUBTASK_SPEC_FILE: specFile,
        ...(inline ? { COORD_SUBTASK_SPEC: d.spec } : {}),
        COORD_BASE_COMMIT: base,
      },
      stdio: ['pipe', fd, fd],
      detached: true,
    });
  } catch (err) {
    closeSync(fd);
    return fail('SPAWN_FAILED', `could not start ${program}: ${(err as Error).message}`, 'agent-launch');
  } finally {
    try {
      closeSync(fd);
    } catch {
      /* closed above */
    }
  }
  const untrack = child.pid ? trackImplementer(child.pid) : () => false;
  // An implementer that exits (or never reads stdin) before the prompt is written closes the pipe: not an error.
  child.stdin?.on('error', () => undefined);
  child.stdin?.end(prompt);
  const record: RunRecord = {
    parentTaskId: d.parentTaskId,
    subtaskId: d.subtaskId,
    attempt: d.attempt,
    sessionId: d.session.id,
    pid: child.pid ?? null,
    startedAt: new Date().toISOString(),
    log: logRel,
  };
  writeFileSync(recordFile, `${JSON.stringify(record, null, 2)}\n`);

  const every = opts.heartbeatMs ?? Math.max(1000, Math.min(30_000, Math.floor(d.claimLeaseMs / 3) || 30_000));
  const beat = setInterval(() => void client.graphs.heartbeat(d.parentTaskId, d.subtaskId, d.attempt).catch(() => undefined), every);
  const exited = new Promise<{ code: number | null; signal: string | null; spawnError?: Error }>((resolve) => {
    child.once('error', (err) => resolve({ code: null, signal: null, spawnError: err }));
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  const waitMs = opts.sessionWaitMs ?? null;
  const timer = waitMs === null ? null : new Promise<'window'>((resolve) => setTimeout(() => resolve('window'), waitMs).unref());
  // Already aborted (the signal came while the process was being started) counts too: an abort
  // event that fired before this listener would never reach it.
  const interrupted = new Promise<'interrupted'>((resolve) => {
    if (opts.signal?.aborted) resolve('interrupted');
    else opts.signal?.addEventListener('abort', () => resolve('interrupted'), { once: true });
  });
  // The agents file's timeoutMs, enforced while this runner watches (not past an observation window).
  let deadline: NodeJS.Timeout | undefined;
  const timedOut =
    launch.timeoutMs === null ? null : new Promise<'timeout'>((resolve) => (deadline = setTimeout(() => resolve('timeout'), launch.timeoutMs as number)));
  const first = await Promise.race([exited, interrupted, ...(timer ? [timer] : []), ...(timedOut ? [timedOut] : [])]);
  clearInterval(beat);
  clearTimeout(deadline);
  if (first === 'timeout') {
    await endProcessGroup(child.pid ?? null);
    untrack();
    return fail(
      'AGENT_TIMEOUT',
      `the implementer ran past its timeoutMs (${launch.timeoutMs} ms) and was ended with every process it started (log: ${logRel})`,
      'agent-launch',
    );
  }
  if (first === 'interrupted') {
    await endProcessGroup(child.pid ?? null);
    untrack();
    return fail('RUNNER_INTERRUPTED', `the runner was interrupted (SIGINT/SIGTERM) while the implementer ran; it was ended (log: ${logRel})`, 'agent-launch');
  }
  if (first === 'window') {
    // Left running past the observation window: reported RUNNING, never inferred done. Nobody
    // heartbeats it now: its lease runs out unless another runner takes over (recover, resume).
    untrack();
    child.unref();
    outcome.state = 'RUNNING';
    outcome.ok = true;
    return outcome;
  }
  untrack();
  const { code, signal, spawnError } = first;
  outcome.exitCode = code;
  // The implementer has exited; a signal now ends the attempt before its evidence is reported.
  if (opts.signal?.aborted)
    return fail(
      'RUNNER_INTERRUPTED',
      `the runner was interrupted (SIGINT/SIGTERM) after the implementer exited, before its evidence was reported (log: ${logRel})`,
      'completion',
      { exitCode: code, signal },
    );
  if (spawnError) return fail('SPAWN_FAILED', `could not start ${program}: ${spawnError.message}`, 'agent-launch');
  if (code !== 0) {
    return fail('AGENT_EXIT_NONZERO', `the implementer ${signal ? `was killed by ${signal}` : `exited with ${code}`} (log: ${logRel})`, 'completion', {
      exitCode: code,
      signal,
    });
  }
  let head: string;
  try {
    const branch = (await git(worktreeAbs, ['symbolic-ref', '--quiet', 'HEAD'], { allowExit: [1] })).trim();
    const expected = ownedWorktree(opts.root, d.parentTaskId, d.subtaskId).ref;
    if (branch !== expected) {
      return fail(
        'AGENT_RUNTIME_ERROR',
        `the implementer left the worktree on ${branch || 'a detached HEAD'}, not ${expected}: commit on the dispatch's branch`,
        'completion',
      );
    }
    head = await headCommit(worktreeAbs);
  } catch (err) {
    return fail('AGENT_RUNTIME_ERROR', `could not read the worktree HEAD: ${(err as Error).message}`, 'completion');
  }
  if (head === startHead || head === base || !(await isAncestor(worktreeAbs, base, head))) {
    return fail(
      'AGENT_RUNTIME_ERROR',
      head === startHead || head === base
        ? `the implementer exited 0 without a new commit in this attempt at ${d.worktree.path}: a commit is the only proof of completion`
        : `the worktree HEAD ${head} does not descend from the graph base ${base}`,
      'completion',
    );
  }
  try {
    const committed = cap(await committedChanges(worktreeAbs, base, head));
    const dirty = cap(await dirtyChanges(worktreeAbs));
    // Last moment a signal ends the attempt: once the report is sent, the coordinator decides it atomically.
    if (opts.signal?.aborted)
      return fail(
        'RUNNER_INTERRUPTED',
        `the runner was interrupted (SIGINT/SIGTERM) while it collected the evidence; commit ${head} is kept on ${d.worktree.branch} (log: ${logRel})`,
        'completion',
      );
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
    else if (r.state === 'SUCCEEDED') {
      const drift = (r.scopeEvidence as { drift?: boolean; scopePolicy?: string } | null)?.drift === true;
      outcome.warning = r.reason ?? (drift ? 'INTENT_SCOPE_DRIFT: changes outside the intent map (scope policy observe: recorded, not enforced)' : null);
    }
    return outcome;
  } catch (err) {
    if (err instanceof CoordError) {
      const stage = typeof err.problem.stage === 'string' ? err.problem.stage : 'completion';
      // The coordinator refused the report (nothing changed): record the failure so the subtask does not hang RUNNING.
      if (err.code === 'AGENT_RUNTIME_ERROR' || stage === 'scope-audit') return fail(err.code, err.detail ?? err.message, stage);
      outcome.error = { code: err.code, message: err.detail ?? err.message, stage };
      outcome.state = await currentState();
      return outcome;
    }
    return fail('AGENT_RUNTIME_ERROR', `could not collect the evidence: ${(err as Error).message}`, 'completion');
  }
}
