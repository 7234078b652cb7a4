/**
 * The one place the facade talks HTTP: an openapi-fetch client typed by the generated `paths`,
 * plus `unwrap`, which turns a failed response into its typed `CoordError` and a network failure
 * into `ConnectionFailed`. Every call goes through `retryingFetch` (retry.ts): each POST carries
 * an `Idempotency-Key`, and a dropped connection, a 503, a 429 or a 409
 * `idempotency_key_in_progress` is retried with the same key (`retries`, default 3).
 */
import createFetchClient, { type Client } from 'openapi-fetch';
import { ConnectionFailed, errorFromProblem } from './errors.js';
import type { paths } from './generated/openapi.js';
import { retryingFetch, type RetryOptions } from './retry.js';

/**
 * Options of `createClient`. Retries (`retries`, `retryMinDelayMs`, `retryMaxDelayMs`): see
 * retry.ts and sdk/README.md "Retries".
 */
export interface ClientOptions extends RetryOptions {
  /** The server's base URL, e.g. `http://127.0.0.1:3000` (no `/v1`). */
  baseUrl: string;
  /** A bearer token: a user's (operator) or a session's (agent). */
  token?: string;
  /** A fetch implementation (default: the global `fetch`). */
  fetch?: typeof fetch;
  /** Extra headers sent with every request (e.g. `user-agent`). */
  headers?: Record<string, string>;
}

/** Shared state of one client: the typed openapi-fetch client and what the SSE follower needs. */
export class Transport {
  readonly api: Client<paths>;
  readonly baseUrl: string;
  readonly token?: string;
  /** The plain fetch (no keys, no retries): the SSE follower, which resumes on its own, uses it. */
  readonly fetch: typeof fetch;
  readonly headers: Record<string, string>;

  constructor(opts: ClientOptions) {
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.token = opts.token;
    // Resolve the global lazily so a test (or a polyfill) may replace it after the client is built.
    this.fetch = opts.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.headers = { ...(opts.headers ?? {}), ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}) };
    this.api = createFetchClient<paths>({ baseUrl: this.baseUrl, fetch: retryingFetch(this.fetch, opts), headers: this.headers });
  }

  /**
   * Awaits an openapi-fetch call and returns its data, or throws: the typed `CoordError` for an
   * error response, `ConnectionFailed` when the server could not be reached. `label` (e.g.
   * `POST /v1/todos/{id}/claim`) is recorded on the error.
   */
  async unwrap<T extends { data?: unknown; error?: unknown; response: Response }>(label: string, call: Promise<T>): Promise<NonNullable<T['data']>> {
    let res: T;
    try {
      res = await call;
    } catch (err) {
      // A body JSON cannot hold (a cycle, a BigInt) fails before anything is sent: the caller's
      // bug, thrown as is, not a network failure to retry.
      if (err instanceof TypeError && /circular|BigInt/i.test(err.message)) throw err;
      throw new ConnectionFailed(this.baseUrl, err, label);
    }
    if (!res.response.ok) throw errorFromProblem(res.response.status, res.error, { request: label, headers: res.response.headers });
    return res.data as NonNullable<T['data']>;
  }
}

/**
 * Every row of a keyset-paged list: `page(cursor)` reads one page (`cursor` undefined for the
 * first, or `first` when given) and returns its rows and `nextCursor`; pages are read until
 * `nextCursor` is null. The `listAll` of every facade.
 */
export async function collectPages<R>(page: (cursor: string | undefined) => Promise<{ rows: R[]; nextCursor?: string | null }>, first?: string): Promise<R[]> {
  const out: R[] = [];
  let cursor = first;
  for (;;) {
    const p = await page(cursor);
    out.push(...p.rows);
    if (!p.nextCursor) return out;
    cursor = p.nextCursor;
  }
}
