/**
 * The lease and retention sweeps (seed 000 "Reclaiming stranded work", retention; docs/seeds/todo-list.md
 * §9, §10), plus event retention. Each step is a guarded statement, so running it twice, or
 * on two replicas at once, changes each row once and writes one event per change.
 *
 * A tick runs every step even when an earlier one fails (a broken retention must not stop leases
 * from being reclaimed), records each step's outcome in `sweep_runs` (read by sweeps.health.ts for what
 * `/readyz` and `/metrics` report for the whole fleet), tells this process's observers (the
 * metrics), and then fails if any step failed, so pg-boss and the log see it.
 */
import type { Config } from '../config.js';
import type { Sql } from '../db/client.js';
import { withTx } from '../db/tx.js';
import { appendTeamEvents, deleteOldEvents, emitsFor, topicOf } from '../events/events.repo.js';
import { backToTodoEvent, eventPayload, freeClaimSql, leaseExpiredSql, selfManagedScopeSql } from '../todos/todos.view.js';
import { completeScenarios } from '../scenarios/scenarios.service.js';
import { sweepPrincipal, withLockedGraph } from '../graphs/execution/locked.js';
import { graphIdOfScopeSql, isGraphScopeSql } from '../graphs/graphs.repo.js';
import { sweepStrandedNodes } from '../metagit/metagit.locked.js';
import { silentSessions } from '../sessions/sessions.liveness.js';
import { stopSilentSession } from '../sessions/sessions.service.js';
import { purgeExpiredKeys } from '../idempotency/idempotency.repo.js';
import { notifySweepObservers, recordSweepSteps, SWEEPS, type SweepName, type SweepStep } from '../metrics/sweeps.health.js';
import { systemActor } from '../auth/actor.js';
import { deleteRetired, releaseClaims } from '../todos/todos.repo.js';
import { foldScopeCounts } from '../scopes/scopes.counts.js';

export { observeSweeps, SWEEPS, type SweepName, type SweepStep } from '../metrics/sweeps.health.js';

const BATCH = 1000;

export interface SweepResult {
  /** Sessions stopped: the silent ones auto-stopped, plus the descendants stopped with them. */
  sessionsStopped: number;
  /** Items whose lease had expired, reopened, plus graph dispatches recorded FAILED `interrupted`. */
  leaseReopened: number;
  /** Done items deleted by retention. */
  retained: number;
  /** Event rows deleted by event retention. */
  eventsDeleted: number;
  /** Every step's outcome, in run order. */
  steps: SweepStep[];
}

/** Thrown by {@link runSweep} after a tick in which a step failed; the other steps still ran. */
export class SweepFailed extends Error {
  constructor(readonly steps: SweepStep[]) {
    const failed = steps.filter((s) => !s.ok);
    super(
      `sweep step${failed.length > 1 ? 's' : ''} failed: ${failed.map((s) => `${s.sweep} (${(s.error as Error)?.message ?? String(s.error)})`).join('; ')}`,
    );
  }
}

/**
 * Auto-stop: stops every active session silent for longer than its heartbeat interval
 * (no authenticated call; `now() - last_seen_at > heartbeat_interval_ms`, database clock) exactly
 * as `POST /v1/sessions/{id}/stop` would: its subtree with it, their claims reopened with their
 * events, their tokens refused on every replica, the stop hooks run. Each one is re-checked under
 * its row lock, so a call that landed meanwhile keeps it alive. Batches of 1,000 (one transaction
 * per session). Returns how many sessions it stopped, descendants included.
 */
export async function sweepSilentSessions(sql: Sql, config: Config): Promise<number> {
  let total = 0;
  for (;;) {
    const ids = await silentSessions(sql, BATCH);
    let stopped = 0;
    for (const id of ids) {
      const r = await stopSilentSession(sql, config, id);
      if (r) stopped += 1 + r.stoppedDescendants.length;
    }
    total += stopped;
    if (ids.length < BATCH || stopped === 0) return total;
  }
}

/**
 * Reopens the free claims nobody has taken over (`freeClaimSql`: in-progress items whose last
 * progress is older than `claim_lease`, 0 disables; `claim` and `next` take them over from their
 * deadline on), with the same assignment, owner cleared: `todo`, or `dependency-blocked` when a
 * dependency is unfinished. Batches of 1,000, `FOR UPDATE SKIP LOCKED`, one transaction per batch with its events.
 * Graph subtasks are left to {@link sweepGraphInterruptions}: a stranded dispatch becomes FAILED
 * `interrupted`, never READY (docs/architecture.md §D8).
 */
export async function sweepLeases(sql: Sql, config: Config): Promise<number> {
  const leaseMs = config.todo.claimLeaseMs;
  if (leaseMs <= 0) return 0;
  let total = 0;
  for (;;) {
    const n = await withTx(sql, async (tx) => {
      const rows = await releaseClaims(
        tx,
        tx`select t.id, t.owner from todos t
            where ${freeClaimSql(tx, leaseMs)}
            order by t.progress_at limit ${BATCH} for update skip locked`,
        freeClaimSql(tx, leaseMs),
      );
      await appendTeamEvents(
        tx,
        rows
          .filter((r) => emitsFor(r.scope, config.todo.emitEvents))
          .map((r) => {
            const name = backToTodoEvent(r);
            return {
              teamId: r.team_id,
              topic: topicOf(r.scope),
              event: name,
              subjectId: r.id,
              payload: { ...eventPayload(name, r), reason: 'lease-expired', formerOwner: r.former_owner },
            };
          }),
        systemActor('sweep:lease'),
      );
      return rows.length;
    });
    total += n;
    if (n < BATCH) return total;
  }
}

