/**
 * The runner: Task Graph v1 execution on the agent's machine, on the coordinator's API (seed 002;
 * docs/seeds/task-graph-v1.md §7–§11; docs/architecture.md §D8). The coordinator claims, checks and records; the runner
 * does the git and process work here and reports it. Every function takes the repository root,
 * the owner's client, and returns the contract's result shape (`command: task.graph-…`).
 *
 * The user's checkout is never touched: the base is read (`git rev-parse HEAD`), worktrees and
 * logs live under `.coord/` (kept out of `git status` by `info/exclude`), and every git call names
 * the worktree it acts on.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { CoordError, type CoordClient, type TaskGraphDispatch, type TaskGraphRecord } from '@coord/sdk';
import { ADVANCE_BOUNDARIES, nextCommands, stopAfterWave, stopBeforeWave, type Stop } from './advance.js';
import { endProcessGroup, executeDispatch, processAlive, readRunRecord, type Outcome } from './execute.js';
import { git, gitOk, headCommit, isAncestor, topLevel, worktreeList } from './git.js';
import { resolveImplementer } from './implementers.js';
import { assertNoLinks, checkWorktree, ensureWorktree, ownedWorktree, removeWorktree, RUNTIME_DIR, RunnerError } from './worktrees.js';

export interface RunnerContext {
  /** The runner's own client: the graph owner's or a worker's token (never an implementer's). */
  client: CoordClient;
  /** Aborted on SIGINT/SIGTERM: running implementers are ended and reported RUNNER_INTERRUPTED. */
  signal?: AbortSignal;
  url: string;
  root: string;
  env: NodeJS.ProcessEnv;
  sessionWaitMs?: number | null;
  heartbeatMs?: number;
  /** Told of each step as it happens (the CLI's progress on stderr); never affects the result. */
  onProgress?: (p: Progress) => void;
}

/**
 * A step of a runner command, as it happens: a wave is claimed, a subtask starts or ends, an
 * integration applies a source. `state` is the subtask's state on the coordinator after the step.
 */
export type Progress =
  | { kind: 'wave'; parentTaskId: string; waveNumber: number | null; selected: string[] }
  | {
      kind: 'subtask';
      parentTaskId: string;
      subtaskId: string;
      attempt: number;
      state: string;
      commit?: string | null;
      /** A refusal or failure (`CODE: message`), or a warning on a success (scope drift under `warn`/`observe`). */
      note?: string | null;
    }
  | { kind: 'integration'; parentTaskId: string; subtaskId: string; step: 'applied' | 'conflict'; commit: string };

/**
 * The commands that act on a graph after `run` or `dispatch` (Coord's `next`): a FAILED or STOPPED
 * subtask anywhere in the graph, from this wave or an earlier one, is read and resumed first;
 * work still RUNNING is looked at or recovered; otherwise the next wave, or integration once
 * every subtask SUCCEEDED.
 */
export function nextAfterRun(id: string, graph: { subtasks: { subtaskId: string; state: string }[] }): string[] {
  const inState = (...states: string[]) => graph.subtasks.filter((s) => states.includes(s.state)).map((s) => s.subtaskId);
  const gated = inState('FAILED', 'STOPPED');
  if (gated.length) return [`coord graph inspect ${id}`, ...gated.map((s) => `coord graph resume ${id} ${s}`), `coord graph run ${id}`];
  if (inState('RUNNING').length) return [`coord graph status ${id}`, `coord graph recover ${id}`];
  if (graph.subtasks.length > 0 && graph.subtasks.every((s) => s.state === 'SUCCEEDED')) return [`coord graph integrate ${id}`];
  if (inState('READY').length) return [`coord graph run ${id}`];
  return [`coord graph inspect ${id}`];
}

/** The note an outcome's table row and progress line show: its error, else its warning. */
export function outcomeNote(o: Outcome): string | null {
  if (o.error) return o.error.message.startsWith(o.error.code) ? o.error.message : `${o.error.code}: ${o.error.message}`;
  return o.warning ? `warning: ${o.warning}` : null;
}

