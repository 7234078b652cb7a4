/**
 * The advance stop rule (seed 002 "Explicit bounded multi-wave advance"; docs/seeds/task-graph-v1.md §8), pure:
 * given the graph record and the fresh Graph Preflight before a wave, or the outcomes after one,
 * whether advance stops and with which code. The loop itself is in runner.ts.
 *
 * Before a wave, in this order: every subtask SUCCEEDED → COMPLETED (or the integration/review
 * stop: INTEGRATION_CONFLICT, INTEGRATION_FAILED, CHANGES_REQUESTED); the graph STOPPED →
 * GRAPH_STOPPED; existing FAILED → SUBTASK_FAILED, BLOCKED → SUBTASK_BLOCKED, STOPPED →
 * SUBTASK_STOPPED; RUNNING work → SUBTASKS_RUNNING (never redispatched); a write-intent conflict
 * in the plan → WRITE_INTENT_CONFLICT before dispatching anything (not even the non-conflicting
 * subtasks); nothing selected → NO_ELIGIBLE_WORK. After a wave: a failed outcome → WAVE_FAILED; an
 * outcome still RUNNING after the observation window → SUBTASKS_RUNNING; the caller's limit →
 * MAX_WAVES_REACHED; all SUCCEEDED → COMPLETED.
 */

export type StopCode =
  | 'COMPLETED'
  | 'MAX_WAVES_REACHED'
  | 'WRITE_INTENT_CONFLICT'
  | 'WAVE_FAILED'
  | 'SUBTASK_FAILED'
  | 'SUBTASK_BLOCKED'
  | 'SUBTASK_STOPPED'
  | 'SUBTASKS_RUNNING'
  | 'GRAPH_STOPPED'
  | 'INTEGRATION_CONFLICT'
  | 'INTEGRATION_FAILED'
  | 'CHANGES_REQUESTED'
  | 'NO_ELIGIBLE_WORK';

export interface Stop {
  code: StopCode;
  reason: string;
  waveNumber: number | null;
  subtaskIds: string[];
}

/** The facts of the record the rule reads. */
export interface GraphFacts {
  state: string;
  subtasks: { subtaskId: string; state: string }[];
  integration?: unknown;
  review?: unknown;
}

/** The facts of the plan the rule reads. */
export interface PlanFacts {
  wave: { selected: string[]; conflictDeferred: string[] };
  conflicts: { subtasks: string[]; patterns: { subtaskId: string; pattern: string }[] }[];
}

const ids = (g: GraphFacts, state: string) => g.subtasks.filter((s) => s.state === state).map((s) => s.subtaskId);

/** Whether advance stops before wave `next` (1-based), and why. Null: run the wave. */
export function stopBeforeWave(g: GraphFacts, plan: PlanFacts, next: number): Stop | null {
  const at = (code: StopCode, reason: string, subtaskIds: string[] = []): Stop => ({ code, reason, waveNumber: next - 1 || null, subtaskIds });
  if (g.subtasks.length > 0 && g.subtasks.every((s) => s.state === 'SUCCEEDED')) {
    const integration = g.integration as { status?: string; conflict?: { subtaskId?: string } } | null | undefined;
    const review = g.review as { decision?: string } | null | undefined;
    if (integration?.status === 'CONFLICT')
      return at(
        'INTEGRATION_CONFLICT',
        'The recorded integration stopped on a cherry-pick conflict.',
        integration.conflict?.subtaskId ? [integration.conflict.subtaskId] : [],
      );
    if (integration?.status === 'FAILED') return at('INTEGRATION_FAILED', 'The recorded integration failed.');
    if (review?.decision === 'CHANGES_REQUESTED') return at('CHANGES_REQUESTED', 'The aggregate review requested changes.');
    return at('COMPLETED', 'Every subtask SUCCEEDED.');
  }
  if (g.state === 'STOPPED') return at('GRAPH_STOPPED', 'The graph is STOPPED.', ids(g, 'STOPPED'));
  const failed = ids(g, 'FAILED');
  if (failed.length) return at('SUBTASK_FAILED', `FAILED subtasks stop advance (no retry): ${failed.join(', ')}.`, failed);
  const blocked = ids(g, 'BLOCKED');
  if (blocked.length) return at('SUBTASK_BLOCKED', `BLOCKED subtasks stop advance: ${blocked.join(', ')}.`, blocked);
  const stopped = ids(g, 'STOPPED');
  if (stopped.length) return at('SUBTASK_STOPPED', `STOPPED subtasks stop advance: ${stopped.join(', ')}.`, stopped);
  const running = ids(g, 'RUNNING');
  if (running.length) return at('SUBTASKS_RUNNING', `Subtasks are still RUNNING and are not redispatched: ${running.join(', ')}.`, running);
  if (plan.conflicts.length || plan.wave.conflictDeferred.length) {
    const c = plan.conflicts[0];
    const pair = c ? ` (${c.patterns.map((p) => `${p.subtaskId} "${p.pattern}"`).join(' vs ')})` : '';
    return at(
      'WRITE_INTENT_CONFLICT',
      `The plan defers subtasks on a write-intent conflict${pair}; advance stops before dispatching.`,
      plan.wave.conflictDeferred,
    );
  }
  if (plan.wave.selected.length === 0) return at('NO_ELIGIBLE_WORK', 'No subtask is eligible for a wave.');
  return null;
}

