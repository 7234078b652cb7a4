/**
 * Configuration, parsed once. The only module that reads `process.env`.
 *
 * Sources, highest precedence first: environment (`COORD_TODO_<KEY>` for the `[todo]` keys),
 * the TOML file (`COORD_CONFIG`, else `./coord.toml` when it exists), defaults.
 * The `[todo]` block carries the todo seed's keys, defaults and ceilings (seed 000 "Configuration",
 * docs/seeds/todo-list.md §14). A bad value stops start-up with a message naming the key and the fix.
 */
import { isIP } from 'node:net';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { z } from 'zod';
import { parseDuration } from './lib/duration.js';

/** Hard ceilings from the seed; configuration may only tighten them. Also enforced by DB CHECKs. */
export const MAX_TITLE_CEILING = 500;
export const MAX_NOTE_CEILING = 2000;
export const LIST_LIMIT_CEILING = 100_000;
/**
 * Ceiling of `max_result` (Coord's key): 1 MiB, the default JSON body limit, so a result
 * within it always fits a request. Checked by the server only (the database holds any jsonb).
 */
export const MAX_RESULT_CEILING = 1024 * 1024;

export type EmitEvents = 'scenario' | 'all' | 'off';

/** The `[todo]` block, with durations in milliseconds. */
export interface TodoConfig {
  /** Which scopes write events: `all` (Coord's default; the seed's is `scenario`), `scenario`, `off`. */
  emitEvents: EmitEvents;
  /** Claim lease in ms; 0 disables the lease. Reloadable. */
  claimLeaseMs: number;
  /** Done-item retention in ms; 0 disables retention. Reloadable. */
  retentionMs: number;
  /** Max title length in bytes (UTF-8), 1–500. Reloadable. */
  maxTitle: number;
  /** Max note length in bytes (UTF-8), 1–2000. Reloadable. */
  maxNote: number;
  /** Max `done` result size in bytes (UTF-8 of its JSON serialisation), 1–1 MiB. Reloadable. */
  maxResult: number;
  /** Max items per list page (and the default page size), 1–100000. Restart-only. */
  listLimit: number;
  /** Sweep cadence in ms (≥ 500). Restart-only. */
  sweepIntervalMs: number;
  /** Postgres `lock_timeout` in ms, 1 ms – 5 min. Restart-only. */
  busyTimeoutMs: number;
}