/** The repository root of `dir` (refuses a folder that is not inside a git repository). */
export async function repositoryRoot(dir: string): Promise<string> {
  let root: string;
  try {
    root = await topLevel(dir);
  } catch {
    throw new RunnerError('WORKTREE_CONFLICT', `${dir} is not inside a git repository (pass --root <repository>)`, 'worktree');
  }
  if (root.split(path.sep).join('/').includes('/.coord/worktrees/')) {
    throw new RunnerError('WORKTREE_CONFLICT', `${root} is one of the runner's own worktrees: run from the repository's main checkout`, 'worktree');
  }
  return root;
}

async function registryOf(ctx: RunnerContext): Promise<Map<string, { adapter: string | null; command: string | null }>> {
  const agents = await ctx.client.agents.listAll();
  return new Map(agents.map((a) => [a.id, { adapter: a.adapter, command: a.command }]));
}

/** The base a run uses: the graph's (fixed by its first dispatch), else this repository's HEAD. */
async function baseFor(ctx: RunnerContext, graph: TaskGraphRecord): Promise<string> {
  if (graph.baseCommit) {
    if (!(await gitOk(ctx.root, ['cat-file', '-e', `${graph.baseCommit}^{commit}`]))) {
      throw new RunnerError(
        'WORKTREE_CONFLICT',
        `the graph base ${graph.baseCommit} is not in ${ctx.root}: run in the repository the graph started in (--root <repository>), or fetch that commit into this one (git fetch)`,
        'worktree',
      );
    }
    return graph.baseCommit;
  }
  return headCommit(ctx.root);
}

/** Checks, before anything is claimed, that every implementer of `subtaskIds` can be launched here. */
async function preflightImplementers(
  ctx: RunnerContext,
  graph: TaskGraphRecord,
  subtaskIds: string[],
  registry: Map<string, { adapter: string | null; command: string | null }>,
  base: string,
): Promise<void> {
  for (const id of subtaskIds) {
    const s = graph.subtasks.find((x) => x.subtaskId === id);
    if (!s) continue;
    resolveImplementer(ctx.root, s.implementer, registry.get(s.implementer), ctx.env);
    // The worktree and the runner's files must be possible before anything is claimed.
    const attempt = s.attempt + 1;
    await checkWorktree(ctx.root, graph.id, id, base, attempt);
    for (const rel of [`runs/${graph.id}/${id}.json`, `logs/${graph.id}/${id}.${attempt}.log`, `specs/${graph.id}/${id}.${attempt}.md`]) {
      assertNoLinks(ctx.root, path.join(ctx.root, RUNTIME_DIR, ...rel.split('/')));
    }
  }
}

/** A signal that came before the claim: nothing is claimed, so nothing needs reporting. */
function refuseIfInterrupted(ctx: RunnerContext): void {
  if (ctx.signal?.aborted)
    throw new RunnerError(
      'RUNNER_INTERRUPTED',
      'the runner was interrupted (SIGINT/SIGTERM) before it claimed anything; nothing was claimed or started',
      'dispatch',
    );
}

async function executeAll(
  ctx: RunnerContext,
  dispatches: TaskGraphDispatch[],
  registry: Map<string, { adapter: string | null; command: string | null }>,
): Promise<Outcome[]> {
  const tell = ctx.onProgress ?? (() => {});
  return Promise.all(
    dispatches.map(async (d) => {
      tell({ kind: 'subtask', parentTaskId: d.parentTaskId, subtaskId: d.subtaskId, attempt: d.attempt, state: 'RUNNING' });
      const o = await executeDispatch(d, {
        client: ctx.client,
        signal: ctx.signal,
        root: ctx.root,
        url: ctx.url,
        env: ctx.env,
        registry: registry.get(d.implementer),
        sessionWaitMs: ctx.sessionWaitMs ?? d.sessionWaitMs ?? null,
        heartbeatMs: ctx.heartbeatMs,
      });
      tell({
        kind: 'subtask',
        parentTaskId: d.parentTaskId,
        subtaskId: d.subtaskId,
        attempt: d.attempt,
        state: o.state === 'RUNNING' ? 'RUNNING (left running past the observation window)' : o.state,
        commit: o.implementationCommit,
        note: outcomeNote(o),
      });
      return o;
    }),
  );
}

