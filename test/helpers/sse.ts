/**
 * A minimal SSE reader for tests (fetch + line parser): collects events, exposes heartbeats and
 * lets a test close the connection. Production clients use the SDK's `events.follow`.
 */
export interface SseEvent {
  id?: string;
  event: string;
  data: any;
}

export interface SseStream {
  events: SseEvent[];
  comments: string[];
  status: number;
  headers: Headers;
  /** Resolves when `pred` holds over the events received so far (or rejects after `ms`). */
  until(pred: (events: SseEvent[]) => boolean, ms?: number): Promise<void>;
  close(): void;
  closed: Promise<void>;
}

export async function openSse(url: string, token: string, headers: Record<string, string> = {}): Promise<SseStream> {
  const ctrl = new AbortController();
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream', ...headers }, signal: ctrl.signal });
  const events: SseEvent[] = [];
  const comments: string[] = [];
  const waiters = new Set<() => void>();
  let closedResolve!: () => void;
  const closed = new Promise<void>((r) => (closedResolve = r));
  if (res.status === 200 && res.body) {
    (async () => {
      const reader = res.body!.getReader();
      const dec = new TextDecoder();
      let buf = '';
      let cur: { id?: string; event?: string; data: string[] } = { data: [] };
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += dec.decode(value, { stream: true });
          let i;
          while ((i = buf.indexOf('\n')) >= 0) {
            const line = buf.slice(0, i);
            buf = buf.slice(i + 1);
            if (line === '') {
              if (cur.data.length || cur.event) {
                const raw = cur.data.join('\n');
                let data: unknown = raw;
                try {
                  data = JSON.parse(raw);
                } catch {
                  /* keep raw */
                }
                events.push({ id: cur.id, event: cur.event ?? 'message', data });
                for (const w of waiters) w();
              }
              cur = { data: [] };
            } else if (line.startsWith(':')) {
              comments.push(line.slice(1).trim());
              for (const w of waiters) w();
            } else {
              const c = line.indexOf(':');
              const field = c < 0 ? line : line.slice(0, c);
              const v = c < 0 ? '' : line.slice(c + 1).replace(/^ /, '');
              if (field === 'id') cur.id = v;
              else if (field === 'event') cur.event = v;
              else if (field === 'data') cur.data.push(v);
            }
          }
        }
      } catch {
        /* aborted */
      } finally {
        closedResolve();
        for (const w of waiters) w();
      }
    })();
  } else {
    closedResolve();
  }
  return {
    events,
    comments,
    status: res.status,
    headers: res.headers,
    closed,
    close: () => ctrl.abort(),
    until(pred, ms = 10_000) {
      return new Promise<void>((resolve, reject) => {
        if (pred(events)) return resolve();
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`SSE condition not met within ${ms} ms (${events.length} events)`));
        }, ms);
        const check = () => {
          if (pred(events)) {
            clearTimeout(timer);
            waiters.delete(check);
            resolve();
          }
        };
        waiters.add(check);
      });
    },
  };
}
