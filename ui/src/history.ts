/**
 * Event histories: a topic's retained events read from the JSON log (`GET /v1/events/log`), newest
 * first, joined with the live events a view's stream delivered since.
 *
 * A {@link History} reads from the oldest retained event once, then each `read()` continues after
 * the last event it has, so a view that re-reads after every event fetches only what is new. With
 * a subject (an item's id) the server keeps only the events about it (`subjectId`), so an item's
 * history costs a page however many events its scope has.
 */
import type { CoordClient, CoordEvent } from '../../sdk/src/index.js';

/** Events per log request (the API's maximum). */
export const PAGE = 1000;

export class History {
  private after = 0;
  /** Oldest first. */
  private all: CoordEvent[] = [];

  /** `keepNewest`: how many events are held (the oldest are dropped beyond it). */
  constructor(
    private readonly client: CoordClient,
    private readonly topic: string,
    private readonly subjectId?: string,
    private readonly keepNewest = 5000,
  ) {}

  /** Reads what is new since the last read; returns the history, newest first. */
  async read(): Promise<CoordEvent[]> {
    for (let restarted = false; ; ) {
      const page = await this.client.events.log(this.topic, { after: this.after, limit: PAGE, subjectId: this.subjectId });
      if (page.resync) {
        // The last event read is no longer retained: read what is, from the start, once.
        if (restarted) break;
        restarted = true;
        this.after = 0;
        this.all = [];
        continue;
      }
      for (const e of page.events)
        this.all.push({ seq: e.seq, event: e.event, topic: e.topic, data: { ...(e.data as Record<string, unknown>), at: e.at, actor: e.actor } });
      if (this.all.length > this.keepNewest) this.all.splice(0, this.all.length - this.keepNewest);
      this.after = page.nextAfter;
      if (page.events.length < PAGE) break;
    }
    return [...this.all].reverse();
  }
}

/**
 * The live events not yet in `past` (a re-read of the log already covers those delivered before
 * it), then `past`: each sequence number once, newest first.
 */
export function withLive(past: CoordEvent[], live: CoordEvent[]): CoordEvent[] {
  const seen = new Set(past.map((e) => e.seq));
  return [...live.filter((e) => !seen.has(e.seq)), ...past];
}