function summary(outcomes: Outcome[]) {
  return {
    selected: outcomes.length,
    succeeded: outcomes.filter((o) => o.state === 'SUCCEEDED').length,
    running: outcomes.filter((o) => o.state === 'RUNNING').length,
    failed: outcomes.filter((o) => !o.ok || o.state === 'FAILED').length,
  };
}

/**
 * `coord graph run`: one wave (docs/seeds/task-graph-v1.md §7). Plans, checks every selected implementer can be
 * launched here (before anything is claimed), claims the wave on the coordinator, then executes
 * the dispatches concurrently and reports each. Newly unlocked work waits for the next run.
 */
export async function runWave(ctx: RunnerContext, id: string, waveNumber: number | null = null) {
  const graph = await ctx.client.graphs.get(id);
  const base = await baseFor(ctx, graph);
  const registry = await registryOf(ctx);
  const plan = await ctx.client.graphs.plan(id);
  await preflightImplementers(ctx, graph, plan.wave.selected, registry, base);
  refuseIfInterrupted(ctx);
  const run = await ctx.client.graphs.run(id, { baseCommit: base, ...(ctx.sessionWaitMs != null ? { sessionWaitMs: ctx.sessionWaitMs } : {}) });
  ctx.onProgress?.({ kind: 'wave', parentTaskId: id, waveNumber, selected: run.selected });
  const outcomes = await executeAll(ctx, run.dispatches, registry);
  const after = await ctx.client.graphs.get(id);
  return {
    ok: outcomes.every((o) => o.ok),
    command: 'task.graph-run' as const,
    root: ctx.root,
    parentTaskId: id,
    baseCommit: base,
    selected: run.selected,
    initialPlan: run.initialPlan,
    summary: summary(outcomes),
    outcomes,
    frontier: after.frontier,
    state: after.state,
    next: nextAfterRun(id, after),
  };
}

/** `coord graph dispatch`: claims one subtask and executes it. */
export async function dispatchOne(ctx: RunnerContext, id: string, subtaskId: string) {
  const graph = await ctx.client.graphs.get(id);
  const base = await baseFor(ctx, graph);
  const registry = await registryOf(ctx);
  await preflightImplementers(ctx, graph, [subtaskId], registry, base);
  refuseIfInterrupted(ctx);
  const claim = await ctx.client.graphs.claim(id, subtaskId, { baseCommit: base, ...(ctx.sessionWaitMs != null ? { sessionWaitMs: ctx.sessionWaitMs } : {}) });
  const [outcome] = await executeAll(ctx, [claim.dispatch], registry);
  const after = await ctx.client.graphs.get(id);
  return {
    ok: outcome.ok,
    command: 'task.graph-dispatch' as const,
    root: ctx.root,
    parentTaskId: id,
    outcome,
    frontier: after.frontier,
    state: after.state,
    next: nextAfterRun(id, after),
  };
}

/**
 * `coord graph advance --max-waves N` (docs/seeds/task-graph-v1.md §8): up to N waves, each from a fresh plan
 * through the run claim, stopping with the contract's stop code (advance.ts). Never retries,
 * integrates or reviews.
 */
export async function advance(ctx: RunnerContext, id: string, maxWaves: number) {
  if (!Number.isInteger(maxWaves) || maxWaves < 1 || maxWaves > 32) {
    throw new RunnerError('TASK_GRAPH_INVALID', `maxWaves must be an integer from 1 to 32, not ${maxWaves}`, 'graph-advance');
  }
  const waves: { waveNumber: number; plan: unknown; selected: string[]; outcomes: Outcome[]; summary: ReturnType<typeof summary> }[] = [];
  let stop: Stop | null = null;
  let finalPlan: unknown = null;
  for (let n = 1; !stop; n++) {
    const graph = await ctx.client.graphs.get(id);
    const plan = await ctx.client.graphs.plan(id);
    finalPlan = plan;
    stop = stopBeforeWave(graph, plan, n);
    if (stop) break;
    const wave = await runWave(ctx, id, n);
    waves.push({ waveNumber: n, plan: wave.initialPlan, selected: wave.selected, outcomes: wave.outcomes, summary: wave.summary });
    stop = stopAfterWave(wave.outcomes, n, maxWaves, await ctx.client.graphs.get(id));
    if (stop) finalPlan = null;
  }
  const graph = await ctx.client.graphs.get(id);
  return {
    ok: stop.code === 'COMPLETED' || stop.code === 'MAX_WAVES_REACHED',
    command: 'task.graph-advance' as const,
    root: ctx.root,
    graphId: id,
    parentTaskId: id,
    maxWaves,
    wavesExecuted: waves.length,
    waves,
    finalPlan,
    stop,
    next: nextCommands(stop, id, maxWaves),
    graph,
    frontier: graph.frontier,
    boundaries: ADVANCE_BOUNDARIES,
  };
}

