/**
 * Safe retries: a `fetch` wrapper that gives every POST an `Idempotency-Key` (a random
 * UUID per logical call, the same on every retry of it) and retries a call that failed in a way a
 * retry may fix, with bounded exponential backoff (full jitter):
 *
 * - the server could not be reached or the connection dropped before an answer (what the facade
 *   reports as `ConnectionFailed`): GET/HEAD, and POST (its key makes the repeat safe: the server
 *   replays the first answer instead of acting twice; docs/reference/http-api.md "Safe retries"). PUT, PATCH and
 *   DELETE carry no key and are not retried on a dropped connection: the first attempt may have
 *   taken effect.
 * - 503 (`busy`, `database_unavailable`, `shutting_down`) and 429 `rate_limited`, any method: the
 *   server did nothing. The wait is the answer's `Retry-After` when it has one (never shorter
 *   than the backoff); an answer whose `Retry-After` is longer than `retryMaxDelayMs` is returned
 *   at once (the caller gets `RateLimited`/`Unavailable` with `retryAfterMs`) rather than waited on.
 * - 409 `idempotency_key_in_progress` on a POST: the first attempt is still running on the server.
 *
 * Whatever is left after `retries` attempts is returned as it is (and becomes the usual typed
 * error). An aborted signal stops the waiting at once. The SSE follower (events.ts) does not go
 * through here: it has its own resume loop.
 */

/** The retry options of `ClientOptions`. */
export interface RetryOptions {
  /** Retries after the first attempt (default 3; 0 turns retrying off, keys are still sent). */
  retries?: number;
  /** The first backoff bound in ms (default 200); it doubles per retry. */
  retryMinDelayMs?: number;
  /** The longest wait between attempts in ms (default 10,000), also the longest `Retry-After` honoured. */
  retryMaxDelayMs?: number;
}

export const RETRY_DEFAULTS = { retries: 3, retryMinDelayMs: 200, retryMaxDelayMs: 10_000 } as const;

/** The header the SDK sets on every POST (unless the caller set one). */
export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

function sleep(ms: number, signal?: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** `Retry-After` in ms (seconds or an HTTP date), or undefined. */
function retryAfterMs(res: Response): number | undefined {
  const v = res.headers.get('retry-after');
  if (!v) return undefined;
  if (/^\d+$/.test(v.trim())) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

async function isInProgress(res: Response): Promise<boolean> {
  if (res.status !== 409) return false;
  try {
    const body = (await res.clone().json()) as { code?: unknown };
    return body?.code === 'idempotency_key_in_progress';
  } catch {
    return false;
  }
}

/**
 * Wraps `fetch` with idempotency keys and retries (see the module comment). The result has
 * `fetch`'s signature; a `Request` input is cloned for each attempt, so its body is sent each time.
 */
export function retryingFetch(inner: typeof fetch, opts: RetryOptions = {}): typeof fetch {
  const retries = Math.max(0, Math.floor(opts.retries ?? RETRY_DEFAULTS.retries));
  const minDelay = Math.max(0, opts.retryMinDelayMs ?? RETRY_DEFAULTS.retryMinDelayMs);
  const maxDelay = Math.max(minDelay, opts.retryMaxDelayMs ?? RETRY_DEFAULTS.retryMaxDelayMs);
  return async (input, init) => {
    const first = new Request(input, init);
    const method = first.method.toUpperCase();
    if (method === 'POST' && !first.headers.has(IDEMPOTENCY_KEY_HEADER)) first.headers.set(IDEMPOTENCY_KEY_HEADER, newKey());
    const keyed = first.headers.has(IDEMPOTENCY_KEY_HEADER);
    // The body is read once into memory so every attempt sends the same bytes.
    const body = first.body === null ? undefined : await first.arrayBuffer();
    const attempt = () => inner(new Request(first, body === undefined ? {} : { body }));
    for (let n = 0; ; n++) {
      const backoff = Math.random() * Math.min(maxDelay, minDelay * 2 ** n);
      let res: Response;
      try {
        res = await attempt();
      } catch (err) {
        const retryable = !first.signal.aborted && (SAFE.has(method) || (method === 'POST' && keyed));
        if (!retryable || n >= retries) throw err;
        await sleep(backoff, first.signal);
        continue;
      }
      if (n >= retries) return res;
      let wait: number | undefined;
      if (res.status === 503 || res.status === 429) {
        const ra = retryAfterMs(res);
        if (ra !== undefined && ra > maxDelay) return res;
        wait = Math.max(backoff, ra ?? 0);
      } else if (method === 'POST' && (await isInProgress(res))) {
        wait = Math.min(maxDelay, Math.max(backoff, retryAfterMs(res) ?? 0));
      }
      if (wait === undefined) return res;
      await res.body?.cancel().catch(() => {});
      await sleep(wait, first.signal);
    }
  };
}

/**
 * A random UUID v4 for an Idempotency-Key. `crypto.randomUUID` exists only in secure contexts
 * (https, localhost); a page served over plain http from another host (the dashboard on a LAN)
 * still has `crypto.getRandomValues`, which gives the same 122 random bits.
 */
function newKey(): string {
  const c = globalThis.crypto;
  if (typeof c.randomUUID === 'function') return c.randomUUID();
  const b = c.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
