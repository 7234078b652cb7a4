/**
 * Test harness: a real app on a real database (one per test file), listening on loopback so
 * races go over HTTP, plus a tiny fetch client and factories for users and sessions.
 */
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { createUser } from '../../src/tokens/tokens.bootstrap.js';
import { testConfig, type Config, type TodoConfig } from '../../src/config.js';
import { openDb, type Sql } from '../../src/db/client.js';
import { startSweeper, type Sweeper } from '../../src/sweeps/boss.js';
import { createTestDatabase } from './db.js';

export interface Res<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

/** A minimal JSON client bound to a base URL and token. */
export class Client {
  constructor(
    readonly base: string,
    readonly token?: string,
  ) {}
  async req<T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Res<T>> {
    const res = await fetch(this.base + path, {
      method,
      headers: {
        ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* keep text */
    }
    return { status: res.status, body: parsed as T, headers: res.headers };
  }
  get<T = any>(path: string, headers?: Record<string, string>) {
    return this.req<T>('GET', path, undefined, headers);
  }
  post<T = any>(path: string, body?: unknown, headers?: Record<string, string>) {
    return this.req<T>('POST', path, body, headers);
  }
  patch<T = any>(path: string, body?: unknown, headers?: Record<string, string>) {
    return this.req<T>('PATCH', path, body, headers);
  }
  put<T = any>(path: string, body?: unknown, headers?: Record<string, string>) {
    return this.req<T>('PUT', path, body, headers);
  }
  del<T = any>(path: string, headers?: Record<string, string>) {
    return this.req<T>('DELETE', path, undefined, headers);
  }
  as(token: string) {
    return new Client(this.base, token);
  }
}

export interface TestApp {
  app: FastifyInstance;
  sql: Sql;
  config: Config;
  dbUrl: string;
  base: string;
  /** Client authenticated as an operator (user) of the default team with role `admin`: the server administrator. */
  admin: Client;
  /** Registers a session (root, or child of `parentId`) and returns its id and a client. */
  session(opts?: { name?: string; parentId?: string; systemKind?: string; by?: Client }): Promise<{ id: string; client: Client; token: string }>;
  sweeper?: Sweeper;
  close(): Promise<void>;
}

export interface StartOptions {
  todo?: Partial<TodoConfig>;
  config?: Partial<Omit<Config, 'todo'>>;
  /** Reuse an existing database (a second replica) instead of creating one. */
  dbUrl?: string;
  eventPollMs?: number;
  /** Start the pg-boss sweeper (with `todo.sweepIntervalMs`). */
  sweeps?: boolean;
  /** Collect the app's log lines (parsed JSON) here; set `config.logLevel` to log at all. */
  logs?: Record<string, unknown>[];
}

/** Builds the app on a fresh database (or `dbUrl`) and listens on 127.0.0.1:<random>. */
export async function startTestApp(opts: StartOptions = {}): Promise<TestApp> {
  const db = opts.dbUrl ? undefined : await createTestDatabase();
  const dbUrl = opts.dbUrl ?? db!.url;
  const config = testConfig({ ...(opts.config ?? {}), todo: opts.todo });
  const sql = openDb(dbUrl, { max: 20, lockTimeoutMs: config.todo.busyTimeoutMs });
  const logs = opts.logs;
  const logStream = logs ? { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) } : undefined;
  const app = await buildApp({ sql, config, eventPollMs: opts.eventPollMs, logStream });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const addr = app.server.address();
  const base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  // The server administrator, as the bootstrap makes it (role `admin`: it may also create teams and read the configuration).
  const { token } = await createUser(sql, 'test-admin', undefined, { role: 'admin' });
  const quiet = { info: () => {}, warn: () => {}, error: () => {} };
  const sweeper: Sweeper | undefined = opts.sweeps ? await startSweeper(dbUrl, sql, config, quiet) : undefined;
  const admin = new Client(base, token);
  return {
    app,
    sql,
    config,
    dbUrl,
    base,
    admin,
    sweeper,
    async session(o = {}) {
      const by = o.by ?? admin;
      const res = await by.post('/v1/sessions', { name: o.name, parentId: o.parentId, systemKind: o.systemKind });
      if (res.status !== 201) throw new Error(`session create failed: ${res.status} ${JSON.stringify(res.body)}`);
      return { id: res.body.session.id, token: res.body.token, client: new Client(base, res.body.token) };
    },
    async close() {
      await sweeper?.stop();
      await app.close();
      await sql.end({ timeout: 5 });
      await db?.drop();
    },
  };
}

/**
 * A second replica on `of`'s database: its own app, pool, event hub and principal cache (and its
 * own operator, like every replica start). `close()` leaves the database to `of`.
 */
export async function startReplica(of: TestApp, opts: Omit<StartOptions, 'dbUrl'> = {}): Promise<TestApp> {
  return startTestApp({ ...opts, dbUrl: of.dbUrl });
}

/** Adds a todo through `POST /v1/todos` as `c` and returns the item; any other status than 201 throws. */
export async function addItem(c: Client, title: string, extra: Record<string, unknown> = {}) {
  const r = await c.post('/v1/todos', { title, ...extra });
  if (r.status !== 201) throw new Error(`add "${title}": ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.item;
}
