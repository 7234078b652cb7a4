/**
 * The post-commit doorbell. Readers learn that a topic has new events from
 * `NOTIFY coord_events '<topic>'`, a wake-up only (never the payload). A NOTIFY inside the writing
 * transaction would make every commit take Postgres's cluster-wide notify lock, serialising all
 * writers (measured in bench/: half the claim cycle's throughput). So writers ring after commit,
 * and each replica coalesces its rings: at most one `pg_notify` statement in flight, carrying every
 * topic rung since the previous one, and at most one per `RING_INTERVAL_MS`. The replica's own feeds are woken at once, without a round
 * trip. A lost ring (a crash between commit and ring, or a writer that is not Coord) costs
 * latency, never an event: the hub's poll backstop finds it.
 */
import type { Db, Sql } from './client.js';

export interface Bell {
  /** Sends one NOTIFY per topic (one statement). */
  send(topics: string[]): Promise<void>;
  /** Wakes this replica's feed of a topic. */
  wakeLocal(topic: string): void;
}

interface BellState extends Bell {
  pending: Set<string>;
  inFlight: boolean;
  /** performance.now() of the last send (-Infinity: never). */
  lastSentAt: number;
}

const bells = new WeakMap<object, BellState>();
const topicsOfTx = new WeakMap<object, Set<string>>();

/** Installs (or with `undefined` removes) the doorbell of a pool; the event hub does at start/stop. */
export function setDoorbell(sql: Sql, bell: Bell | undefined): void {
  if (bell) bells.set(sql, { ...bell, pending: new Set(), inFlight: false, lastSentAt: -Infinity });
  else bells.delete(sql);
}

const isTransaction = (db: Db) => typeof (db as { savepoint?: unknown }).savepoint === 'function';

/**
 * Notes the topics a write touches. Inside a transaction they wait for its commit (`withTx` rings
 * them); on the pool (an autocommit statement that already ran) they ring now.
 */
export function noteTopics(db: Db, topics: Iterable<string>): void {
  if (!isTransaction(db)) {
    ringAfterCommit(db as Sql, topics);
    return;
  }
  let set = topicsOfTx.get(db);
  if (!set) topicsOfTx.set(db, (set = new Set()));
  for (const t of topics) set.add(t);
}

/** Called by `withTx` once the transaction `tx` has committed. */
export function ringCommitted(sql: Sql, tx: object): void {
  const set = topicsOfTx.get(tx);
  if (set) ringAfterCommit(sql, set);
}

/** Rings topics whose events have committed (no-op without a doorbell: the poll delivers). */
export function ringAfterCommit(sql: Sql, topics: Iterable<string>): void {
  const bell = bells.get(sql);
  if (!bell) return;
  for (const t of topics) {
    bell.pending.add(t);
    bell.wakeLocal(t);
  }
  if (!bell.inFlight) void flush(bell);
}

/**
 * Rings sent by one replica are at least this far apart (ms). Under load the commits of a few
 * milliseconds share one NOTIFY round trip (measured: a NOTIFY per claim-cycle batch was a third
 * of the server's Postgres writes); an idle replica's first ring goes out at once. Other
 * replicas' streams learn of a commit up to this much later; this replica's own streams are woken
 * without waiting.
 */
export const RING_INTERVAL_MS = 5;

async function flush(bell: BellState): Promise<void> {
  bell.inFlight = true;
  try {
    while (bell.pending.size > 0) {
      // Let the current burst of commits join this ring, and keep rings RING_INTERVAL_MS apart.
      const wait = bell.lastSentAt + RING_INTERVAL_MS - performance.now();
      await new Promise((r) => (wait > 0 ? setTimeout(r, Math.ceil(wait)) : setImmediate(r)));
      const topics = [...bell.pending];
      bell.pending.clear();
      bell.lastSentAt = performance.now();
      await bell.send(topics).catch(() => {});
    }
  } finally {
    bell.inFlight = false;
  }
}
