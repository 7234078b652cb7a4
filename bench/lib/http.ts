/**
 * The benchmark's HTTP client: undici pools with keep-alive (one socket per concurrent agent),
 * JSON in and out. Any unexpected status fails the benchmark loudly.
 */
import { Pool } from 'undici';

export interface JsonResponse<T> {
  status: number;
  body: T;
}

/** A keep-alive pool of `connections` sockets to `base`. */
export function openPool(base: string, connections: number): Pool {
  return new Pool(base, { connections, pipelining: 1, keepAliveTimeout: 60_000, keepAliveMaxTimeout: 600_000 });
}

/** One JSON request. `expect` lists the statuses that are not an error (default 200/201). */
export async function call<T = any>(
  pool: Pool,
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  path: string,
  token: string,
  body?: unknown,
  expect: number[] = [200, 201],
): Promise<JsonResponse<T>> {
  const res = await pool.request({
    method,
    path,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.body.text();
  if (!expect.includes(res.statusCode)) throw new Error(`${method} ${path}: HTTP ${res.statusCode} ${text.slice(0, 500)}`);
  return { status: res.statusCode, body: (text ? JSON.parse(text) : undefined) as T };
}
