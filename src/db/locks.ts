import type { Db } from './client.js';
import { DEFAULT_TEAM } from './schema/teams.js';

/**
 * Transaction-scoped advisory locks keyed by a hashed, namespaced name (never a magic number).
 * Keys are sorted before locking so two callers taking the same set never deadlock.
 * Used only for cross-row invariants (e.g. the cycle check of one scope's dependency DAG).
 */
export async function lockXact(tx: Db, ...names: string[]): Promise<void> {
  for (const name of [...new Set(names)].sort()) {
    await tx`select pg_advisory_xact_lock(hashtextextended(${name}, 0))`;
  }
}

/**
 * The name of a lock on one team's object: the same name in two teams is two locks, so
 * two teams' same-named graphs or scopes never serialise each other. The default team's is the
 * bare `name`, the key the previous release took, so a replica of it still serialises with this
 * one during a rolling upgrade.
 */
export const teamLock = (teamId: string, name: string) => (teamId === DEFAULT_TEAM ? name : `${teamId}:${name}`);

/** Tries to take a transaction-scoped advisory lock; false when another transaction holds it. */
export async function tryLockXact(tx: Db, name: string): Promise<boolean> {
  const [row] = await tx<{ ok: boolean }[]>`select pg_try_advisory_xact_lock(hashtextextended(${name}, 0)) as ok`;
  return row.ok;
}
