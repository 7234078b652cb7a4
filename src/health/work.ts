/**
 * The state of the work, for the work gauges of `/metrics` (src/metrics/metrics.ts `WorkFacts`;
 * docs/operations.md lists them with alert rules). Every figure is per team and, where it says so,
 * per scope kind (`session`, `scenario`, `graph`, `metagit`): never per item or per session, so
 * the series stay few. Each statement reads what stays small on a healthy fleet, never a scope's
 * items: the per-scope count rows (src/scopes/scopes.counts.ts), the in-progress claims through
 * their partial index, the sessions through the auto-stop index, the ended graph subtasks.
 * Measured on a 1,000,000-item scope in test/health/work-gauges.test.ts (by the buffers read).
 */
import type { Db } from '../db/client.js';
import type { WorkFacts } from '../metrics/metrics.js';
import { SILENT_SQL } from '../sessions/sessions.liveness.js';
import { heldSql, leaseExpiredSql } from '../todos/todos.view.js';

/** Reads the {@link WorkFacts} (five statements, in parallel). `leaseMs` is `claim_lease` in ms (0: no claim expires). */
export async function readWorkFacts(db: Db, leaseMs: number): Promise<WorkFacts> {
  const [items, expired, stalest, silent, ended] = await Promise.all([
    db<{ team: string; kind: string; ready: number; waiting: number; in_progress: number; blocked: number; done: number }[]>`
      select team_id as team, split_part(scope, ':', 1) as kind,
             sum(todo - waiting)::int as ready, sum(waiting)::int as waiting, sum(in_progress)::int as in_progress,
             sum(blocked)::int as blocked, sum(done)::int as done
        from scope_counts group by 1, 2`,
    db<{ team: string; kind: string; n: number }[]>`
      select t.team_id as team, split_part(t.scope, ':', 1) as kind, count(*)::int as n
        from todos t where t.status = 'in-progress' and ${leaseExpiredSql(db, leaseMs)} group by 1, 2`,
    db<{ team: string; seconds: number; oldest: number }[]>`
      select t.team_id as team, extract(epoch from now() - min(t.progress_at))::float8 as seconds,
             extract(epoch from now() - min(coalesce(t.claimed_at, t.progress_at)))::float8 as oldest
        from todos t where t.status = 'in-progress' group by 1`,
    db<{ team: string; n: number }[]>`
      select s.team_id as team, count(*)::int as n from sessions s
       where ${db.unsafe(SILENT_SQL)}
         and exists (select 1 from todos t where t.owner = s.id and ${heldSql(db, leaseMs)})
       group by 1`,
    db<{ team: string; outcome: string; n: number }[]>`
      select team_id as team, outcome, count(*)::int as n from graph_subtasks where outcome is not null group by 1, 2`,
  ]);
  return {
    items: items.flatMap((r) =>
      (['ready', 'waiting', 'in_progress', 'blocked', 'done'] as const).map((status) => ({ team: r.team, kind: r.kind, status, n: r[status] })),
    ),
    expiredClaims: expired,
    stalestClaim: stalest.map((r) => ({ team: r.team, seconds: r.seconds })),
    oldestClaim: stalest.map((r) => ({ team: r.team, seconds: r.oldest })),
    silentHolders: silent,
    subtaskOutcomes: ended,
  };
}
