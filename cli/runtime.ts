/**
 * What every command action gets: its options (global ones merged in), the output, and a client
 * built from the resolved configuration. Exit codes: 0 ok, 1 error, 2 usage,
 * 3 nothing to claim.
 */
import { createClient, type CoordClient } from '@coord/sdk';
import type { Command } from 'commander';
import { resolveConfig, type Resolved } from './config.js';
import { Out, type Io } from './output.js';

export const EXIT = { ok: 0, error: 1, usage: 2, nothingToClaim: 3 } as const;

/** A wrong invocation that commander cannot see (conflicting flags, a missing value): exit 2. */
export class UsageError extends Error {}

/** Options every command accepts (defined on the root program). */
export interface GlobalOptions {
  url?: string;
  token?: string;
  /** `--json` true, `--no-json` false, neither undefined. */
  json?: boolean;
  human?: boolean;
}

export interface Ctx<O = Record<string, unknown>> {
  io: Io;
  opts: O & GlobalOptions;
  out: Out;
  /** The resolved server and token (flags > environment > config file). */
  config(): Resolved;
  /** A client for the resolved server; fails with a clear message when there is no token. */
  client(): CoordClient;
}

/** JSON when asked, human when asked, else JSON exactly when COORD_TOKEN is in the environment (agent mode). */
export function jsonMode(g: GlobalOptions, env: NodeJS.ProcessEnv): boolean {
  if (g.human) return false;
  if (g.json !== undefined) return g.json;
  return Boolean(env.COORD_TOKEN);
}

export const USER_AGENT = 'coord-cli/0.1.0';

/** Builds the context of one action invocation. */
export function makeCtx<O>(io: Io, cmd: Command): Ctx<O> {
  const opts = cmd.optsWithGlobals<O & GlobalOptions>();
  const out = new Out(io, jsonMode(opts, io.env));
  let resolved: Resolved | undefined;
  const config = () => {
    if (!resolved) {
      resolved = resolveConfig({ url: opts.url, token: opts.token }, io.env);
      for (const w of resolved.warnings) out.note(`warning: ${w}`);
    }
    return resolved;
  };
  return {
    io,
    opts,
    out,
    config,
    client() {
      const c = config();
      if (!c.token) throw new UsageError('no token: pass --token, run `coord login`, or set COORD_TOKEN');
      return createClient({ baseUrl: c.url, token: c.token, headers: { 'user-agent': USER_AGENT } });
    },
  };
}

/** Wraps an action so it receives its context and positional arguments; its return value is the exit code. */
export function act<O>(io: Io, setExit: (code: number) => void, fn: (ctx: Ctx<O>, ...args: any[]) => Promise<number | void>) {
  return async (...args: unknown[]) => {
    const cmd = args[args.length - 1] as Command;
    const positional = args.slice(0, -2);
    const code = await fn(makeCtx<O>(io, cmd), ...positional);
    setExit(code ?? EXIT.ok);
  };
}
