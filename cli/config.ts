/**
 * Where the CLI finds its server and token, highest precedence first:
 *   1. the `--url` / `--token` flags,
 *   2. the environment: `COORD_URL`, `COORD_TOKEN`,
 *   3. the config file written by `coord login` (mode 0600): `$COORD_CLI_CONFIG`, else
 *      `$XDG_CONFIG_HOME/coord/config.json`, else `~/.config/coord/config.json`,
 *   4. the default URL `http://127.0.0.1:3000` (no default token).
 * The environment outranks the file so that a process started with its own `COORD_TOKEN` (an
 * implementer the runner launches with its dispatch's token, `coord mcp` under an agent) acts as
 * that token, never as whoever ran `coord login` on the machine.
 * The CLI reads its environment only through the `env` object handed to `main`.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const DEFAULT_URL = 'http://127.0.0.1:3000';

/** What `coord login` stores. */
export interface StoredConfig {
  url?: string;
  token?: string;
}

export type Source = 'flag' | 'file' | 'env' | 'default' | 'none';

export interface Resolved {
  url: string;
  token?: string;
  /** Where each value came from (shown by `coord whoami`). */
  source: { url: Source; token: Source };
  /** The config file path (whether or not it exists). */
  file: string;
  /** Things the user should know (a loose file mode, an environment token that the file overrides). */
  warnings: string[];
}

/** The config file's path for this environment. */
export function configPath(env: NodeJS.ProcessEnv): string {
  if (env.COORD_CLI_CONFIG) return path.resolve(env.COORD_CLI_CONFIG);
  const base = env.XDG_CONFIG_HOME || path.join(env.HOME || os.homedir(), '.config');
  return path.join(base, 'coord', 'config.json');
}

/** Reads the config file; a missing file is `{}`; an unreadable or malformed one is an error naming the file. */
export function readStored(file: string, warnings: string[] = []): StoredConfig {
  if (!existsSync(file)) return {};
  const mode = statSync(file).mode & 0o777;
  if (mode & 0o077) warnings.push(`${file} is readable by others (mode ${mode.toString(8)}); run: chmod 600 ${file}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`cannot read ${file}: ${(err as Error).message} (fix it or run coord logout)`);
  }
  const o = (parsed ?? {}) as Record<string, unknown>;
  return { url: typeof o.url === 'string' ? o.url : undefined, token: typeof o.token === 'string' ? o.token : undefined };
}

/** Writes the config file with mode 0600 (its folder 0700), replacing what was there. */
export function writeStored(file: string, cfg: StoredConfig): void {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  writeFileSync(file, `${JSON.stringify(cfg, null, 2)}\n`, { mode: 0o600 });
  // writeFileSync keeps the mode of an existing file; make sure it is 0600 either way.
  chmodSync(file, 0o600);
}

/** Removes the config file; returns whether there was one. */
export function removeStored(file: string): boolean {
  if (!existsSync(file)) return false;
  rmSync(file);
  return true;
}

/** Applies the precedence above. */
export function resolveConfig(flags: { url?: string; token?: string }, env: NodeJS.ProcessEnv): Resolved {
  const file = configPath(env);
  const warnings: string[] = [];
  const stored = readStored(file, warnings);
  const pick = (flag: string | undefined, fromEnv: string | undefined, fromFile: string | undefined): [string | undefined, Source] => {
    if (flag) return [flag, 'flag'];
    if (fromEnv) return [fromEnv, 'env'];
    if (fromFile) return [fromFile, 'file'];
    return [undefined, 'none'];
  };
  const [url, urlSource] = pick(flags.url, env.COORD_URL, stored.url);
  const [token, tokenSource] = pick(flags.token, env.COORD_TOKEN, stored.token);
  return {
    url: (url ?? DEFAULT_URL).replace(/\/+$/, ''),
    token,
    source: { url: url ? urlSource : 'default', token: tokenSource },
    file,
    warnings,
  };
}
