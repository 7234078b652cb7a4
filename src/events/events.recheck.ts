/**
 * The backstop of an open event stream's authority. A stream ends at once when its session stops
 * or its token is revoked or rotated (the doorbell rings on every replica, events.hub.ts) and when
 * its token expires (a timer, events.routes.ts). A ring can be lost while a replica's LISTEN
 * connection reconnects, and a caller can lose access to a scope without a ring (a scenario member
 * removed, say), so every open stream is also re-checked against the database now and then.
 *
 * Each stream used to re-check itself at each of its heartbeats: one token lookup (and for a
 * scenario, graph or metagit scope one membership query) per stream per heartbeat interval, which
 * was two thirds of a replica's idle CPU with 10,000 open streams (bench/README.md).
 * Here one pass per interval re-checks every stream of the replica: one statement for all their
 * tokens ({@link principalsForHashes}), then the scope rule once per distinct (principal, scope).
 * A stream is re-checked within one interval plus the pass's own time, as before.
 */
import { hashToken } from '../lib/ids.js';
import { principalsForHashes } from '../auth/principals.repo.js';
import type { Principal } from '../auth/principal.js';
import type { Sql } from '../db/client.js';
import { accessToScope, type TeamScope } from '../scopes/scopes.js';

interface Watched {
  hash: string;
  /** The canonical team scope the stream reads (its topic without `todo:`). */
  scope: TeamScope;
  end: () => void;
}

export class StreamRecheck {
  private readonly streams = new Set<Watched>();
  private timer: NodeJS.Timeout | undefined;
  private running = false;

  /**
   * @param intervalMs how often every open stream is re-checked (the SSE heartbeat interval, ms).
   * @param onError  a failed pass (e.g. a database outage) is reported here and the streams are
   *                 left open: the next pass tries again.
   */
  constructor(
    private readonly sql: Sql,
    private readonly intervalMs: number,
    private readonly onError: (err: unknown) => void = () => {},
  ) {}

  /** Watches a stream opened with `token` on `scope`'s topic; `end` closes it. Returns the un-watch. */
  watch(token: string, scope: TeamScope, end: () => void): () => void {
    const w: Watched = { hash: hashToken(token), scope, end };
    this.streams.add(w);
    if (!this.timer) {
      this.timer = setInterval(() => void this.pass(), this.intervalMs);
      this.timer.unref();
    }
    return () => {
      this.streams.delete(w);
      if (!this.streams.size) this.stop();
    };
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One re-check of every watched stream; ends those whose token or scope access is gone. */
  async pass(): Promise<void> {
    if (this.running || !this.streams.size) return;
    this.running = true;
    try {
      const streams = [...this.streams];
      const principals = await principalsForHashes(this.sql, [...new Set(streams.map((w) => w.hash))]);
      const access = new Map<string, Promise<boolean>>();
      const inScope = (p: Principal, scope: TeamScope) => {
        const key = `${p.kind}\u0000${p.id}\u0000${scope.teamId}\u0000${scope.scope}`;
        let a = access.get(key);
        if (!a) access.set(key, (a = accessToScope(this.sql, p, scope).then((x) => x.inScope)));
        return a;
      };
      for (const w of streams) {
        const p = principals.get(w.hash);
        if (!p || !(await inScope(p, w.scope))) w.end();
      }
    } catch (err) {
      this.onError(err);
    } finally {
      this.running = false;
    }
  }
}