/** Whether advance stops after wave `n` given its outcomes, and why. Null: plan the next wave. */
export function stopAfterWave(outcomes: { subtaskId: string; ok: boolean; state: string }[], n: number, maxWaves: number, g: GraphFacts): Stop | null {
  const failed = outcomes.filter((o) => !o.ok || o.state === 'FAILED').map((o) => o.subtaskId);
  if (failed.length) return { code: 'WAVE_FAILED', reason: `Wave ${n} had failed subtasks: ${failed.join(', ')}.`, waveNumber: n, subtaskIds: failed };
  const running = outcomes.filter((o) => o.state === 'RUNNING').map((o) => o.subtaskId);
  if (running.length)
    return { code: 'SUBTASKS_RUNNING', reason: `Still RUNNING after the observation window: ${running.join(', ')}.`, waveNumber: n, subtaskIds: running };
  if (g.subtasks.length > 0 && g.subtasks.every((s) => s.state === 'SUCCEEDED'))
    return { code: 'COMPLETED', reason: 'Every subtask SUCCEEDED.', waveNumber: n, subtaskIds: [] };
  if (n >= maxWaves) return { code: 'MAX_WAVES_REACHED', reason: `The caller's limit of ${maxWaves} waves was reached.`, waveNumber: n, subtaskIds: [] };
  return null;
}

/**
 * The commands that act on a stop, in order (Coord's addition to the advance result, `next`; the
 * `stop` object itself keeps the contract's shape). Advance never takes these steps itself: each
 * one is a decision the caller makes.
 */
export function nextCommands(stop: Stop, id: string, maxWaves: number): string[] {
  const each = (verb: string) => stop.subtaskIds.map((s) => `coord graph ${verb} ${id} ${s}`);
  const again = `coord graph advance ${id} --max-waves ${maxWaves}`;
  switch (stop.code) {
    case 'COMPLETED':
      return [`coord graph integrate ${id}`, ...reviewCommands(id)];
    case 'MAX_WAVES_REACHED':
      return [again];
    case 'WRITE_INTENT_CONFLICT':
      // `run` dispatches the plan's wave, which holds back the conflicting subtasks for a later one.
      return [`coord graph plan ${id}`, `coord graph run ${id}`, again];
    case 'WAVE_FAILED':
    case 'SUBTASK_FAILED':
    case 'SUBTASK_STOPPED':
      // Read why (the outcome's log and error), clear the recovery gate, then go on.
      return [`coord graph inspect ${id}`, ...each('resume'), again];
    case 'SUBTASK_BLOCKED':
      return [`coord graph inspect ${id}`];
    case 'SUBTASKS_RUNNING':
      // Still running somewhere; `recover` records a dispatch whose implementer died on this machine.
      return [`coord graph status ${id}`, `coord graph recover ${id}`];
    case 'GRAPH_STOPPED':
      return [`coord graph status ${id}`];
    case 'INTEGRATION_CONFLICT':
    case 'INTEGRATION_FAILED':
      return [`coord graph inspect ${id}`, `coord graph cleanup ${id}`, `coord graph integrate ${id}`];
    case 'CHANGES_REQUESTED':
      return [`coord graph status ${id}`, `coord graph create <follow-up.json>`];
    case 'NO_ELIGIBLE_WORK':
      return [`coord graph plan ${id}`];
  }
}

/**
 * The two review decisions as commands that run as written (one of them is the next step; a
 * reviewer picks). Shared by advance's COMPLETED and integrate's success.
 */
export function reviewCommands(id: string): string[] {
  return [`coord graph review ${id} --decision REVIEW_APPROVED`, `coord graph review ${id} --decision CHANGES_REQUESTED --feedback "<what to change>"`];
}

/** What advance never does (the result says so; docs/seeds/task-graph-v1.md §8). */
export const ADVANCE_BOUNDARIES = {
  automaticRetry: false,
  recursiveDispatch: false,
  mutatesDependencies: false,
  integrates: false,
  reviews: false,
  authorizesRelease: false,
} as const;
