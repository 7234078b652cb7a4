/**
 * Implementer resolution (seed 002 "Agent & Adapter Resolution": project > user > adapter-default
 * configuration precedence with exact executable verification; "No Agent identity is inferred from
 * an executable name"). A subtask names an Agent; the runner finds how to launch it:
 *
 * 1. project: `coord.agents.json` at the repository root (committed with the project);
 * 2. user: `$XDG_CONFIG_HOME/coord/agents.json` (default `~/.config/coord/agents.json`);
 * 3. adapter-default: the Agent's registry facts on the coordinator (`adapter`, `command`).
 *
 * Each file is `{"agents": {"<agent-id>": {"adapter": "...", "command": "...", "args": [...],
 * "timeoutMs": N}}}`. Adapters: `shell` (`sh -c <command>`), `exec` (`<command> <args…>`, no
 * shell), `claude-code` and `codex` (below). The executable must exist on PATH (or at its path)
 * before any worktree is created; otherwise EXECUTABLE_NOT_FOUND. Every adapter gets the prompt on
 * stdin (no argument-length cap); `args` come after the adapter's own flags.
 *
 * The agent adapters run the real CLIs unattended, and an implementer must commit (the commit is
 * the evidence), so each is given what that takes and no more than its CLI offers for it (tested
 * with @anthropic-ai/claude-code 2.1.332 and @openai/codex 0.171.0, test/agents/):
 * - `claude-code`: `claude -p --permission-mode acceptEdits --allowedTools Bash`. `acceptEdits`
 *   alone lets it edit files but denies `git commit` in `-p` mode (it exits 0 with nothing
 *   committed), and `bypassPermissions` refuses to start as root.
 * - `codex`: `codex exec --sandbox danger-full-access -`. Its `workspace-write` sandbox keeps every
 *   `.git` read-only, so no commit can be made in a worktree (`index.lock: Read-only file
 *   system`); `exec` never asks for approval. `--full-auto` no longer exists.
 * The worktree isolates the work from the user's checkout; it is not a security sandbox.
 */
import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RunnerError } from './worktrees.js';

export type CommandSource = 'project' | 'user' | 'adapter-default';
export const ADAPTERS = ['shell', 'exec', 'claude-code', 'codex'] as const;
export type Adapter = (typeof ADAPTERS)[number];

/** How one Agent is launched, and where that came from. */
export interface LaunchPlan {
  agent: string;
  adapter: Adapter;
  /** The executable that is spawned: an absolute path, or a repository-relative one run from the worktree. */
  executable: string;
  /** Arguments after the executable; the spec is appended or passed as the adapter says. */
  argv: string[];
  commandSource: CommandSource;
  /** The effective command as one shell line (each word quoted where it must be), for results and logs. */
  effectiveCommand: string;
  /** The agents file's `timeoutMs`: past it the implementer's processes are ended (AGENT_TIMEOUT); null = no limit. */
  timeoutMs: number | null;
}

interface AgentEntry {
  adapter?: string;
  command?: string;
  args?: string[];
  timeoutMs?: number;
}

/** The longest `timeoutMs` an agents file may set: one day. */
export const MAX_AGENT_TIMEOUT_MS = 86_400_000;

/** Reads an agents file, or undefined when it does not exist. Malformed → INVALID_AGENT_CONFIG. */
function readAgents(file: string): Record<string, AgentEntry> | undefined {
  if (!existsSync(file)) return undefined;
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new RunnerError('INVALID_AGENT_CONFIG', `${file} is not JSON: ${(err as Error).message}`, 'agent-resolution', { file });
  }
  const agents = (doc as { agents?: unknown })?.agents;
  if (!agents || typeof agents !== 'object' || Array.isArray(agents)) {
    throw new RunnerError('INVALID_AGENT_CONFIG', `${file} must be {"agents": {"<agent-id>": {"adapter", "command", "args"}}}`, 'agent-resolution', { file });
  }
  return agents as Record<string, AgentEntry>;
}

/** The user's agents file. */
export function userAgentsFile(env: NodeJS.ProcessEnv): string {
  const base = env.XDG_CONFIG_HOME || path.join(env.HOME || os.homedir(), '.config');
  return path.join(base, 'coord', 'agents.json');
}

/** The project's agents file. */
export const projectAgentsFile = (root: string) => path.join(root, 'coord.agents.json');

