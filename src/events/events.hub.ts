/**
 * One LISTEN connection per replica fans events out to that replica's SSE streams.
 *
 * NOTIFY is only a doorbell (docs/architecture.md §D4): the payload is the team and topic (`streamKey`). On a ring, the
 * topic's feed reads the table after its cursor (see events.repo.ts for why that is gap-free).
 * A poll every `pollMs` is the backstop for lost notifications (e.g. while the LISTEN connection
 * reconnects), and a short re-read follows whenever rows are visible but held behind a running
 * transaction. Each topic with live subscribers has one feed, so 500 subscribers of one topic
 * cost one query per wake-up, not 500.
 */
import type { Sql } from '../db/client.js';
import { setDoorbell } from '../db/doorbell.js';
import { readAfter, streamKey, type Cursor, type EventRow } from './events.repo.js';

export interface Subscriber {
  /** Delivers a batch in order; returns false when the subscriber is gone or too slow. */
  deliver(events: EventRow[]): boolean;
  /** Last delivered position. */
  cursor: Cursor;
}

const before = (a: Cursor, b: Cursor) => {
  const ta = BigInt(a.tx);
  const tb = BigInt(b.tx);
  return ta < tb || (ta === tb && a.id < b.id);
};

class TopicFeed {
  subscribers = new Set<Subscriber>();
  cursor: Cursor;
  private running = false;
  private again = false;
  private heldTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly hub: EventHub,
    readonly teamId: string,
    readonly topic: string,
    start: Cursor,
  ) {
    this.cursor = start;
  }

  /** Reads and fans out until caught up; concurrent wakes coalesce into one more pass. */
  async wake(): Promise<void> {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    try {
      do {
        this.again = false;
        for (;;) {
          const { events, held } = await readAfter(this.hub.sql, this.teamId, this.topic, this.cursor, 500);
          if (events.length === 0) {
            if (held && !this.heldTimer) {
              this.heldTimer = setTimeout(() => {
                this.heldTimer = undefined;
                void this.wake();
              }, this.hub.heldRetryMs);
            }
            break;
          }
          const last = events[events.length - 1];
          this.cursor = { tx: last.tx, id: last.id };
          for (const s of this.subscribers) {
            const fresh = events.filter((e) => before(s.cursor, { tx: e.tx, id: e.id }));
            if (fresh.length && !s.deliver(fresh)) this.subscribers.delete(s);
          }
          if (events.length < 500) break;
        }
      } while (this.again && this.subscribers.size > 0);
    } catch (err) {
      this.hub.onError(err);
    } finally {
      this.running = false;
    }
  }

  close() {
    if (this.heldTimer) clearTimeout(this.heldTimer);
  }
}

/** Doorbell prefix announcing a stopped or deleted session (see `trackSessionStream`). */
export const SESSION_STOPPED = 'session-stopped:';
/** Doorbell prefix announcing a revoked or rotated token (see `trackTokenStream`). */
export const TOKEN_REVOKED = 'token-revoked:';

export class EventHub {
  private feeds = new Map<string, TopicFeed>();
  /** Streams to end on a ring, by the ring (`session-stopped:<id>` or `token-revoked:<id>`). */
  private trackedStreams = new Map<string, Set<() => void>>();
  private stopListeners: ((sessionId: string) => void)[] = [];
  private revokeListeners: ((tokenId: string) => void)[] = [];

  /** Calls `listener` whenever any replica stops or deletes a session (e.g. to evict caches). */
  onSessionStopped(listener: (sessionId: string) => void): void {
    this.stopListeners.push(listener);
  }
  /** Calls `listener` whenever any replica revokes or rotates a token (e.g. to evict caches). */
  onTokenRevoked(listener: (tokenId: string) => void): void {
    this.revokeListeners.push(listener);
  }
  private listening: { unlisten(): Promise<void> } | undefined;
  private poll: NodeJS.Timeout | undefined;
  readonly heldRetryMs = 25;
  /** Times the LISTEN connection (re)subscribed; tests read it to see reconnects. */
  listenCount = 0;

  constructor(
    readonly sql: Sql,
    private readonly pollMs = 1000,
    readonly onError: (err: unknown) => void = () => {},
  ) {}

