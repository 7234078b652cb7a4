/**
 * Event histories: a topic's retained events read from the JSON log (`GET /v1/events/log`), newest
 * first, joined with the live events a view's stream delivered since.
 */
import type { CoordClient, CoordEvent } from '../../sdk/src/index.js';

/** Retained events of `topic` for which `keep` holds, newest first (at most `pages` pages of 500). */
export async function history(client: CoordClient, topic: string, keep: (e: CoordEvent) => boolean, pages = 40): Promise<CoordEvent[]> {
  const out: CoordEvent[] = [];
  let after = 0;
  for (let i = 0; i < pages; i++) {
    const page = await client.events.log(topic, { after, limit: 500 });
    for (const e of page.events) {
      const ev: CoordEvent = { seq: e.seq, event: e.event, topic: e.topic, data: { ...(e.data as Record<string, unknown>), at: e.at, actor: e.actor } };
      if (keep(ev)) out.push(ev);
    }
    if (page.events.length < 500 || page.nextAfter === null) break;
    after = page.nextAfter;
  }
  return out.reverse();
}

/**
 * The live events not yet in `past` (a re-read of the log already covers those delivered before
 * it), then `past`: each sequence number once, newest first.
 */
export function withLive(past: CoordEvent[], live: CoordEvent[]): CoordEvent[] {
  const seen = new Set(past.map((e) => e.seq));
  return [...live.filter((e) => !seen.has(e.seq)), ...past];
}
