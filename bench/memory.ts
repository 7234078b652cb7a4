/**
 * Server memory: the resident set size (RSS, from /proc) of the Coord server process, idle, with
 * 1,000 open SSE streams, and after the claim benchmark. RSS includes V8 heap that the garbage
 * collector has not returned yet, so it is an upper bound on what the process needs.
 */
import { openPool } from './lib/http.js';
import { openMany, openSse } from './lib/sse.js';

export interface MemorySample {
  label: string;
  /** Server RSS in bytes. */
  rssBytes: number;
  /** Open streams as the server's /metrics reports them. */
  openStreams?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits `settleMs` and reads the server's RSS. */
export async function sampleRss(server: { rssBytes(): number }, label: string, settleMs = 1000): Promise<MemorySample> {
  await sleep(settleMs);
  return { label, rssBytes: server.rssBytes() };
}

/** Opens `count` streams on one topic, samples RSS and the server's own stream count, closes them. */
export async function rssWithStreams(
  server: { base: string; adminToken: string; rssBytes(): number },
  token: string,
  topic: string,
  count: number,
): Promise<MemorySample> {
  const streams = await openMany(count, 50, () => openSse(server.base, token, topic, () => {}));
  try {
    const sample = await sampleRss(server, `${count.toLocaleString('en-US')} open SSE streams`, 1500);
    const pool = openPool(server.base, 1);
    try {
      const res = await pool.request({ method: 'GET', path: '/metrics' });
      const text = await res.body.text();
      const m = /^coord_sse_open_streams (\d+)$/m.exec(text);
      if (m) sample.openStreams = Number(m[1]);
    } finally {
      await pool.close();
    }
    if (sample.openStreams !== undefined && sample.openStreams !== count) {
      throw new Error(`the server reports ${sample.openStreams} open streams, expected ${count}`);
    }
    return sample;
  } finally {
    for (const s of streams) s.close();
    await sleep(500);
  }
}
