import type { Db } from './client.js';

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

/** Tries to take a transaction-scoped advisory lock; false when another transaction holds it. */
export async function tryLockXact(tx: Db, name: string): Promise<boolean> {
  const [row] = await tx<{ ok: boolean }[]>`select pg_try_advisory_xact_lock(hashtextextended(${name}, 0)) as ok`;
  return row.ok;
}