/**
 * `coord graph recover`: reports what this machine sees of each RUNNING dispatch (is the
 * implementer process of that attempt alive? is its worktree there?) and lets the coordinator
 * record the dead ones FAILED `interrupted`. A dispatch this machine has no record of is not
 * reported (its runner may be elsewhere).
 */
export async function recover(ctx: RunnerContext, id: string, subtaskId?: string) {
  const graph = await ctx.client.graphs.get(id);
  const observations = graph.subtasks
    .filter((s) => s.state === 'RUNNING' && (subtaskId === undefined || s.subtaskId === subtaskId))
    .flatMap((s) => {
      const record = readRunRecord(ctx.root, id, s.subtaskId);
      if (!record || record.attempt !== s.attempt) return [];
      const w = ownedWorktree(ctx.root, id, s.subtaskId);
      return [{ subtaskId: s.subtaskId, processAlive: processAlive(record.pid), worktreeExists: existsSync(w.abs) }];
    });
  const r = await ctx.client.graphs.recover(id, { ...(subtaskId ? { subtaskId } : {}), observations });
  return { ...r, root: ctx.root, observations };
}

/** `coord graph resume`: clears the recovery gate of one subtask on the coordinator. */
export async function resume(ctx: RunnerContext, id: string, subtaskId: string) {
  const r = await ctx.client.graphs.resume(id, subtaskId);
  return { ...r, ok: r.outcomes.every((o) => o.error === null), root: ctx.root };
}

async function killLocal(ctx: RunnerContext, id: string, subtaskId: string): Promise<void> {
  await endProcessGroup(readRunRecord(ctx.root, id, subtaskId)?.pid ?? null);
}

/**
 * `coord graph stop`: stops on the coordinator (active subtasks → STOPPED, their sessions
 * stopped), ends the local implementer processes of the stopped dispatches, then removes exactly
 * their worktrees and records the cleanup. Branches, commits and evidence stay.
 */
export async function stop(ctx: RunnerContext, id: string, reason: string, subtaskId?: string) {
  const r = await ctx.client.graphs.stop(id, { reason, ...(subtaskId ? { subtaskId } : {}) });
  const stopped = r.outcomes.filter((o) => o.action === 'stopped').map((o) => o.subtaskId);
  for (const s of stopped) await killLocal(ctx, id, s);
  const cleaned = await cleanup(ctx, id, subtaskId, { only: stopped.length ? stopped : [], integration: subtaskId === undefined });
  return {
    ...r,
    root: ctx.root,
    cleanup: cleaned.outcomes.map((o) => ({ subtaskId: o.subtaskId, status: (o.cleanup as { status?: string } | null)?.status ?? null })),
  };
}

/**
 * `coord graph cleanup`: removes exactly the owned worktrees of the graph's non-RUNNING subtasks
 * (RUNNING ones are SKIPPED), and with no subtask named the integration worktree too, then records
 * the outcomes on the coordinator. Branches, commits and evidence stay.
 */