export interface Config {
  port: number;
  host: string;
  /** Postgres URL; undefined means: start the embedded Postgres under `dataDir`. */
  databaseUrl?: string;
  /** Data folder (embedded Postgres cluster, admin token file). Default `./.coord`. */
  dataDir: string;
  /** Path of the TOML file that was read, if any (SIGHUP re-reads it). */
  configFile?: string;
  /** Bootstrap operator token supplied by the environment instead of the generated file. */
  adminToken?: string;
  logLevel: string;
  /** Cap on concurrently open SSE streams per replica (503 beyond). */
  maxStreams: number;
  /**
   * Cap on one team's concurrently open SSE streams per replica (503 beyond), so one
   * team cannot take every stream of a shared replica. Default: half of `maxStreams`
   * ({@link STREAMS_PER_TEAM_FRACTION}).
   */
  maxStreamsPerTeam: number;
  /** SSE heartbeat comment interval in ms. */
  sseHeartbeatMs: number;
  /**
   * Longest life of one SSE stream in ms (0: no limit). At it the stream ends and the client
   * resumes with `Last-Event-ID`, gap-free: the bound on how long a reader that stopped reading
   * but whose host still acknowledges TCP holds a stream on an idle topic.
   */
  sseMaxAgeMs: number;
  /** How long event rows are kept, in ms (0 = forever). Cursors older than this get `resync`. */
  eventRetentionMs: number;
  /** Default JSON body limit in bytes (graph routes raise it to the contract's bound). */
  bodyLimit: number;
  /** Postgres pool size per replica. */
  dbPoolMax: number;
  /**
   * How long opening a database connection may take, in ms (`COORD_DB_CONNECT_TIMEOUT`, default
   * 5 s). Bounds how long a request waits for an unreachable database before its 503.
   */
  dbConnectTimeoutMs: number;
  /**
   * How long a shutdown waits for in-flight requests, in ms (`COORD_DRAIN_TIMEOUT`, default 10 s);
   * connections still busy after it are closed.
   */
  drainTimeoutMs: number;
  /** Run the pg-boss sweeps in this process (tests that drive sweeps directly turn it off). */
  sweeps: boolean;
  /** Token → principal cache lifetime in ms (0 disables); stops evict at once regardless. */
  principalCacheMs: number;
  /** Most `next` (or `done`) requests sent to Postgres as one batch (1 = every request alone). */
  groupCommitMax: number;
  /**
   * Requests one bearer token (or, without one, one client address) may make per
   * `rateLimitWindowMs` on this replica; 0 turns rate limiting off. Health routes are exempt.
   */
  rateLimit: number;
  /** The rate limit's window in ms (a fixed window per key). */
  rateLimitWindowMs: number;
  /**
   * Failed authentications (a token that is refused) one client address may cause per
   * `authFailureWindowMs` on this replica before its further unknown tokens are refused with 429
   * without asking the database; 0 turns the limit off.
   */
  authFailureLimit: number;
  /** The failed-authentication limit's window in ms (a fixed window per client address). */
  authFailureWindowMs: number;
  /**
   * Proxies whose `X-Forwarded-For` names the client address (Fastify's `trustProxy`): addresses,
   * CIDR ranges or the names `loopback`, `linklocal`, `uniquelocal`, or a number of hops.
   * Undefined: the socket's address is the client's, and `X-Forwarded-For` is ignored.
   */
  trustProxy?: string[] | number;
  /**
   * How long an `Idempotency-Key` and its stored answer are kept, in ms (`COORD_IDEMPOTENCY_TTL`,
   * default 24 h, 1 s – 30 d), on the database clock; after it the key is forgotten.
   */
  idempotencyTtlMs: number;
  todo: TodoConfig;
}

/**
 * The share of a replica's stream cap one team may hold unless `COORD_MAX_STREAMS_PER_TEAM` says
 * otherwise: half, so no team can take every stream of a replica that teams share, while one
 * team alone still gets 1,000 of the default 2,000.
 */
export const STREAMS_PER_TEAM_FRACTION = 0.5;

/** The default per-team stream cap for a replica cap of `maxStreams`. */
export const defaultStreamsPerTeam = (maxStreams: number) => Math.max(1, Math.floor(maxStreams * STREAMS_PER_TEAM_FRACTION));

/**
 * Default limit of failed authentications: 100 per minute per client address and replica. A
 * misconfigured agent retrying with a revoked token stays under it (and its repeats are answered
 * from the refused-token cache); a flood of guessed tokens reaches the database 101 times a
 * minute per address, not once per request.
 */
export const AUTH_FAILURE_LIMIT_DEFAULT = 100;

/** The names `COORD_TRUST_PROXY` accepts besides addresses and ranges (proxy-addr's). */
const PROXY_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** An IPv4/IPv6 address, optionally with a `/prefix`. */
function isAddressOrCidr(v: string): boolean {
  const [addr, prefix, ...rest] = v.split('/');
  const kind = isIP(addr);
  if (!kind || rest.length > 0) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (kind === 4 ? 32 : 128);
}

/**
 * Default rate limit: 6,000 requests per minute per token and replica (100/s sustained, bursts up
 * to the whole minute's budget). An LLM-driven agent makes a few requests per second at most; the
 * limit only stops a runaway loop (one token alone reaches ~1,000 requests/s here, README
 * "Performance") from taking a replica from the rest of the fleet.
 */
export const RATE_LIMIT_DEFAULT = 6000;

/** Default `COORD_IDEMPOTENCY_TTL`: 24 h (the IETF draft leaves the window to the server; Stripe's is 24 h). */
export const IDEMPOTENCY_TTL_DEFAULT = 86_400_000;

export const TODO_DEFAULTS: TodoConfig = {
  emitEvents: 'all',
  claimLeaseMs: 30 * 60_000,
  retentionMs: 7 * 86_400_000,
  maxTitle: MAX_TITLE_CEILING,
  maxNote: MAX_NOTE_CEILING,
  maxResult: 16_384,
  listLimit: 2000,
  sweepIntervalMs: 60_000,
  busyTimeoutMs: 5000,
};

