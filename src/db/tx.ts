import type postgres from 'postgres';
import { ringCommitted } from './doorbell.js';
import { declareEventWriter } from './event-writer.js';
import type { Sql } from './client.js';

/** SQLSTATEs worth retrying a whole transaction for: serialization failure, deadlock. */
const RETRYABLE = new Set(['40001', '40P01']);

const startObservers = new WeakMap<Sql, (seconds: number) => void>();

/**
 * Installs (or with `undefined` removes) a pool's transaction-start observer: for every attempt
 * of {@link withTx} it gets the seconds from asking for the transaction to running its first
 * statement, which is the wait for a free pool connection plus the BEGIN round trip (postgres.js
 * exposes no pool statistics of its own). The metrics module installs it.
 */
export function observeTxStart(sql: Sql, observer: ((seconds: number) => void) | undefined): void {
  if (observer) startObservers.set(sql, observer);
  else startObservers.delete(sql);
}

/**
 * Runs `fn` in one transaction (READ COMMITTED unless told otherwise), retrying it on
 * serialization failure or deadlock up to 5 times with jittered backoff. Everything `fn` writes,
 * events included, commits together or not at all; after the commit it rings the event doorbell.
 * The transaction declares itself an event writer before `fn` runs (`declareEventWriter`, sent
 * with `fn`'s first statement), so events it writes are never passed over by a reader.
 */
export async function withTx<T>(
  sql: Sql,
  fn: (tx: postgres.TransactionSql) => Promise<T>,
  opts: { isolation?: 'read committed' | 'repeatable read' | 'serializable' } = {},
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      const mode = opts.isolation ? `isolation level ${opts.isolation}` : '';
      let txRef: object | undefined;
      const asked = performance.now();
      const body = (tx: postgres.TransactionSql) => {
        startObservers.get(sql)?.((performance.now() - asked) / 1000);
        txRef = tx;
        // Both settle: the lock fails only with the transaction, and then it holds the cause.
        return Promise.all([declareEventWriter(tx), fn(tx)]).then(([, out]) => out);
      };
      const result = (await (mode ? sql.begin(mode, body) : sql.begin(body))) as T;
      // Committed: ring the topics its events went to (doorbell.ts).
      if (txRef) ringCommitted(sql, txRef);
      return result;
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (!code || !RETRYABLE.has(code) || attempt >= 4) throw err;
      await new Promise((r) => setTimeout(r, 5 * 2 ** attempt + Math.random() * 10));
    }
  }
}
