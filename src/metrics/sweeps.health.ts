/**
 * Sweep health for the whole fleet (defect #9). The sweep runs as a pg-boss job on one replica
 * per tick (boss.ts), so no replica can tell from its own memory whether *some* replica swept
 * lately. Every tick therefore records each step's outcome in `sweep_runs` (database time;
 * `runSweep` writes it), and every replica's `/readyz` and `/metrics` read it back here.
 *
 * Stale means: the step's last success is older than 3 × `sweep_interval` (database clock). A
 * tick normally follows the previous one after `sweep_interval` plus up to 0.5 s of polling and
 * its own run time (boss.ts), so three intervals tolerate a slow tick or a replica restart, not a
 * broken chain (pg-boss's once-a-minute cron re-seeds a broken chain). A step that has never
 * succeeded is not stale while this process is younger than that bound: the grace of a fresh
 * database, or of a fleet whose first tick has not finished yet.
 *
 * A leaf module (it imports no domain module), so the health routes and the metrics can use the
 * step names, the recording and the observers without loading the sweeps' dependencies.
 */
import type { Sql } from '../db/client.js';

/** The steps of one sweep tick, in the order they run; the names of `sweep_runs` rows and metric labels. */
export const SWEEPS = [
  'session-liveness',
  'lease',
  'graph-interruptions',
  'metagit-stranded',
  'retention',
  'event-retention',
  'scenario-completion',
  'idempotency-keys',
  'scope-counts',
] as const;
export type SweepName = (typeof SWEEPS)[number];

/** The outcome of one step of a tick. */
export interface SweepStep {
  sweep: SweepName;
  ok: boolean;
  /** Wall time of the step in milliseconds (process clock: a duration, not a timestamp). */
  durationMs: number;
  /** Rows the step changed (0 when it failed): see `SWEEP_STEPS` in sweeps.ts. */
  changed: number;
  /** What the step threw, when it failed. */
  error?: unknown;
}

type StepListener = (steps: SweepStep[]) => void;
const observers = new WeakMap<Sql, Set<StepListener>>();

/**
 * Calls `listener` with every tick's steps that `runSweep` runs on this pool, in this process
 * (the app's metrics count them). Returns the function that removes it.
 */
export function observeSweeps(sql: Sql, listener: StepListener): () => void {
  let set = observers.get(sql);
  if (!set) observers.set(sql, (set = new Set()));
  set.add(listener);
  return () => void set!.delete(listener);
}

/** Called by `runSweep` with each tick's steps. */
export function notifySweepObservers(sql: Sql, steps: SweepStep[]): void {
  for (const listener of observers.get(sql) ?? []) listener(steps);
}

/**
 * Records a tick's steps: a success sets `last_success_at = now()`, its duration and count; a
 * failure sets `last_failure_at = now()` and keeps the last success. One statement.
 */
export async function recordSweepSteps(sql: Sql, steps: SweepStep[]): Promise<void> {
  if (steps.length === 0) return;
  await sql`
    insert into sweep_runs (sweep, last_success_at, duration_ms, changed, last_failure_at)
    select u.sweep,
           case when u.ok = 1 then now() end, case when u.ok = 1 then u.duration_ms end, case when u.ok = 1 then u.changed end,
           case when u.ok = 1 then null else now() end
      from unnest(${steps.map((s) => s.sweep)}::text[], ${steps.map((s) => (s.ok ? 1 : 0))}::int[],
                  ${steps.map((s) => s.durationMs)}::float8[], ${steps.map((s) => s.changed)}::int[]) as u(sweep, ok, duration_ms, changed)
    on conflict (sweep) do update set
      last_success_at = coalesce(excluded.last_success_at, sweep_runs.last_success_at),
      duration_ms = case when excluded.last_success_at is null then sweep_runs.duration_ms else excluded.duration_ms end,
      changed = case when excluded.last_success_at is null then sweep_runs.changed else excluded.changed end,
      last_failure_at = coalesce(excluded.last_failure_at, sweep_runs.last_failure_at)`;
}

