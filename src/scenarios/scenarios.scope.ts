/**
 * The `scenario:` scope kind (seed 000 "Scoping", "In scenarios"; docs/seeds/todo-list.md §2).
 *
 * - The canonical scope string is `scenario:<scenario-id>`; a request may name the scenario by
 *   name or id after `scenario:` (ids are tried first; names can never look like ids).
 * - In scope: users, the orchestrator, and every member (created or shared).
 * - Override authority: users and the orchestrator. Members, shared or not, are not.
 * - Outsiders get the 404 of a scenario that does not exist (`scope_not_found` through
 *   src/scopes/scopes.ts, `scenario_not_found` on the scenario routes).
 *
 * Importing this module registers the kind; `scenarios.routes.ts` imports it, and `src/modules.ts`
 * registers the routes, so the kind exists whenever the app is built.
 */
import type { Principal } from '../auth/principal.js';
import type { Db } from '../db/client.js';
import type { ScopeKind } from '../scopes/scopes.js';

/** The scope string of a scenario id. */
export const scenarioScope = (id: string) => `scenario:${id}`;

/** Looks a scenario up by id, then by name. */
export async function findScenarioId(db: Db, teamId: string, nameOrId: string): Promise<string | undefined> {
  const [row] = await db<{ id: string }[]>`
    select id from (
      select id, 0 as rank from scenarios where id = ${nameOrId} and team_id = ${teamId}
      union all
      select id, 1 from scenarios where team_id = ${teamId} and name = ${nameOrId}) x
    order by rank limit 1`;
  return row?.id;
}

/**
 * Membership and authority of `p` in scenario `scenarioId` (one indexed probe): users are in
 * scope with override; the orchestrator likewise; members are in scope only. Unknown → nothing.
 */
export async function scenarioAccess(db: Db, p: Principal, scenarioId: string): Promise<{ inScope: boolean; override: boolean }> {
  if (p.kind === 'user') return { inScope: true, override: true };
  const [row] = await db<{ orchestrator: boolean; member: boolean }[]>`
    select s.orchestrator_id = ${p.id} as orchestrator,
           exists (select 1 from scenario_members m where m.scenario_id = s.id and m.session_id = ${p.id}) as member
      from scenarios s where s.id = ${scenarioId} and s.team_id = ${p.teamId}`;
  if (!row) return { inScope: false, override: false };
  return { inScope: row.orchestrator || row.member, override: row.orchestrator };
}

/**
 * The refusal of a scenario that does not exist *or* that the caller may not read, word for word
 * the same (an outsider cannot tell another orchestrator's scenario from a missing
 * one). The seed names the outsider's refusal ("not authorized for scenario "x"'s todo list",
 * docs/seeds/todo-list.md §2); its wording survives in the message, its 403 does not (docs/architecture.md §D2).
 */
export const scenarioNotFound = (nameOrId: string) =>
  `scenario "${nameOrId}" not found, or not authorized for its todo list (its orchestrator, its members and its team’s operators read it)`;

/** The `scenario:` scope kind; buildApp registers it (src/modules.ts `wireModules`). */
export const scenarioScopeKind: ScopeKind = {
  async resolve(db, teamId, name) {
    const id = await findScenarioId(db, teamId, name);
    return id ? { scope: scenarioScope(id), key: id } : undefined;
  },
  access: scenarioAccess,
};