/** Keys that SIGHUP / `POST /v1/admin/reload` re-read (seed 000 "Reloadability"). */
export const RELOADABLE_TODO_KEYS = ['claim_lease', 'retention', 'max_title', 'max_note', 'max_result'] as const;
/** Keys fixed at start (seed: restart-only). `emit_events` is also read once here. */
export const RESTART_ONLY_TODO_KEYS = ['list_limit', 'sweep_interval', 'busy_timeout', 'emit_events'] as const;

export class ConfigError extends Error {}

function duration(key: string, opts: { minMs?: number; maxMs?: number; allowZero?: boolean } = {}) {
  return z.union([z.string(), z.number()]).transform((raw, ctx) => {
    try {
      const ms = typeof raw === 'number' ? raw : parseDuration(raw);
      if (ms === 0 && opts.allowZero) return 0;
      if (opts.minMs !== undefined && ms < opts.minMs) {
        ctx.addIssue({ code: 'custom', message: `${key} must be at least ${opts.minMs} ms (got "${raw}")` });
        return z.NEVER;
      }
      if (opts.maxMs !== undefined && ms > opts.maxMs) {
        ctx.addIssue({ code: 'custom', message: `${key} must be at most ${opts.maxMs} ms (got "${raw}")` });
        return z.NEVER;
      }
      return ms;
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: `${key}: ${(err as Error).message}` });
      return z.NEVER;
    }
  });
}

function boundedInt(key: string, min: number, max: number) {
  return z.coerce
    .number()
    .int(`${key} must be a whole number`)
    .min(min, `${key} must be at least ${min}`)
    .max(max, `${key} may only tighten the ceiling of ${max}`);
}

const TodoBlockSchema = z.strictObject({
  emit_events: z.enum(['scenario', 'all', 'off']).default(TODO_DEFAULTS.emitEvents),
  // Upper bounds keep deadlines inside Postgres's interval and timestamp ranges.
  claim_lease: duration('claim_lease', { minMs: 1000, maxMs: 365 * 86_400_000, allowZero: true }).default(TODO_DEFAULTS.claimLeaseMs),
  retention: duration('retention', { minMs: 1000, maxMs: 100 * 365 * 86_400_000, allowZero: true }).default(TODO_DEFAULTS.retentionMs),
  max_title: boundedInt('max_title', 1, MAX_TITLE_CEILING).default(TODO_DEFAULTS.maxTitle),
  max_note: boundedInt('max_note', 1, MAX_NOTE_CEILING).default(TODO_DEFAULTS.maxNote),
  max_result: boundedInt('max_result', 1, MAX_RESULT_CEILING).default(TODO_DEFAULTS.maxResult),
  list_limit: boundedInt('list_limit', 1, LIST_LIMIT_CEILING).default(TODO_DEFAULTS.listLimit),
  sweep_interval: duration('sweep_interval', { minMs: 500, maxMs: 86_400_000 }).default(TODO_DEFAULTS.sweepIntervalMs),
  // Sub-millisecond would become lock_timeout 0 (= wait forever in Postgres, no wait in SQLite);
  // the seed rejects it (#1322), so do we.
  busy_timeout: z
    .union([z.string(), z.number()])
    .transform((v) => (v === '' ? '5s' : v))
    .pipe(duration('busy_timeout', { minMs: 1, maxMs: 5 * 60_000 }))
    .default(TODO_DEFAULTS.busyTimeoutMs),
});

const FileSchema = z.looseObject({ todo: TodoBlockSchema.optional() });

const EnvSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().default('127.0.0.1'),
  DATABASE_URL: z.string().min(1).optional(),
  COORD_DATA_DIR: z.string().default('.coord'),
  COORD_CONFIG: z.string().optional(),
  COORD_ADMIN_TOKEN: z.string().min(16, 'COORD_ADMIN_TOKEN must be at least 16 characters').optional(),
  COORD_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  COORD_MAX_STREAMS: z.coerce.number().int().min(1).default(2000),
  COORD_MAX_STREAMS_PER_TEAM: z.coerce.number().int().min(1).optional(),
  COORD_SSE_HEARTBEAT: duration('COORD_SSE_HEARTBEAT', { minMs: 100 }).default(15_000),
  COORD_SSE_MAX_AGE: duration('COORD_SSE_MAX_AGE', { minMs: 1000, maxMs: 7 * 86_400_000, allowZero: true }).default(10 * 60_000),
  COORD_EVENT_RETENTION: duration('COORD_EVENT_RETENTION', { minMs: 1000, maxMs: 100 * 365 * 86_400_000, allowZero: true }).default(7 * 86_400_000),
  COORD_BODY_LIMIT: z.coerce
    .number()
    .int()
    .min(1024)
    .default(1024 * 1024),
  COORD_DB_POOL_MAX: z.coerce.number().int().min(2).max(200).default(20),
  COORD_DB_CONNECT_TIMEOUT: duration('COORD_DB_CONNECT_TIMEOUT', { minMs: 500, maxMs: 60_000 }).default(5000),
  COORD_DRAIN_TIMEOUT: duration('COORD_DRAIN_TIMEOUT', { minMs: 0, maxMs: 10 * 60_000, allowZero: true }).default(10_000),
  COORD_SWEEPS: z.enum(['on', 'off']).default('on'),
  COORD_PRINCIPAL_CACHE: duration('COORD_PRINCIPAL_CACHE', { maxMs: 60_000, allowZero: true }).default(5000),
  COORD_GROUP_COMMIT: z.coerce.number().int().min(1).max(1000).default(64),
  COORD_RATE_LIMIT: z.coerce
    .number()
    .int('COORD_RATE_LIMIT must be a whole number (0 turns rate limiting off)')
    .min(0)
    .max(100_000_000)
    .default(RATE_LIMIT_DEFAULT),
  COORD_RATE_LIMIT_WINDOW: duration('COORD_RATE_LIMIT_WINDOW', { minMs: 1000, maxMs: 86_400_000 }).default(60_000),
  COORD_AUTH_FAILURE_LIMIT: z.coerce
    .number()
    .int('COORD_AUTH_FAILURE_LIMIT must be a whole number (0 turns the limit off)')
    .min(0)
    .max(100_000_000)
    .default(AUTH_FAILURE_LIMIT_DEFAULT),
  COORD_AUTH_FAILURE_WINDOW: duration('COORD_AUTH_FAILURE_WINDOW', { minMs: 1000, maxMs: 86_400_000 }).default(60_000),
  COORD_TRUST_PROXY: z
    .string()
    .trim()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === '') return undefined;
      if (/^\d+$/.test(v)) return Number(v);
      const entries = v.split(',').map((x) => x.trim());
      const bad = entries.find((x) => !PROXY_NAMES.has(x) && !isAddressOrCidr(x));
      if (bad !== undefined) {
        ctx.addIssue({
          code: 'custom',
          message: `COORD_TRUST_PROXY: "${bad}" is not an address, a CIDR range, loopback, linklocal or uniquelocal (or give a number of hops)`,
        });
        return z.NEVER;
      }
      return entries;
    }),
  COORD_IDEMPOTENCY_TTL: duration('COORD_IDEMPOTENCY_TTL', { minMs: 1000, maxMs: 30 * 86_400_000 }).default(IDEMPOTENCY_TTL_DEFAULT),
});

function formatIssues(err: z.ZodError, where: string): string {
  return err.issues
    .map((i) => {
      const key = i.path.join('.');
      return `  ${where}${key ? ` ${key}` : ''}: ${i.message}`;
    })
    .join('\n');
}