/** How many sweep intervals without a success make a step stale. */
export const STALE_AFTER_INTERVALS = 3;

/** One `sweep_runs` row as read back, for every step of {@link SWEEPS} (never-run steps included). */
export interface SweepRun {
  sweep: SweepName;
  /** Last success, database time; null until the step first succeeded. */
  lastSuccessAt: Date | null;
  /** Duration of that success in ms. */
  durationMs: number | null;
  /** Rows that success changed. */
  changed: number | null;
  /** Last failure, database time; null when it never failed. */
  lastFailureAt: Date | null;
  /** now() − lastSuccessAt in ms, on the database clock; null until the first success. */
  ageMs: number | null;
}

/** A step's health as `/readyz` reports it (JSON: times as ISO 8601 strings). */
export interface SweepHealth {
  sweep: SweepName;
  lastSuccessAt: string | null;
  durationMs: number | null;
  changed: number | null;
  lastFailureAt: string | null;
  /** The last success is older than `staleAfterMs` (or there is none, past the start-up grace). */
  stale: boolean;
}

/** Reads `sweep_runs` for every step of {@link SWEEPS}, in run order; ages on the database clock. */
export async function readSweepRuns(sql: Sql): Promise<SweepRun[]> {
  const rows = await sql<
    {
      sweep: SweepName;
      last_success_at: Date | null;
      duration_ms: number | null;
      changed: number | null;
      last_failure_at: Date | null;
      age_ms: number | null;
    }[]
  >`
    select s.name as sweep, r.last_success_at, r.duration_ms, r.changed, r.last_failure_at,
           (extract(epoch from now() - r.last_success_at) * 1000)::float8 as age_ms
      from unnest(${[...SWEEPS]}::text[]) with ordinality as s(name, ord)
      left join sweep_runs r on r.sweep = s.name
     order by s.ord`;
  return rows.map((r) => ({
    sweep: r.sweep,
    lastSuccessAt: r.last_success_at,
    durationMs: r.duration_ms === null ? null : Number(r.duration_ms),
    changed: r.changed,
    lastFailureAt: r.last_failure_at,
    ageMs: r.age_ms === null ? null : Number(r.age_ms),
  }));
}

/**
 * Judges the runs (pure): each step's health, and whether the fleet's sweeping is degraded.
 * `staleAfterMs` is 3 × `sweep_interval`; `uptimeMs` is how long this app has been up (the grace
 * for steps that never succeeded). `detail` says what is stale and what to check.
 */
export function judgeSweeps(
  runs: SweepRun[],
  opts: { staleAfterMs: number; uptimeMs: number; runsSweeps: boolean },
): { degraded: boolean; detail?: string; sweeps: SweepHealth[] } {
  const sweeps = runs.map((r) => ({
    sweep: r.sweep,
    lastSuccessAt: r.lastSuccessAt?.toISOString() ?? null,
    durationMs: r.durationMs,
    changed: r.changed,
    lastFailureAt: r.lastFailureAt?.toISOString() ?? null,
    stale: r.ageMs === null ? opts.uptimeMs > opts.staleAfterMs : r.ageMs > opts.staleAfterMs,
  }));
  const stale = sweeps.filter((s) => s.stale);
  if (stale.length === 0) return { degraded: false, sweeps };
  const bound = `${STALE_AFTER_INTERVALS} × sweep_interval = ${Math.round(opts.staleAfterMs / 1000)} s`;
  const detail =
    `no successful ${stale.map((s) => s.sweep).join(', ')} sweep within ${bound}: expired leases are not reopened and retention does not run until one succeeds. ` +
    `The sweep is a pg-boss job that one replica with COORD_SWEEPS=on runs per tick (this replica: ${opts.runsSweeps ? 'on' : 'off'}); ` +
    `check that such a replica is running and look in its log for "sweep failed".`;
  return { degraded: true, detail, sweeps };
}
