/**
 * The real coding agents' CLIs, as the tests run them: `claude` (@anthropic-ai/claude-code) and
 * `codex` (@openai/codex) from this checkout's node_modules, each pointed at a scripted model
 * server on 127.0.0.1 (test/helpers/model-servers.ts; the model is the only stand-in) through its
 * own documented setting: Claude Code's `ANTHROPIC_BASE_URL`, and a Codex model provider's
 * `base_url` in `$CODEX_HOME/config.toml`.
 */
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { bash, docText, REPO_ROOT } from '../helpers/process.js';
import { builtCoord } from '../cli/helpers.js';
import type { ScriptedModel } from '../helpers/model-servers.js';

/** The agents' binaries (installed by `npm ci`: pinned devDependencies). */
export const AGENT_BIN = path.join(REPO_ROOT, 'node_modules', '.bin');

/** The agent versions the tests run, from the installed packages. */
export function agentVersions(): { claude: string; codex: string } {
  const version = (pkg: string) => JSON.parse(readFileSync(path.join(REPO_ROOT, 'node_modules', pkg, 'package.json'), 'utf8')).version as string;
  return { claude: version('@anthropic-ai/claude-code'), codex: version('@openai/codex') };
}

/**
 * The environment, under `home`, in which `claude` and `codex` run (on PATH) against the scripted
 * models: Claude Code's base URL and key; Codex's config with a model provider at the other
 * server. No vendor is reached; neither agent has any other model configured.
 */
export function agentEnv(home: string, models: { anthropic: ScriptedModel; openai: ScriptedModel }, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const codexHome = path.join(home, '.codex');
  mkdirSync(codexHome, { recursive: true });
  writeFileSync(
    path.join(codexHome, 'config.toml'),
    [
      'model = "scripted-model"',
      'model_provider = "scripted"',
      '',
      '[model_providers.scripted]',
      'name = "Scripted model (test stand-in)"',
      `base_url = "${models.openai.url}/v1"`,
      'wire_api = "responses"',
      'env_key = "SCRIPTED_MODEL_KEY"',
      '',
    ].join('\n'),
  );
  return {
    PATH: `${AGENT_BIN}:${path.dirname(process.execPath)}:${process.env.PATH}`,
    HOME: home,
    LANG: 'C.UTF-8',
    ANTHROPIC_BASE_URL: models.anthropic.url,
    ANTHROPIC_API_KEY: 'sk-scripted-test-key',
    SCRIPTED_MODEL_KEY: 'scripted-test-key',
    // Nothing either CLI would fetch besides the model is reachable here; say so instead of retrying.
    DISABLE_AUTOUPDATER: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    ...extra,
  };
}

/** The task graph and subtask a runner prompt names: `(Coord <parent>/<subtask>: …`. */
export function subtaskOf(text: string): { parentTaskId: string; subtaskId: string } | null {
  const m = /\(Coord ([\w.-]+)\/([\w.-]+):/.exec(text);
  return m ? { parentTaskId: m[1], subtaskId: m[2] } : null;
}

export const MCP_GUIDE = 'docs/guides/mcp.md';

/** The MCP guide's section on the two agents. */
export const mcpGuideSection = (): string => /## Claude Code and Codex\n([\s\S]*?)\n## /.exec(docText(MCP_GUIDE))?.[1] ?? '';

/**
 * Configures Coord's MCP server for `agent` over `transport` exactly as the MCP guide says, with
 * the guide's address replaced by `base`: Claude Code's `mcp add` line, run in a shell with `env`
 * in `cwd`, or Codex's `[mcp_servers.coord]` block, appended to `home`'s ~/.codex/config.toml.
 */
export async function configureCoordMcp(
  agent: 'claude' | 'codex',
  transport: 'http' | 'stdio',
  base: string,
  at: { home: string; cwd: string; env: NodeJS.ProcessEnv },
): Promise<void> {
  const local = (text: string) => text.replaceAll('http://127.0.0.1:3000', base);
  if (agent === 'claude') {
    const lines = (/```sh\n([\s\S]*?)```/.exec(mcpGuideSection())?.[1] ?? '').split('\n').filter((l) => l.startsWith('claude mcp add '));
    const line = lines.find((l) => l.includes('--transport http') === (transport === 'http'));
    if (!line) throw new Error(`${MCP_GUIDE} has no Claude Code ${transport} line`);
    const r = await bash(local(line), { cwd: at.cwd, env: at.env });
    if (r.code !== 0) throw new Error(`${line}: exit ${r.code}: ${r.stderr}${r.stdout}`);
    return;
  }
  const blocks = [...mcpGuideSection().matchAll(/```toml\n([\s\S]*?)```/g)].map((m) => m[1]);
  const block = blocks.find((b) => b.includes('url = ') === (transport === 'http'));
  if (!block) throw new Error(`${MCP_GUIDE} has no Codex ${transport} block`);
  appendFileSync(path.join(at.home, '.codex', 'config.toml'), `\n${local(block)}`);
}

/**
 * An installed `coord` in `<home>/bin` (the run's compiled CLI, what `npm run pack` ships),
 * answering only after `delayS` seconds, as on a loaded machine. Returns the folder for PATH.
 */
export function installCoord(home: string, delayS = 0): string {
  const bin = path.join(home, 'bin');
  mkdirSync(bin, { recursive: true });
  writeFileSync(path.join(bin, 'coord'), `#!/bin/sh\n${delayS ? `sleep ${delayS}\n` : ''}exec "${process.execPath}" "${builtCoord()}" "$@"\n`, { mode: 0o755 });
  return bin;
}