export async function cleanup(ctx: RunnerContext, id: string, subtaskId?: string, opts: { only?: string[]; integration?: boolean } = {}) {
  const graph = await ctx.client.graphs.get(id);
  const targets = graph.subtasks.filter(
    (s) => (subtaskId === undefined || s.subtaskId === subtaskId) && (opts.only === undefined || opts.only.includes(s.subtaskId)),
  );
  const outcomes: { subtaskId: string; status: 'CLEANED' | 'FAILED' | 'SKIPPED'; error?: { code: string; message: string } }[] = [];
  for (const s of targets) {
    if (s.state === 'RUNNING') {
      outcomes.push({ subtaskId: s.subtaskId, status: 'SKIPPED' });
      continue;
    }
    outcomes.push({ subtaskId: s.subtaskId, ...(await removeWorktree(ctx.root, id, s.subtaskId)) });
  }
  const withIntegration = (opts.integration ?? subtaskId === undefined) && graph.integration !== null;
  const integration = withIntegration ? await removeWorktree(ctx.root, id, '__integration__') : undefined;
  const r = await ctx.client.graphs.cleanup(id, { ...(subtaskId ? { subtaskId } : {}), outcomes, ...(integration ? { integration } : {}) });
  const failed = outcomes.some((o) => o.status === 'FAILED') || integration?.status === 'FAILED';
  return { ...r, ok: !failed, root: ctx.root };
}

async function worktreeListed(root: string, abs: string): Promise<boolean> {
  return (await worktreeList(root)).some((w) => w.path === abs);
}

/** A committer identity for cherry-picks when the repository has none (the author is kept). */
async function committerEnv(root: string): Promise<NodeJS.ProcessEnv> {
  const email = (await git(root, ['config', '--get', 'user.email'], { allowExit: [1] })).trim();
  return email ? {} : { GIT_COMMITTER_NAME: 'Coord runner', GIT_COMMITTER_EMAIL: 'runner@coord.invalid' };
}

/**
 * `coord graph integrate` (docs/seeds/task-graph-v1.md §11): when every subtask is SUCCEEDED, verifies each
 * source (its Runtime branch resolves to the verified commit, which descends from the base),
 * cherry-picks them in subtask-id order into `.coord/worktrees/<parent>/__integration__` on
 * `coord/<parent>/__integration__` at the base, and records the result. A conflict is recorded as
 * a structured result and left in place for inspection (never resolved, reset or retried).
 */
export async function integrate(ctx: RunnerContext, id: string) {
  const graph = await ctx.client.graphs.get(id);
  const open = graph.subtasks.filter((s) => s.state !== 'SUCCEEDED');
  if (open.length)
    throw new RunnerError(
      'TASK_STATE_CONFLICT',
      `integration needs every subtask SUCCEEDED: ${open.map((s) => `${s.subtaskId} (${s.state})`).join(', ')}`,
      'integration',
    );
  const base = graph.baseCommit!;
  const sources = [...graph.subtasks]
    .sort((a, b) => (a.subtaskId < b.subtaskId ? -1 : a.subtaskId > b.subtaskId ? 1 : 0))
    .map((s) => ({ subtaskId: s.subtaskId, branch: s.branch!, commit: s.implementationCommit! }));
  for (const s of sources) {
    const tip = (await git(ctx.root, ['rev-parse', '--verify', '--quiet', `refs/heads/${s.branch}^{commit}`], { allowExit: [1] })).trim();
    if (tip !== s.commit)
      throw new RunnerError(
        'TASK_STATE_CONFLICT',
        `source ${s.subtaskId}: ${s.branch} is at ${tip || '(missing)'}, not the verified commit ${s.commit} (stale source)`,
        'integration',
        { subtaskId: s.subtaskId },
      );
    if (!(await isAncestor(ctx.root, base, s.commit)))
      throw new RunnerError('TASK_STATE_CONFLICT', `source ${s.subtaskId}: ${s.commit} does not descend from the base ${base}`, 'integration');
  }
  const previous = graph.integration as { status?: string; sourceFingerprint?: string } | null;
  const w = ownedWorktree(ctx.root, id, '__integration__');
  if (previous && existsSync(w.abs)) {
    throw new RunnerError(
      'WORKTREE_CONFLICT',
      `an integration worktree exists at ${w.rel} (status ${previous.status}); run \`coord graph cleanup ${id}\` before integrating again`,
      'integration',
    );
  }
  assertNoLinks(ctx.root, w.abs);
  if (existsSync(w.abs)) throw new RunnerError('WORKTREE_CONFLICT', `${w.rel} is in the way: run \`coord graph cleanup ${id}\` first`, 'integration');
  if (await worktreeListed(ctx.root, w.abs))
    throw new RunnerError('WORKTREE_CONFLICT', `${w.rel} is registered with git but missing on disk: run \`coord graph cleanup ${id}\` first`, 'integration');
  const branchExists = await gitOk(ctx.root, ['show-ref', '--verify', '--quiet', w.ref]);
  if (branchExists) {
    // A fresh integration starts at the base: an old integration branch is kept under a new name, never reset.
    const keep = `${w.branch}.${Date.now()}`;
    await git(ctx.root, ['branch', '-m', w.branch, keep]);
  }
  await ensureWorktree(ctx.root, id, '__integration__', base, 1);
  const env = await committerEnv(ctx.root);
  const applied: { subtaskId: string; commit: string }[] = [];
  for (const s of sources) {
    try {
      await git(w.abs, ['cherry-pick', '--allow-empty', '-x', s.commit], { env });
    } catch {
      ctx.onProgress?.({ kind: 'integration', parentTaskId: id, subtaskId: s.subtaskId, step: 'conflict', commit: s.commit });
      const paths = (await git(w.abs, ['diff', '--name-only', '--diff-filter=U', '-z'], { allowExit: [1] })).split('\0').filter(Boolean);
      const r = await ctx.client.graphs.recordIntegration(id, {
        baseCommit: base,
        status: 'CONFLICT',
        sources,
        appliedRefs: applied,
        conflict: {
          subtaskId: s.subtaskId,
          commit: s.commit,
          paths: paths.slice(0, 64),
          message: `cherry-pick of ${s.subtaskId} (${s.commit}) conflicted; left in ${w.rel} for inspection`,
        },
      });
      return { ...r, root: ctx.root, worktree: w.rel, branch: w.branch };
    }
    applied.push({ subtaskId: s.subtaskId, commit: await headCommit(w.abs) });
    ctx.onProgress?.({ kind: 'integration', parentTaskId: id, subtaskId: s.subtaskId, step: 'applied', commit: applied.at(-1)!.commit });
  }
  const aggregate = await headCommit(w.abs);
  const r = await ctx.client.graphs.recordIntegration(id, { baseCommit: base, status: 'SUCCEEDED', sources, appliedRefs: applied, aggregateCommit: aggregate });
  return { ...r, root: ctx.root, worktree: w.rel, branch: w.branch };
}