/** The absolute path of `command` on PATH (or as given when it contains a slash), or null. */
export function which(command: string, env: NodeJS.ProcessEnv): string | null {
  const executable = (p: string) => {
    try {
      accessSync(p, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  if (command.includes('/')) return executable(command) ? path.resolve(command) : null;
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, command);
    if (executable(candidate)) return candidate;
  }
  return null;
}

function plan(root: string, agent: string, entry: AgentEntry, source: CommandSource, env: NodeJS.ProcessEnv, where: string): LaunchPlan {
  const adapter = (entry.adapter ?? (entry.command ? 'shell' : undefined)) as Adapter | undefined;
  if (!adapter || !ADAPTERS.includes(adapter)) {
    throw new RunnerError(
      'INVALID_AGENT_CONFIG',
      `Agent "${agent}" (${where}) has adapter ${JSON.stringify(entry.adapter ?? null)}; expected one of ${ADAPTERS.join(', ')}`,
      'agent-resolution',
      { agent, commandSource: source },
    );
  }
  if (entry.args !== undefined && (!Array.isArray(entry.args) || entry.args.some((a) => typeof a !== 'string'))) {
    throw new RunnerError('INVALID_AGENT_CONFIG', `Agent "${agent}" (${where}): args must be an array of strings`, 'agent-resolution', { agent });
  }
  const timeoutMs = entry.timeoutMs ?? null;
  if (timeoutMs !== null && (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > MAX_AGENT_TIMEOUT_MS)) {
    throw new RunnerError(
      'INVALID_AGENT_CONFIG',
      `Agent "${agent}" (${where}): timeoutMs must be an integer from 1 to ${MAX_AGENT_TIMEOUT_MS} (milliseconds)`,
      'agent-resolution',
      { agent },
    );
  }
  const args = entry.args ?? [];
  let program: string;
  let argv: string[];
  switch (adapter) {
    case 'shell':
      if (!entry.command)
        throw new RunnerError('INVALID_AGENT_CONFIG', `Agent "${agent}" (${where}): the shell adapter needs a command`, 'agent-resolution', { agent });
      program = 'sh';
      argv = ['-c', entry.command, ...args];
      break;
    case 'exec':
      if (!entry.command)
        throw new RunnerError('INVALID_AGENT_CONFIG', `Agent "${agent}" (${where}): the exec adapter needs a command`, 'agent-resolution', { agent });
      program = entry.command;
      argv = args;
      break;
    case 'claude-code':
      program = entry.command ?? 'claude';
      argv = ['-p', '--permission-mode', 'acceptEdits', '--allowedTools', 'Bash', ...args];
      break;
    case 'codex':
      program = entry.command ?? 'codex';
      argv = ['exec', '--sandbox', 'danger-full-access', ...args, '-'];
      break;
  }
  // A relative path (`./scripts/impl.sh`) is the repository's: checked at the root, run in the worktree.
  const relative = program.includes('/') && !path.isAbsolute(program);
  const executable = relative ? (which(path.resolve(root, program), env) ? program : null) : which(program, env);
  if (!executable) {
    const where = program.includes('/') ? (relative ? `at ${path.resolve(root, program)} (relative to the repository root)` : 'at that path') : 'on PATH';
    throw new RunnerError(
      'EXECUTABLE_NOT_FOUND',
      `Agent "${agent}": executable "${program}" (${adapter} adapter, ${source}) was not found ${where}, or is not executable`,
      'agent-resolution',
      {
        agent,
        executable: program,
        commandSource: source,
      },
    );
  }
  return { agent, adapter, executable, argv, commandSource: source, effectiveCommand: [program, ...argv].map(shellWord).join(' '), timeoutMs };
}

/** `word` as a POSIX shell reads it back: bare when it is plain, else single-quoted. */
function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/**
 * The launch plan of `agent` (see the file header). `registry` is the coordinator's record of the
 * Agent (`adapter`, `command`). Throws RunnerError INVALID_AGENT_CONFIG or EXECUTABLE_NOT_FOUND.
 */
export function resolveImplementer(
  root: string,
  agent: string,
  registry: { adapter?: string | null; command?: string | null } | undefined,
  env: NodeJS.ProcessEnv,
): LaunchPlan {
  const project = readAgents(projectAgentsFile(root))?.[agent];
  if (project) return plan(root, agent, project, 'project', env, projectAgentsFile(root));
  const userFile = userAgentsFile(env);
  const user = readAgents(userFile)?.[agent];
  if (user) return plan(root, agent, user, 'user', env, userFile);
  if (registry && (registry.adapter || registry.command)) {
    return plan(
      root,
      agent,
      { adapter: registry.adapter ?? undefined, command: registry.command ?? undefined },
      'adapter-default',
      env,
      'the coordinator’s agents registry',
    );
  }
  throw new RunnerError(
    'INVALID_AGENT_CONFIG',
    `Agent "${agent}" has no launch configuration: add it to coord.agents.json or ${userFile}, or register it with --adapter/--command`,
    'agent-resolution',
    { agent },
  );
}

/** The text an agent adapter receives: the spec plus what the runner needs from it. */
export function promptFor(spec: string, subtask: { parentTaskId: string; subtaskId: string; writeIntent: string[] | null }): string {
  const scope =
    subtask.writeIntent === null
      ? ''
      : `\nWrite only paths matching: ${subtask.writeIntent.length ? subtask.writeIntent.join(', ') : '(nothing: this subtask declares no writes)'}.`;
  return `${spec}\n\n(Coord ${subtask.parentTaskId}/${subtask.subtaskId}: work in the current directory, a git worktree. When done, commit your changes with git; the commit is the evidence.${scope})`;
}