/** Reads and validates the `[todo]` block of a TOML file plus `COORD_TODO_*` overrides. */
export function loadTodoConfig(env: NodeJS.ProcessEnv, configFile: string | undefined): TodoConfig {
  let block: Record<string, unknown> = {};
  if (configFile) {
    let parsed: unknown;
    try {
      parsed = parseToml(readFileSync(configFile, 'utf8'));
    } catch (err) {
      throw new ConfigError(`cannot read config file ${configFile}: ${(err as Error).message}`);
    }
    // Only `[todo]` is Coord's: a misspelt section or a key outside it would otherwise be
    // ignored silently, and a reload would put the defaults back.
    const stray = Object.keys(parsed as object).filter((k) => k !== 'todo');
    if (stray.length) {
      const what = (k: string) => {
        const v = (parsed as Record<string, unknown>)[k];
        return `${v !== null && typeof v === 'object' && !Array.isArray(v) ? 'section' : 'key'} "${k}"`;
      };
      throw new ConfigError(`invalid config file ${configFile}: unknown ${stray.map(what).join(', ')}; Coord reads only the [todo] section`);
    }
    const file = FileSchema.safeParse(parsed);
    if (!file.success) throw new ConfigError(`invalid config file ${configFile}:\n${formatIssues(file.error, '[todo]')}`);
    block = { ...((parsed as { todo?: Record<string, unknown> }).todo ?? {}) };
  }
  const known = new Set(Object.keys(TodoBlockSchema.shape).map((k) => `COORD_TODO_${k.toUpperCase()}`));
  const strayEnv = Object.keys(env).filter((k) => k.startsWith('COORD_TODO_') && !known.has(k));
  if (strayEnv.length) {
    throw new ConfigError(`unknown ${strayEnv.join(', ')}: the [todo] overrides are ${[...known].join(', ')}`);
  }
  for (const key of Object.keys(TodoBlockSchema.shape)) {
    const v = env[`COORD_TODO_${key.toUpperCase()}`];
    if (v !== undefined) block[key] = v;
  }
  const r = TodoBlockSchema.safeParse(block);
  if (!r.success) {
    throw new ConfigError(
      `invalid [todo] configuration${configFile ? ` (file ${configFile}, then COORD_TODO_* overrides)` : ' (COORD_TODO_* overrides)'}:\n${formatIssues(r.error, '[todo]')}`,
    );
  }
  const t = r.data;
  return {
    emitEvents: t.emit_events,
    claimLeaseMs: t.claim_lease,
    retentionMs: t.retention,
    maxTitle: t.max_title,
    maxNote: t.max_note,
    maxResult: t.max_result,
    listLimit: t.list_limit,
    sweepIntervalMs: t.sweep_interval,
    busyTimeoutMs: t.busy_timeout,
  };
}

