/**
 * The post-commit doorbell (src/db/doorbell.ts): a burst of commits shares one NOTIFY, and one
 * replica's rings are at least RING_INTERVAL_MS apart, while its own feeds are woken at once.
 * The Bell is the doorbell's own seam (the hub supplies the real one); no database is involved.
 */
import { describe, expect, it } from 'vitest';
import type { Sql } from '../../src/db/client.js';
import { RING_INTERVAL_MS, ringAfterCommit, setDoorbell } from '../../src/db/doorbell.js';

describe('doorbell', () => {
  it('should coalesce rings, keep sends RING_INTERVAL_MS apart, lose no topic and wake local feeds at once', async () => {
    const pool = {} as Sql;
    const sends: { at: number; topics: string[] }[] = [];
    const woken: string[] = [];
    setDoorbell(pool, {
      send: async (topics) => void sends.push({ at: performance.now(), topics }),
      wakeLocal: (topic) => woken.push(topic),
    });
    try {
      const rung: string[] = [];
      const t0 = performance.now();
      while (performance.now() - t0 < 40) {
        const topic = `todo:session:s-${rung.length % 7}`;
        rung.push(topic);
        ringAfterCommit(pool, [topic]);
        await new Promise((r) => setTimeout(r, 1));
      }
      await new Promise((r) => setTimeout(r, 3 * RING_INTERVAL_MS));
      expect(woken).toEqual(rung); // every ring woke this replica's feed immediately
      expect(sends.length).toBeGreaterThan(1);
      expect(sends.length).toBeLessThan(rung.length / 2); // rings were coalesced
      for (let i = 1; i < sends.length; i++) expect(sends[i].at - sends[i - 1].at).toBeGreaterThanOrEqual(RING_INTERVAL_MS - 2);
      expect(new Set(sends.flatMap((s) => s.topics))).toEqual(new Set(rung));
    } finally {
      setDoorbell(pool, undefined);
    }
  });
});