/**
 * `coord graph review --decision …` (docs/seeds/task-graph-v1.md §11): re-checks the aggregate here (the
 * integration worktree's HEAD is the recorded aggregate commit, and it is clean) and records the
 * decision on the coordinator with the fingerprint it reviewed. Stale or dirty is refused.
 */
export async function review(ctx: RunnerContext, id: string, decision: 'REVIEW_APPROVED' | 'CHANGES_REQUESTED', feedback?: string) {
  const graph = await ctx.client.graphs.get(id);
  const integration = graph.integration as { status?: string; sourceFingerprint?: string; aggregateCommit?: string } | null;
  if (integration?.status !== 'SUCCEEDED')
    throw new RunnerError('TASK_STATE_CONFLICT', `Task Graph ${id} has no successful integration to review; run \`coord graph integrate ${id}\``, 'review');
  const w = ownedWorktree(ctx.root, id, '__integration__');
  if (!existsSync(w.abs))
    throw new RunnerError(
      'TASK_STATE_CONFLICT',
      `the integration worktree ${w.rel} is missing: review needs the aggregate in place; run \`coord graph integrate ${id}\` to rebuild and record it, then review`,
      'review',
    );
  const head = await headCommit(w.abs);
  if (head !== integration.aggregateCommit)
    throw new RunnerError(
      'TASK_STATE_CONFLICT',
      `the aggregate worktree is at ${head}, not the integrated ${integration.aggregateCommit} (stale aggregate)`,
      'review',
    );
  const dirty = (await git(w.abs, ['status', '--porcelain=v1', '-z', '--untracked-files=all'])).length > 0;
  if (dirty)
    throw new RunnerError(
      'DIRTY_WORKTREE',
      `the aggregate worktree ${w.rel} has uncommitted changes: refusing to review a dirty aggregate; discard them (git -C ${w.rel} stash -u, or git -C ${w.rel} checkout -- . plus git -C ${w.rel} clean -fd), then review again`,
      'review',
    );
  const r = await ctx.client.graphs.review(id, {
    decision,
    ...(feedback ? { feedback } : {}),
    sourceFingerprint: integration.sourceFingerprint!,
    aggregateCommit: head,
  });
  return { ...r, root: ctx.root };
}

