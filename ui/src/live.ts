/**
 * Live views: a snapshot read through the API, then kept current by the topic's SSE stream.
 *
 * Order (gap-free): the stream is opened first; once the server has accepted it (`onOpen`: it
 * fixed the stream's starting point before answering) the snapshot is read. Every event after that
 * re-reads the snapshot (coalesced: at most one read in flight, one more queued), so what is shown
 * is always a whole, consistent answer of the API rather than a client-side patch. After a
 * disconnect the SDK resumes with `Last-Event-ID`: the events missed meanwhile arrive, are listed,
 * and cause one more read. A `resync` (cursor no longer retained) just re-reads.
 *
 * A hidden tab (Page Visibility API) holds no connection: it closes its stream, and when it is
 * visible again reopens it resuming after the last event it had (`after`, sent as
 * `Last-Event-ID`), which re-reads the snapshot and delivers the events missed meanwhile. A browser
 * keeps at most six connections per server, so six tabs each holding a stream would leave none
 * for their snapshot reads. Views without a stream stop polling while hidden.
 *
 * The connection state of the page's streams is shared (`useConnection`) so the header can say
 * when the page is not live, or when a snapshot read has been pending for more than a few seconds
 * (`pending`: the stream is open but what is shown may be stale).
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { CoordEvent, EventStream } from '../../sdk/src/index.js';
import { useSignedIn } from './api.js';

/**
 * `failed`: the server refused the stream for good (a topic the token may not read); the view shows why.
 * `pending`: the streams are open but a snapshot read has been waiting more than {@link SLOW_READ_MS}.
 * `paused`: the tab is hidden, so its streams are closed until it is visible again.
 */
export type LinkState = 'connecting' | 'live' | 'pending' | 'reconnecting' | 'failed' | 'paused' | 'off';

/** How long a snapshot read may be pending before the header stops saying `Live`. */
export const SLOW_READ_MS = 3000;

/** Page-wide connection state: the worst state of the open streams. */
const links = new Map<number, LinkState>();
const listeners = new Set<() => void>();
let nextLink = 1;
/** Snapshot reads pending longer than SLOW_READ_MS. */
let slowReads = 0;
function noteSlow(d: number) {
  slowReads += d;
  for (const l of listeners) l();
}
function setLink(id: number, s: LinkState | undefined) {
  if (s === undefined) links.delete(id);
  else links.set(id, s);
  for (const l of listeners) l();
}
function overall(): LinkState {
  const v = [...links.values()];
  if (v.length === 0) return 'off';
  if (v.includes('reconnecting')) return 'reconnecting';
  if (v.includes('failed')) return 'failed';
  if (v.includes('connecting')) return 'connecting';
  if (v.includes('paused')) return 'paused';
  return slowReads > 0 ? 'pending' : 'live';
}

/** The page's connection state, re-rendering on change. */
export function useConnection(): LinkState {
  const [s, set] = useState(overall());
  useEffect(() => {
    const l = () => set(overall());
    listeners.add(l);
    return () => void listeners.delete(l);
  }, []);
  return s;
}

export interface Live<T> {
  /** The last snapshot read (undefined until the first read returns). */
  data: T | undefined;
  /** The last read's error, if it failed (the previous data stays shown). */
  error: unknown;
  /** Events received on the stream since the view opened, newest first (at most `keep`). */
  events: CoordEvent[];
  /** Reads the snapshot again now (after an action, say). */
  reload(): void;
}

/**
 * `load()` read once the stream on `topic` is open, and again after every event on it. Without a
 * topic (a view spanning scopes), `load` is read once and again every `pollMs`.
 */
export function useLive<T>(topic: string | undefined, load: () => Promise<T>, deps: unknown[], opts: { keep?: number; pollMs?: number } = {}): Live<T> {
  const { client } = useSignedIn();
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [events, setEvents] = useState<CoordEvent[]>([]);
  const loadRef = useRef(load);
  loadRef.current = load;
  type Reader = { running: boolean; again: boolean; alive: boolean };
  const reader = useRef<Reader>({ running: false, again: false, alive: true });
  const keep = opts.keep ?? 200;

  const read = async () => {
    const r = reader.current;
    if (r.running) {
      r.again = true;
      return;
    }
    r.running = true;
    let slow = false;
    const timer = setTimeout(() => {
      slow = true;
      noteSlow(1);
    }, SLOW_READ_MS);
    try {
      do {
        r.again = false;
        try {
          const d = await loadRef.current();
          if (r.alive) {
            setData(d);
            setError(undefined);
          }
        } catch (err) {
          if (r.alive) setError(err);
        }
      } while (r.again && r.alive);
    } finally {
      r.running = false;
      clearTimeout(timer);
      if (slow) noteSlow(-1);
    }
  };

  useEffect(() => {
    const r: Reader = { running: false, again: false, alive: true };
    reader.current = r;
    setData(undefined);
    setEvents([]);
    const hidden = () => document.visibilityState === 'hidden';
    if (!topic) {
      void read();
      const t = setInterval(() => {
        if (!hidden()) void read();
      }, opts.pollMs ?? 5000);
      const onVisible = () => {
        if (!hidden()) void read();
      };
      document.addEventListener('visibilitychange', onVisible);
      return () => {
        r.alive = false;
        clearInterval(t);
        document.removeEventListener('visibilitychange', onVisible);
      };
    }
    const link = nextLink++;
    // The open stream, if any; `after` is where a reopened one resumes (the SDK's lastEventId).
    let stream: EventStream | undefined;
    let after: string | undefined;
    const open = () => {
      setLink(link, 'connecting');
      const s = client.events.follow(topic, {
        maxDelayMs: 5000,
        ...(after !== undefined ? { after: Number(after) } : {}),
        onOpen: () => {
          setLink(link, 'live');
          void read();
        },
        onReconnect: () => setLink(link, 'reconnecting'),
      });
      stream = s;
      void (async () => {
        try {
          for await (const e of s) {
            if (!r.alive || stream !== s) break;
            if (e.event !== 'resync') setEvents((prev) => [e, ...prev].slice(0, keep));
            void read();
          }
          // The SDK reconnects by itself; its iterator ends only when closed or refused for good.
          if (r.alive && stream === s) setLink(link, 'failed');
        } catch (err) {
          if (r.alive && stream === s) {
            setError(err);
            setLink(link, 'failed');
          }
        }
      })();
    };
    const close = () => {
      if (!stream) return;
      after = stream.lastEventId ?? after;
      const s = stream;
      stream = undefined;
      s.close();
    };
    const onVisibility = () => {
      if (hidden()) {
        close();
        setLink(link, 'paused');
      } else if (!stream) open();
    };
    if (hidden()) setLink(link, 'paused');
    else open();
    document.addEventListener('visibilitychange', onVisibility);
    return () => {
      r.alive = false;
      document.removeEventListener('visibilitychange', onVisibility);
      close();
      setLink(link, undefined);
    };
  }, [topic, ...deps]);

  return { data, error, events, reload: () => void read() };
}
