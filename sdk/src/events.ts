/**
 * `client.events`: a topic's events (docs/architecture.md §D4) as a JSON page (`log`) or as a live
 * Server-Sent Events stream that survives disconnects and server restarts (`follow`).
 *
 * `follow` parses the stream with `eventsource-parser` over `fetch` (so it can send the
 * `Authorization` header), remembers the last `id:` it delivered and reconnects with exponential
 * backoff and jitter, sending `Last-Event-ID`. The server resumes gap-free and duplicate-free
 * from that sequence; if the cursor is no longer retained it sends one `resync` event (re-read
 * state, then keep consuming).
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { ConnectionFailed, type CoordError, InvalidRequest, NotFound, Unauthorized, Forbidden, errorFromResponse, RateLimited, Unavailable } from './errors.js';
import type { Transport } from './transport.js';
import type { EventLogPage } from './types.js';

/** One event delivered by `follow`. */
export interface CoordEvent {
  /** The event sequence number (the SSE `id:`); undefined for `resync`. */
  seq?: number;
  /** The seed's event name: added, claimed, done, blocked, todo, dependency-blocked, unblocked, updated, assigned, removed, … or `resync`. */
  event: string;
  /** The topic it was read from. */
  topic: string;
  /** The JSON payload: `{event, id, scope, status, owner?, blockedBy?, revision, seq, at, actor, …}` (`actor`: who made the change, `{kind, id, token}`, or null). */
  data: Record<string, unknown>;
}

/** Options of `events.follow`. */
export interface FollowOptions {
  /** Resume after this sequence number (`0` replays everything retained). Default: start at the head. */
  after?: number;
  /** Stops the stream (the iterator then finishes without an error). */
  signal?: AbortSignal;
  /** First reconnect delay in ms (default 250); doubles per failed attempt. */
  minDelayMs?: number;
  /** Reconnect delay cap in ms (default 30 000). */
  maxDelayMs?: number;
  /** Reconnect when nothing (not even a heartbeat comment) arrived for this long, in ms (default 45 000; the server beats every 15 s). */
  idleTimeoutMs?: number;
  /** Called before each reconnect with the attempt number (1-based), the delay in ms and the cause. */
  onReconnect?: (info: { attempt: number; delayMs: number; cause: unknown; lastEventId?: string }) => void;
  /**
   * Called each time the server accepts the stream (its 200), before any event of that connection.
   * The server fixed the stream's starting point before answering, so a snapshot read after the
   * first `onOpen` misses nothing the stream will not deliver. `reconnect` is false the first time;
   * `lastEventId` is what the connection resumes after.
   */
  onOpen?: (info: { reconnect: boolean; lastEventId?: string }) => void;
}

/** A live event stream: iterate it with `for await`; `break` (or `close()`, or the signal) ends it. */
export interface EventStream extends AsyncIterable<CoordEvent> {
  /** What a reconnect resumes after: the last sequence number delivered, or before any event the point the server started the stream at (`Coord-Resume-After`). */
  readonly lastEventId: string | undefined;
  /** Ends the stream; a pending iteration finishes. */
  close(): void;
}

