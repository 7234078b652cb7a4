/**
 * Progress counts for the wide session list (seed 000 "In gr list"; docs/seeds/todo-list.md §12): each
 * session shows its own subtree's `done/total` (the items of `session:<rootId>`, sub-items
 * included), and an orchestrator additionally shows the scenario-wide total of the scenarios it
 * orchestrates. Members never get the scenario total echoed onto them, so summing the column over
 * a fleet does not count a scenario's items once per member.
 */
import type { Db } from '../db/client.js';

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
      select scope, count(*)::int as total, (count(*) filter (where status = 'done'))::int as done
        from todos where team_id = ${teamId} and scope = any(${scopes}::text[]) group by scope`,
    db<{ orchestrator_id: string; scenarios: number; done: number; total: number }[]>`
      select s.orchestrator_id, count(distinct s.id)::int as scenarios, count(t.id)::int as total,
             (count(t.id) filter (where t.status = 'done'))::int as done
        from scenarios s left join todos t on t.team_id = s.team_id and t.scope = 'scenario:' || s.id
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
