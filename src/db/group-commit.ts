/**
 * Group commit: requests that arrive while an earlier batch of the same kind is running are sent
 * together, as one call, when it returns. Natural batching, without a timer: an idle replica runs
 * a lone request at the end of the current event-loop turn (`setImmediate`: no added wait, but
 * the requests read in the same I/O phase go with it); under load, the requests that queued
 * during one round trip become the next batch, so the number of round trips, transactions and
 * commits grows with the number of batches, not requests. Used by the claim cycle (`next`, the owner's `done`;
 * migrations/0004_group_commit.sql), where each request is tiny and a round trip, a commit and a
 * backend wake-up cost more than the work.
 *
 * Failure isolation: a batch of more than one request that the database refused (a deadlock
 * between batches, any error Postgres reported, which rolled the batch back) is retried one
 * request at a time, so each request gets its own outcome and one request's error never becomes
 * another's. A batch whose outcome is unknown (the connection was lost: it may have committed) is
 * not retried; every request in it gets that error, as a lone request would.
 */

/** Runs a batch; must return one result per request, in request order. */
export type BatchRunner<Req, Res> = (key: string, requests: Req[]) => Promise<Res[]>;

export interface GroupCommitOptions {
  /** Most requests in one batch (1 turns batching off: every request runs alone). */
  maxBatch: number;
  /** Batches of one key running at once (each holds a pool connection while it runs). */
  maxInFlight: number;
  /** True when `err` proves the batch committed nothing, so its requests may run again alone. */
  rolledBack: (err: unknown) => boolean;
}

interface Pending<Req, Res> {
  req: Req;
  resolve: (r: Res) => void;
  reject: (e: unknown) => void;
}

interface Lane<Req, Res> {
  queue: Pending<Req, Res>[];
  inFlight: number;
  /** A dispatch is due at the end of the current event-loop turn. */
  scheduled: boolean;
}

export class GroupCommit<Req, Res> {
  private readonly lanes = new Map<string, Lane<Req, Res>>();
  /** Batches run so far and requests they carried (for tests and metrics). */
  readonly stats = { batches: 0, requests: 0, retriedAlone: 0 };

  constructor(
    private readonly run: BatchRunner<Req, Res>,
    private readonly opts: GroupCommitOptions,
  ) {}

  /**
   * Queues `req` in the lane `key` (requests of one key share a batch) and resolves with its own
   * result, or rejects with its own error.
   */
  submit(key: string, req: Req): Promise<Res> {
    return new Promise<Res>((resolve, reject) => {
      let lane = this.lanes.get(key);
      if (!lane) this.lanes.set(key, (lane = { queue: [], inFlight: 0, scheduled: false }));
      lane.queue.push({ req, resolve, reject });
      if (lane.inFlight < this.opts.maxInFlight && !lane.scheduled) {
        // Start at the end of this turn of the event loop, not at once: requests read in the same
        // I/O phase (a burst from many agents) then share the batch instead of the first one
        // going alone and the rest waiting for its round trip.
        lane.scheduled = true;
        setImmediate(() => {
          lane.scheduled = false;
          if (lane.inFlight < this.opts.maxInFlight && lane.queue.length > 0) void this.dispatch(key, lane);
        });
      }
    });
  }

  private async dispatch(key: string, lane: Lane<Req, Res>): Promise<void> {
    lane.inFlight++;
    try {
      while (lane.queue.length > 0) {
        const batch = lane.queue.splice(0, Math.max(1, this.opts.maxBatch));
        this.stats.batches++;
        this.stats.requests += batch.length;
        await this.runBatch(key, batch);
      }
    } finally {
      lane.inFlight--;
      if (lane.inFlight === 0 && lane.queue.length === 0 && !lane.scheduled) this.lanes.delete(key);
    }
  }

  private async runBatch(key: string, batch: Pending<Req, Res>[]): Promise<void> {
    let results: Res[];
    try {
      results = await this.run(
        key,
        batch.map((p) => p.req),
      );
    } catch (err) {
      if (batch.length === 1 || !this.opts.rolledBack(err)) return batch.forEach((p) => p.reject(err));
      // Nothing of the batch committed: give every request its own outcome.
      this.stats.retriedAlone += batch.length;
      await Promise.all(
        batch.map(async (p) => {
          try {
            const [r] = await this.run(key, [p.req]);
            p.resolve(r);
          } catch (e) {
            p.reject(e);
          }
        }),
      );
      return;
    }
    if (results.length !== batch.length) {
      const err = new Error(`group commit: ${results.length} results for ${batch.length} requests`);
      return batch.forEach((p) => p.reject(err));
    }
    batch.forEach((p, i) => p.resolve(results[i]));
  }
}