/** Statuses that mean "try again later" rather than "this request is wrong". */
function retryable(err: CoordError): boolean {
  if (err instanceof Unauthorized || err instanceof Forbidden || err instanceof NotFound || err instanceof InvalidRequest) return false;
  return err instanceof Unavailable || err instanceof RateLimited || err.status >= 500 || err.status === 0;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

export class EventsApi {
  constructor(private readonly t: Transport) {}

  /**
   * A page of a topic's events as JSON (`GET /v1/events/log`): pass the last `seq` you saw as
   * `after` (default 0: the oldest retained); continue from `nextAfter`. `resync: true` means the
   * cursor is no longer retained: re-read state and continue from `nextAfter`.
   * `topic` is `todo:<scope>`; a bare scope (`session:s-…`) gets the `todo:` prefix.
   * `subjectId` keeps only the events about one item (or graph, scenario): its history without
   * reading the whole scope.
   * Errors: `NotFound` (a topic you may not read), `InvalidRequest` (invalid_cursor).
   */
  async log(topic: string, opts: { after?: number; limit?: number; subjectId?: string } = {}): Promise<EventLogPage> {
    const query = {
      topic: normalizeTopic(topic),
      after: opts.after === undefined ? undefined : String(opts.after),
      limit: opts.limit ?? 100,
      subjectId: opts.subjectId,
    };
    return this.t.unwrap('GET /v1/events/log', this.t.api.GET('/v1/events/log', { params: { query } }));
  }

  /**
   * Follows a topic over SSE (`GET /v1/events`) as an async iterator that reconnects on its own.
   * `topic` is `todo:<scope>` (or a bare scope). Network failures, server restarts, 5xx and 503
   * (honouring `Retry-After`) are retried with backoff (`minDelayMs` doubling up to `maxDelayMs`,
   * with jitter; reset after each successful connection), resuming from the last delivered id.
   * A refusal that will not change by retrying (`Unauthorized`, `Forbidden`, `NotFound`,
   * `InvalidRequest`) is thrown from the iterator.
   *
   * ```ts
   * for await (const e of client.events.follow('todo:session:s-1', { after: 0 })) console.log(e.seq, e.event, e.data.id);
   * ```
   */
  follow(topic: string, opts: FollowOptions = {}): EventStream {
    const t = this.t;
    const ctrl = new AbortController();
    const onAbort = () => ctrl.abort();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    if (opts.signal?.aborted) ctrl.abort();
    const fullTopic = normalizeTopic(topic);
    const minDelay = opts.minDelayMs ?? 250;
    const maxDelay = opts.maxDelayMs ?? 30_000;
    const idleTimeout = opts.idleTimeoutMs ?? 45_000;
    let lastEventId = opts.after === undefined ? undefined : String(opts.after);

    async function* run(): AsyncGenerator<CoordEvent> {
      let attempt = 0;
      let opened = 0;
      const backoff = async (cause: unknown, atLeastMs = 0) => {
        attempt += 1;
        const exp = Math.min(maxDelay, minDelay * 2 ** (attempt - 1));
        const delayMs = Math.max(atLeastMs, Math.round(exp / 2 + (Math.random() * exp) / 2));
        opts.onReconnect?.({ attempt, delayMs, cause, lastEventId });
        await sleep(delayMs, ctrl.signal);
      };
      try {
        while (!ctrl.signal.aborted) {
          // One connection per iteration; its own controller lets the idle timer cut it alone.
          const conn = new AbortController();
          const cut = () => conn.abort();
          ctrl.signal.addEventListener('abort', cut, { once: true });
          let idle: ReturnType<typeof setTimeout> | undefined;
          const arm = () => {
            clearTimeout(idle);
            idle = setTimeout(() => conn.abort(new Error(`no data for ${idleTimeout} ms`)), idleTimeout);
          };
          try {
            const url = `${t.baseUrl}/v1/events?topic=${encodeURIComponent(fullTopic)}`;
            let res: Response;
            try {
              arm();
              res = await t.fetch(url, {
                headers: { ...t.headers, accept: 'text/event-stream', ...(lastEventId !== undefined ? { 'last-event-id': lastEventId } : {}) },
                signal: conn.signal,
              });
            } catch (err) {
              if (ctrl.signal.aborted) return;
              await backoff(new ConnectionFailed(t.baseUrl, err, 'GET /v1/events'));
              continue;
            }
            if (!res.ok || !res.body) {
              const err = await errorFromResponse(res, 'GET /v1/events');
              if (!retryable(err)) throw err;
              await backoff(err, err instanceof Unavailable || err instanceof RateLimited ? (err.retryAfterMs ?? 0) : 0);
              continue;
            }
            attempt = 0;
            // Before any event, resume from where the server started this stream (no gap even
            // when the connection drops before the first event).
            const head = res.headers.get('coord-resume-after');
            if (lastEventId === undefined && head !== null && /^\d+$/.test(head)) lastEventId = head;
            opts.onOpen?.({ reconnect: opened++ > 0, lastEventId });
            const queue: EventSourceMessage[] = [];
            const parser = createParser({ onEvent: (m) => queue.push(m) });
            const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
            let cause: unknown = new Error('the server closed the stream');
            try {
              for (;;) {
                const { value, done } = await reader.read();
                if (done) break;
                arm();
                parser.feed(value);
                while (queue.length > 0) {
                  const m = queue.shift()!;
                  if (m.id !== undefined && m.id !== '') lastEventId = m.id;
                  yield toEvent(m, fullTopic);
                }
              }
            } catch (err) {
              if (ctrl.signal.aborted) return;
              cause = err;
            } finally {
              reader.cancel().catch(() => {});
            }
            if (ctrl.signal.aborted) return;
            await backoff(cause);
          } finally {
            clearTimeout(idle);
            ctrl.signal.removeEventListener('abort', cut);
            conn.abort();
          }
        }
      } finally {
        ctrl.abort();
        opts.signal?.removeEventListener('abort', onAbort);
      }
    }

    const gen = run();
    return {
      get lastEventId() {
        return lastEventId;
      },
      close() {
        ctrl.abort();
        opts.signal?.removeEventListener('abort', onAbort);
      },
      [Symbol.asyncIterator]() {
        return gen;
      },
    };
  }
}

/** `todo:<scope>` stays; a bare scope (`session:…`, `scenario:…`, `graph:…`) gets the `todo:` prefix. */
export function normalizeTopic(topic: string): string {
  return topic.startsWith('todo:') ? topic : `todo:${topic}`;
}

function toEvent(m: EventSourceMessage, topic: string): CoordEvent {
  let data: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(m.data);
    data = parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : { value: parsed };
  } catch {
    data = { value: m.data };
  }
  const seq = m.id !== undefined && /^\d+$/.test(m.id) ? Number(m.id) : undefined;
  return { seq, event: m.event ?? (typeof data.event === 'string' ? data.event : 'message'), topic, data };
}
