/**
 * Progress counts for the wide session list (seed 000 "In gr list"; docs/seeds/todo-list.md §12): each
 * session shows its own subtree's `done/total` (the items of `session:<rootId>`, sub-items
 * included), and an orchestrator additionally shows the scenario-wide total of the scenarios it
 * orchestrates. Members never get the scenario total echoed onto them, so summing the column over
 * a fleet does not count a scenario's items once per member.
 */
import type { Db } from '../db/client.js';
import { scopeCountsSql } from '../scopes/scopes.counts.js';

export interface Progress {
  done: number;
  total: number;
}

export interface ScenarioProgress extends Progress {
  /** How many scenarios the session orchestrates. */
  scenarios: number;
}

/**
 * Two grouped queries for a page of sessions of team `teamId`: subtree counts by root scope, and scenario counts
 * by orchestrator. Returns, per session id, `progress` and (orchestrators only) `scenarioProgress`.
 */
export async function progressFor(
  db: Db,
  teamId: string,
  sessions: { id: string; rootId: string }[],
): Promise<Map<string, { progress: Progress; scenarioProgress?: ScenarioProgress }>> {
  const out = new Map<string, { progress: Progress; scenarioProgress?: ScenarioProgress }>();
  if (sessions.length === 0) return out;
  const scopes = [...new Set(sessions.map((s) => `session:${s.rootId}`))];
  const ids = sessions.map((s) => s.id);
  const [subtree, orchestrated] = await Promise.all([
    db<{ scope: string; done: number; total: number }[]>`
      select s.scope, c.total, c.done from unnest(${scopes}::text[]) s(scope)
        cross join lateral ${scopeCountsSql(db, teamId, db`s.scope`)} c`,
    db<{ orchestrator_id: string; scenarios: number; done: number; total: number }[]>`
      select s.orchestrator_id, count(*)::int as scenarios, sum(c.total)::int as total, sum(c.done)::int as done
        from scenarios s cross join lateral ${scopeCountsSql(db, db`s.team_id`, db`'scenario:' || s.id`)} c
       where s.team_id = ${teamId} and s.orchestrator_id = any(${ids}::text[])
       group by s.orchestrator_id`,
  ]);
  const byScope = new Map(subtree.map((r) => [r.scope, { done: r.done, total: r.total }]));
  const byOrch = new Map(orchestrated.map((r) => [r.orchestrator_id, { done: r.done, total: r.total, scenarios: r.scenarios }]));
  for (const s of sessions) {
    const v: { progress: Progress; scenarioProgress?: ScenarioProgress } = { progress: byScope.get(`session:${s.rootId}`) ?? { done: 0, total: 0 } };
    const o = byOrch.get(s.id);
    if (o) v.scenarioProgress = o;
    out.set(s.id, v);
  }
  return out;
}