/**
 * Deletes done items last changed more than `retention` ago (0 disables), except what the seed
 * protects: a done parent with an unfinished child, any item another item depends on, a done
 * parent whose child is depended on. Candidates are locked first (`SKIP LOCKED`) and the
 * protections re-checked in a second statement with a fresh snapshot, so an edge added meanwhile
 * is seen. Protected chains drain over later sweeps as their edges disappear. One `removed` event
 * per deleted item (sub-items removed with a parent included).
 */
export async function sweepRetention(sql: Sql, config: Config): Promise<number> {
  const retentionMs = config.todo.retentionMs;
  if (retentionMs <= 0) return 0;
  let total = 0;
  for (;;) {
    const { n, candidates } = await withTx(sql, async (tx) => {
      // Graph subtasks and metagit nodes are records of their contracts (evidence, review, the
      // graph's ids), not a backlog: retention leaves `graph:` and `metagit:` scopes alone.
      const cands = await tx<{ id: string }[]>`
        select id from todos
         where status = 'done' and updated_at <= now() - make_interval(secs => ${retentionMs}::float8 / 1000)
           and ${selfManagedScopeSql(tx, tx`scope`)}
         order by updated_at limit ${BATCH} for update skip locked`;
      if (cands.length === 0) return { n: 0, candidates: 0 };
      const ids = cands.map((c) => c.id);
      const deleted = await deleteRetired(tx, ids);
      await appendTeamEvents(
        tx,
        deleted
          .filter((r) => emitsFor(r.scope, config.todo.emitEvents))
          .map((r) => ({
            teamId: r.team_id,
            topic: topicOf(r.scope),
            event: 'removed',
            subjectId: r.id,
            payload: { ...eventPayload('removed', r), reason: 'retention' },
          })),
        systemActor('sweep:retention'),
      );
      return { n: deleted.length, candidates: cands.length };
    });
    total += n;
    if (candidates < BATCH || n === 0) return total;
  }
}

/**
 * Records the stranded dispatches of Task Graph subtasks (session stopped or claim lease expired)
 * as FAILED `interrupted`, one locked write per graph (src/graphs/execution/locked.ts does the
 * recording for every write; this finds the graphs nobody wrote to since). Returns how many
 * subtasks it recorded.
 */
export async function sweepGraphInterruptions(sql: Sql, config: Config): Promise<number> {
  const leaseMs = config.todo.claimLeaseMs;
  const graphs = await sql<{ team_id: string; id: string }[]>`
    select distinct t.team_id, ${graphIdOfScopeSql(sql, sql`t.scope`)} as id from todos t left join sessions s on s.id = t.owner
     where t.status = 'in-progress' and ${isGraphScopeSql(sql, sql`t.scope`)}
       and (s.status is distinct from 'active'
            or ${leaseExpiredSql(sql, leaseMs)})
     limit ${BATCH}`;
  let total = 0;
  for (const g of graphs) {
    const out = await withLockedGraph({ sql, config, principal: sweepPrincipal(g.team_id) }, g.id, async () => ({ result: null }));
    total += out.interrupted.length;
  }
  return total;
}

/**
 * What each step does and how many rows it changed: sessions auto-stopped, descendants included
 * (`session-liveness`), items reopened (`lease`), graph subtasks
 * recorded FAILED `interrupted` (`graph-interruptions`), metagit starts reopened
 * (`metagit-stranded`), done items deleted (`retention`), event rows deleted (`event-retention`),
 * scenarios recorded complete (`scenario-completion`: the backstop for derived completion, the
 * todo engine has no scenario hook; see scenarios.service.ts), expired `Idempotency-Key` rows
 * deleted (`idempotency-keys`: they already count as absent from `expires_at` on, by the database
 * clock; the sweep only reclaims the space), per-scope count rows folded (`scope-counts`: the
 * counts are exact without it; folding keeps their reads short).
 */
export const SWEEP_STEPS: Record<SweepName, (sql: Sql, config: Config) => Promise<number>> = {
  'session-liveness': sweepSilentSessions,
  lease: sweepLeases,
  'graph-interruptions': sweepGraphInterruptions,
  'metagit-stranded': sweepStrandedNodes,
  retention: sweepRetention,
  'event-retention': (sql, config) => deleteOldEvents(sql, config.eventRetentionMs),
  'scenario-completion': async (sql, config) => (await completeScenarios(sql, config, systemActor('sweep:scenario-completion'))).length,
  'idempotency-keys': (sql) => purgeExpiredKeys(sql),
  'scope-counts': (sql) => foldScopeCounts(sql),
};

/**
 * One sweep tick: every step of {@link SWEEPS} in order, each recorded in `sweep_runs` and
 * reported to {@link observeSweeps} listeners. Resolves with the counts; rejects with
 * {@link SweepFailed} when a step failed (after recording), or with the database error when the
 * recording itself failed.
 */
export async function runSweep(sql: Sql, config: Config): Promise<SweepResult> {
  const steps: SweepStep[] = [];
  for (const sweep of SWEEPS) {
    const started = performance.now();
    try {
      const changed = await SWEEP_STEPS[sweep](sql, config);
      steps.push({ sweep, ok: true, durationMs: performance.now() - started, changed });
    } catch (error) {
      steps.push({ sweep, ok: false, durationMs: performance.now() - started, changed: 0, error });
    }
  }
  try {
    await recordSweepSteps(sql, steps);
  } finally {
    notifySweepObservers(sql, steps);
  }
  if (steps.some((s) => !s.ok)) throw new SweepFailed(steps);
  const n = (name: SweepName) => steps.find((s) => s.sweep === name)!.changed;
  return {
    sessionsStopped: n('session-liveness'),
    leaseReopened: n('lease') + n('graph-interruptions') + n('metagit-stranded'),
    retained: n('retention'),
    eventsDeleted: n('event-retention'),
    steps,
  };
}