/** What `coord worker` did, per dispatch it ran. */
export interface WorkerReport {
  agent: string;
  graphs: string[];
  outcomes: (Outcome & { parentTaskId: string })[];
}

/**
 * `coord worker --agent <id>`: runs, on this machine, the subtasks of one Agent as they become
 * claimable (docs/architecture.md §D8: workers on other machines pull work for their agent). The token must
 * be a session bound to that Agent. For each graph (`graphs`, or every graph it can see that
 * names the Agent as an implementer) it claims through `next` in the graph's scope — the
 * coordinator's locked claim — and executes each dispatch; then it waits on the graph's event
 * stream (no poll loop) and tries again after every event. `once`: drain what is claimable now,
 * then return. Stops when `signal` aborts.
 */
export async function work(
  ctx: RunnerContext,
  agent: string,
  opts: { graphs?: string[]; once?: boolean; signal?: AbortSignal; onOutcome?: (o: Outcome & { parentTaskId: string }) => void } = {},
): Promise<WorkerReport> {
  const me = await ctx.client.me();
  if (me.kind !== 'session' || me.session?.agentId !== agent) {
    throw new RunnerError(
      'AUTH_REQUIRED',
      `the token is not a session bound to Agent "${agent}": create one with \`coord session create --agent ${agent}\``,
      'worker',
    );
  }
  const named = opts.graphs?.length ? opts.graphs : null;
  const candidates = named ?? (await ctx.client.graphs.listAll()).map((g) => g.id);
  // A worker works for one repository: a graph whose base is elsewhere is not its work, and only a
  // graph it was told about (--graph) may get its base from this repository's HEAD.
  const graphs: string[] = [];
  for (const id of candidates) {
    const g = await ctx.client.graphs.get(id);
    if (g.baseCommit ? await gitOk(ctx.root, ['cat-file', '-e', `${g.baseCommit}^{commit}`]) : named !== null) graphs.push(id);
  }
  const registry = await registryOf(ctx);
  const report: WorkerReport = { agent, graphs, outcomes: [] };
  /** The next dispatch for this Agent: `next` once the graph has a base; before that a claim that fixes it to this HEAD. */
  const claimNext = async (id: string): Promise<TaskGraphDispatch | null> => {
    const graph = await ctx.client.graphs.get(id);
    if (!graph.baseCommit) {
      const mine = graph.subtasks.find((s) => s.state === 'READY' && s.implementer === agent);
      if (!mine) return null;
      try {
        return (await ctx.client.graphs.claim(id, mine.subtaskId, { baseCommit: await headCommit(ctx.root) })).dispatch;
      } catch (err) {
        if (err instanceof CoordError && err.status === 409) return null; // someone else took it, or no slot: wait for the next event
        throw err;
      }
    }
    const r = await ctx.client.todos.next({ scope: `graph:${id}` });
    return r.claimed && r.dispatch ? (r.dispatch as unknown as TaskGraphDispatch) : null;
  };
  const drain = async (id: string) => {
    for (;;) {
      if (opts.signal?.aborted) return;
      const d = await claimNext(id);
      if (!d) return;
      const [o] = await executeAll(ctx, [d], registry);
      const entry = { ...o, parentTaskId: id };
      report.outcomes.push(entry);
      opts.onOutcome?.(entry);
    }
  };
  for (const id of graphs) await drain(id);
  if (opts.once) return report;
  await Promise.all(
    graphs.map(async (id) => {
      // After each event (a dependency succeeded, a subtask was resumed, a slot freed) try again;
      // and each time the stream opens: the server fixes its starting point before answering, so
      // work that became claimable after the drain above but before the subscription is found
      // then, not left waiting for an event that was already written.
      let running: Promise<void> = Promise.resolve();
      let pending = false;
      const again = () => {
        if (pending) return;
        pending = true;
        running = running.then(async () => {
          pending = false;
          await drain(id);
        });
      };
      for await (const _event of ctx.client.events.follow(`todo:graph:${id}`, { signal: opts.signal, onOpen: again })) again();
      await running;
    }),
  );
  return report;
}
