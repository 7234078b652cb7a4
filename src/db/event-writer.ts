/**
 * Which transactions write events (the readers' horizon in src/events/events.repo.ts waits only for
 * those). Lives on the schema floor because `withTx` (tx.ts) declares every transaction it runs,
 * and the outbox checks the declaration before it appends.
 */
import type { Db } from './client.js';

/**
 * Declares the transaction `tx` an event writer before it writes anything (why: src/events/events.repo.ts):
 * it locks `events` in ROW EXCLUSIVE mode (what an insert takes; it blocks no other writer or
 * reader), sent without waiting, so it travels with the transaction's first statement and adds no
 * round trip. `withTx` calls it for every transaction it runs.
 */
export function declareEventWriter(tx: Db): Promise<unknown> {
  declared.add(tx);
  return tx`lock table events in row exclusive mode`.execute();
}

/** Transactions that declared themselves event writers. */
const declared = new WeakSet<object>();

/**
 * Throws when `db` is a transaction that did not declare itself an event writer before its first
 * write: an event it wrote could sort below a horizon a reader had already passed. A pool (each
 * statement its own transaction) needs no declaration: the insert locks `events` first.
 */
export function assertEventWriter(db: Db): void {
  if ('savepoint' in db && !declared.has(db)) {
    throw new Error('events are written in a transaction of withTx (src/db/tx.ts), which declares it an event writer first');
  }
}