/**
 * Parses the whole configuration from an environment (default `process.env`).
 * Throws `ConfigError` with one line per bad key.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const r = EnvSchema.safeParse(env);
  if (!r.success) throw new ConfigError(`invalid environment:\n${formatIssues(r.error, 'env')}`);
  const e = r.data;
  let configFile = e.COORD_CONFIG;
  if (configFile && !existsSync(configFile)) throw new ConfigError(`COORD_CONFIG points at ${configFile}, which does not exist`);
  if (!configFile && existsSync('coord.toml')) configFile = path.resolve('coord.toml');
  return {
    port: e.PORT,
    host: e.HOST,
    databaseUrl: e.DATABASE_URL,
    dataDir: path.resolve(e.COORD_DATA_DIR),
    configFile,
    adminToken: e.COORD_ADMIN_TOKEN,
    logLevel: e.COORD_LOG_LEVEL,
    maxStreams: e.COORD_MAX_STREAMS,
    maxStreamsPerTeam: Math.min(e.COORD_MAX_STREAMS_PER_TEAM ?? defaultStreamsPerTeam(e.COORD_MAX_STREAMS), e.COORD_MAX_STREAMS),
    sseHeartbeatMs: e.COORD_SSE_HEARTBEAT,
    sseMaxAgeMs: e.COORD_SSE_MAX_AGE,
    eventRetentionMs: e.COORD_EVENT_RETENTION,
    bodyLimit: e.COORD_BODY_LIMIT,
    dbPoolMax: e.COORD_DB_POOL_MAX,
    dbConnectTimeoutMs: e.COORD_DB_CONNECT_TIMEOUT,
    drainTimeoutMs: e.COORD_DRAIN_TIMEOUT,
    sweeps: e.COORD_SWEEPS === 'on',
    principalCacheMs: e.COORD_PRINCIPAL_CACHE,
    groupCommitMax: e.COORD_GROUP_COMMIT,
    rateLimit: e.COORD_RATE_LIMIT,
    rateLimitWindowMs: e.COORD_RATE_LIMIT_WINDOW,
    authFailureLimit: e.COORD_AUTH_FAILURE_LIMIT,
    authFailureWindowMs: e.COORD_AUTH_FAILURE_WINDOW,
    trustProxy: e.COORD_TRUST_PROXY,
    idempotencyTtlMs: e.COORD_IDEMPOTENCY_TTL,
    todo: loadTodoConfig(env, configFile),
  };
}

/** A config for tests and tools: defaults plus overrides, without reading the environment. */
export function testConfig(overrides: Partial<Omit<Config, 'todo'>> & { todo?: Partial<TodoConfig> } = {}): Config {
  return {
    port: 0,
    host: '127.0.0.1',
    dataDir: '.coord',
    logLevel: 'silent',
    maxStreams: 1000,
    maxStreamsPerTeam: 1000,
    sseHeartbeatMs: 15_000,
    sseMaxAgeMs: 10 * 60_000,
    eventRetentionMs: 7 * 86_400_000,
    bodyLimit: 1024 * 1024,
    dbPoolMax: 20,
    dbConnectTimeoutMs: 5000,
    drainTimeoutMs: 10_000,
    sweeps: false,
    principalCacheMs: 5000,
    groupCommitMax: 64,
    // Tests drive one token hard on purpose; the rate-limit tests turn it on.
    rateLimit: 0,
    rateLimitWindowMs: 60_000,
    authFailureLimit: AUTH_FAILURE_LIMIT_DEFAULT,
    authFailureWindowMs: 60_000,
    idempotencyTtlMs: IDEMPOTENCY_TTL_DEFAULT,
    ...overrides,
    todo: { ...TODO_DEFAULTS, ...(overrides.todo ?? {}) },
  };
}

export interface ReloadResult {
  /** Reloadable keys whose value changed and now applies. */
  applied: Partial<Record<(typeof RELOADABLE_TODO_KEYS)[number], number>>;
  /** Restart-only keys whose value in the file differs from the running one: need a restart. */
  restartRequired: string[];
}

const KEY_FIELD = {
  claim_lease: 'claimLeaseMs',
  retention: 'retentionMs',
  max_title: 'maxTitle',
  max_note: 'maxNote',
  max_result: 'maxResult',
  list_limit: 'listLimit',
  sweep_interval: 'sweepIntervalMs',
  busy_timeout: 'busyTimeoutMs',
  emit_events: 'emitEvents',
} as const satisfies Record<string, keyof TodoConfig>;

/**
 * Re-reads the TOML file and `COORD_TODO_*` and applies the reloadable `[todo]` keys to the live
 * `config` in place (SIGHUP, `POST /v1/admin/reload`). Restart-only keys are reported, not applied.
 * A deleted file reloads the defaults. Throws `ConfigError` (nothing applied) when the file is invalid.
 */
export function reloadTodoConfig(config: Config): ReloadResult {
  // A ./coord.toml written after start-up is picked up (COORD_CONFIG is fixed at start).
  if (!config.configFile && !process.env.COORD_CONFIG && existsSync('coord.toml')) config.configFile = path.resolve('coord.toml');
  // A file deleted since start-up means the defaults (plus COORD_TODO_*), not an error; one
  // recreated later at the same path is read again at the next reload.
  const file = config.configFile && existsSync(config.configFile) ? config.configFile : undefined;
  const next = loadTodoConfig(process.env, file);
  const result: ReloadResult = { applied: {}, restartRequired: [] };
  for (const key of RELOADABLE_TODO_KEYS) {
    const f = KEY_FIELD[key];
    if (next[f] !== config.todo[f]) {
      (config.todo as unknown as Record<string, unknown>)[f] = next[f];
      result.applied[key] = next[f] as number;
    }
  }
  for (const key of RESTART_ONLY_TODO_KEYS) {
    const f = KEY_FIELD[key];
    if (next[f] !== config.todo[f]) result.restartRequired.push(key);
  }
  return result;
}
