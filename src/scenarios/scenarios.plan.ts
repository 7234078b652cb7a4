/**
 * The pure part of starting a scenario: checking the member list before anything is written.
 * Rules and their order are the todo seed's (000 "In scenarios"; docs/seeds/todo-list.md §6 "Scenario
 * graphs", docs/seeds/todo-list.md §13): unknown member names, duplicates, self references, a dependency on a member
 * without a task, a dependent without a task, cycles. Each is its own problem code, so a client
 * can tell them apart; the first violation found is reported.
 */
import { DomainError } from '../http/errors.js';
import { walkDag } from '../lib/dag.js';

/** One member as requested (after zod parsing). */
export interface MemberInput {
  name: string;
  /** An existing session: a shared member. Absent: a session is created for the member. */
  session?: string;
  /** The seed item's title; absent = a prompt-only member (no seed). */
  task?: string;
  /** Member names whose seeds this member's seed depends on. */
  dependsOn?: string[];
  /** The member completes only once it has published a result. */
  requiresResult?: boolean;
}

/**
 * A name that could be mistaken for a scenario id (`sc-` + 16 hex) is refused, because
 * `scenario:<x>` accepts either and resolves ids first.
 */
export const ID_LIKE = /^sc-[0-9a-f]{16}$/;

/** Scenario and member names: 1–100 characters, letters, digits, `.`, `_`, `-`, starting alphanumeric. */
export const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/**
 * Checks the member graph. Returns the members in topological order of their seeds (every member
 * after the members it depends on; ties keep request order), which is the order the seeds are
 * inserted in, so a seed's position is after its dependencies' positions.
 * Throws 422 `scenario_member_unknown`, `scenario_member_duplicate`, `scenario_member_self_dependency`,
 * `scenario_dependency_without_task`, `scenario_dependent_without_task`, `scenario_dependency_cycle`.
 */
export function checkMembers(members: MemberInput[]): MemberInput[] {
  const byName = new Map<string, MemberInput>();
  // Names first: every later rule looks members up by name.
  for (const m of members) {
    if (byName.has(m.name)) {
      throw new DomainError('scenario_member_duplicate', `scenario member "${m.name}" is listed twice`, { member: m.name });
    }
    byName.set(m.name, m);
  }
  for (const m of members) {
    for (const dep of m.dependsOn ?? []) {
      if (!byName.has(dep)) {
        throw new DomainError('scenario_member_unknown', `scenario member "${m.name}" depends on unknown member "${dep}"`, { member: m.name, dependency: dep });
      }
    }
  }
  const sessions = new Map<string, string>();
  for (const m of members) {
    const seen = new Set<string>();
    for (const dep of m.dependsOn ?? []) {
      if (seen.has(dep)) {
        throw new DomainError('scenario_member_duplicate', `scenario member "${m.name}" lists dependency "${dep}" twice`, { member: m.name, dependency: dep });
      }
      seen.add(dep);
    }
    if (m.session !== undefined) {
      const other = sessions.get(m.session);
      if (other !== undefined) {
        throw new DomainError('scenario_member_duplicate', `scenario members "${other}" and "${m.name}" name the same session ${m.session}`, {
          member: m.name,
          session: m.session,
        });
      }
      sessions.set(m.session, m.name);
    }
  }
  for (const m of members) {
    if ((m.dependsOn ?? []).includes(m.name)) {
      throw new DomainError('scenario_member_self_dependency', `scenario member "${m.name}" cannot depend on itself`, { member: m.name });
    }
  }
  for (const m of members) {
    for (const dep of m.dependsOn ?? []) {
      if (byName.get(dep)!.task === undefined) {
        throw new DomainError(
          'scenario_dependency_without_task',
          `scenario member "${m.name}" depends on "${dep}", which has no task (only a member with a task has a seed item to wait for)`,
          { member: m.name, dependency: dep },
        );
      }
    }
  }
  for (const m of members) {
    if ((m.dependsOn ?? []).length > 0 && m.task === undefined) {
      throw new DomainError(
        'scenario_dependent_without_task',
        `scenario member "${m.name}" has dependencies but no task (there is no seed item to hold them)`,
        {
          member: m.name,
        },
      );
    }
  }
  return topologicalOrder(members, byName);
}

/** Members dependencies-first (DFS in input order); a cycle is reported as its path (shared walker: src/lib/dag.ts). */
function topologicalOrder(members: MemberInput[], byName: Map<string, MemberInput>): MemberInput[] {
  const walk = walkDag(
    members.map((m) => ({ id: m.name, dependsOn: m.dependsOn ?? [] })),
    { rootOrder: 'input' },
  );
  if (walk.cycle) {
    throw new DomainError('scenario_dependency_cycle', `scenario member dependency cycle: ${walk.cycle.join(' → ')}`, { cycle: walk.cycle });
  }
  return walk.order.map((name) => byName.get(name)!);
}