  /** Starts listening. postgres.js re-establishes a dropped LISTEN connection and calls `onlisten` again; every (re)listen wakes every feed so nothing sent during the gap is missed. */
  async start(): Promise<void> {
    setDoorbell(this.sql, {
      send: async (topics) => void (await this.sql`select pg_notify('coord_events', t) from unnest(${topics}::text[]) t`),
      wakeLocal: (topic) => this.onRing(topic),
    });
    this.listening = await this.sql.listen(
      'coord_events',
      (topic) => this.onRing(topic),
      () => {
        this.listenCount++;
        for (const f of this.feeds.values()) void f.wake();
      },
    );
    this.poll = setInterval(() => {
      for (const f of this.feeds.values()) void f.wake();
    }, this.pollMs);
    this.poll.unref();
  }

  /** A doorbell ring: a team's topic with new events (its {@link streamKey}), or `session-stopped:<id>` / `token-revoked:<id>` (end those streams). */
  private onRing(topic: string): void {
    const listeners = topic.startsWith(SESSION_STOPPED) ? this.stopListeners : topic.startsWith(TOKEN_REVOKED) ? this.revokeListeners : undefined;
    if (!listeners) return void this.feeds.get(topic)?.wake();
    const id = topic.slice(topic.indexOf(':') + 1);
    for (const listener of listeners) listener(id);
    for (const end of this.trackedStreams.get(topic) ?? []) end();
  }

  /**
   * Registers a stream opened with a session's token; it is ended as soon as any replica stops or
   * deletes that session (the stop rings `session-stopped:<id>` after its commit). Returns the
   * unregister function.
   */
  trackSessionStream(sessionId: string, end: () => void): () => void {
    return this.track(SESSION_STOPPED + sessionId, end);
  }

  /** Registers a stream opened with a token; it is ended as soon as any replica revokes or rotates that token. Returns the unregister function. */
  trackTokenStream(tokenId: string, end: () => void): () => void {
    return this.track(TOKEN_REVOKED + tokenId, end);
  }

  private track(ring: string, end: () => void): () => void {
    let set = this.trackedStreams.get(ring);
    if (!set) this.trackedStreams.set(ring, (set = new Set()));
    set.add(end);
    return () => {
      set!.delete(end);
      if (set!.size === 0) this.trackedStreams.delete(ring);
    };
  }

  /**
   * Joins a caught-up subscriber to its topic's live feed. The caller must have read the table up
   * to at least the feed's cursor (see `catchUp`), so the feed's next batch follows on with no gap;
   * batches are filtered by the subscriber's own cursor, so there are no duplicates either.
   */
  join(teamId: string, topic: string, s: Subscriber): () => void {
    const key = streamKey(teamId, topic);
    let feed = this.feeds.get(key);
    if (!feed) {
      feed = new TopicFeed(this, teamId, topic, s.cursor);
      this.feeds.set(key, feed);
    }
    feed.subscribers.add(s);
    void feed.wake();
    return () => {
      const f = this.feeds.get(key);
      if (!f) return;
      f.subscribers.delete(s);
      if (f.subscribers.size === 0) {
        f.close();
        this.feeds.delete(key);
      }
    };
  }

  /** The feed cursor of a team's topic, if it has a live feed. */
  feedCursor(teamId: string, topic: string): Cursor | undefined {
    return this.feeds.get(streamKey(teamId, topic))?.cursor;
  }

  /**
   * Reads from the subscriber's cursor until it is level with the topic's feed (or the table's
   * finished rows), delivering as it goes, then joins the feed. Returns the leave function.
   */
  async catchUp(teamId: string, topic: string, s: Subscriber, isOpen: () => boolean): Promise<(() => void) | undefined> {
    for (;;) {
      if (!isOpen()) return undefined;
      const { events } = await readAfter(this.sql, teamId, topic, s.cursor, 500);
      if (events.length > 0) {
        if (!s.deliver(events)) return undefined;
        continue;
      }
      const feed = this.feedCursor(teamId, topic);
      if (!feed || !before(s.cursor, feed)) return this.join(teamId, topic, s);
    }
  }

  get topicCount(): number {
    return this.feeds.size;
  }

  async stop(): Promise<void> {
    setDoorbell(this.sql, undefined);
    if (this.poll) clearInterval(this.poll);
    for (const f of this.feeds.values()) f.close();
    this.feeds.clear();
    await this.listening?.unlisten().catch(() => {});
  }
}
