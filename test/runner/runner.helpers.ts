/**
 * Real git repositories in temp folders for the runner tests, a fingerprint of the user's
 * checkout (to prove it is byte-identical), and the `coord` CLI run as a separate process against
 * a real server.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestApp } from '../helpers/app.js';
import { cleanEnv, runCoord, tempHome, type RunResult } from '../cli/helpers.js';

export const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-C', cwd, ...args], { encoding: 'utf8', env: { ...process.env, LC_ALL: 'C' } }).trim();

/**
 * A repository with one commit (holding the project's `coord.agents.json` when `agents` is given),
 * a modified tracked file and an untracked file (the user's work in progress).
 */
export function userRepo(agents?: Record<string, { adapter: string; command?: string; args?: string[] }>): string {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'coord-runner-repo-')));
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'config', 'user.name', 'Test User');
  git(dir, 'config', 'user.email', 'user@example.invalid');
  writeFileSync(path.join(dir, 'README.md'), '# project\n');
  mkdirSync(path.join(dir, 'src'));
  writeFileSync(path.join(dir, 'src', 'shared.txt'), 'line 1\n');
  if (agents) writeAgents(dir, agents);
  git(dir, 'add', '-A');
  git(dir, 'commit', '-qm', 'initial');
  writeFileSync(path.join(dir, 'README.md'), '# project\n\nwork in progress\n'); // modified, not staged
  writeFileSync(path.join(dir, 'notes with spaces $;[].txt'), 'untracked\n');
  return dir;
}

/** Every file of the checkout outside `.git` and `.coord` with its SHA-256, plus HEAD and the index's tree. */
export function checkoutFingerprint(dir: string): string {
  const files: string[] = [];
  const walk = (rel: string) => {
    for (const e of readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const p = rel ? `${rel}/${e.name}` : e.name;
      if (p === '.git' || p === '.coord') continue;
      if (e.isDirectory()) walk(p);
      else
        files.push(
          `${p} ${createHash('sha256')
            .update(readFileSync(path.join(dir, p)))
            .digest('hex')}`,
        );
    }
  };
  walk('');
  return [`HEAD ${git(dir, 'rev-parse', 'HEAD')}`, `branch ${git(dir, 'symbolic-ref', 'HEAD')}`, ...files.sort()].join('\n');
}

/** Writes an agents file (`coord.agents.json` of a project, or a user's `agents.json`) in `dir`. */
export function writeAgents(dir: string, agents: Record<string, { adapter: string; command?: string; args?: string[] }>, name = 'coord.agents.json'): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, name), `${JSON.stringify({ agents }, null, 2)}\n`);
}

/** A shell implementer that writes `files` (relative to the worktree) and commits them. */
export function committingScript(files: string[], extra = ''): string {
  const writes = files.map((f) => `mkdir -p "$(dirname "${f}")" && echo "$COORD_SUBTASK_ID attempt $COORD_ATTEMPT" >> "${f}"`).join(' && ');
  return `${writes}${extra ? ` && ${extra}` : ''} && git add -A && git commit -qm "$COORD_SUBTASK_ID: implementation"`;
}

/** Runs the CLI as a separate process with the owner's token. */
export function coordAs(t: TestApp, token: string, home = tempHome()) {
  const env = cleanEnv(home, { COORD_URL: t.base, COORD_TOKEN: token });
  return {
    env,
    run: (args: string[], cwd?: string): Promise<RunResult> => runCoord(args, { env, cwd }),
    json: async (args: string[], cwd?: string) => {
      const r = await runCoord([...args, '--json'], { env, cwd });
      let body: any;
      try {
        body = JSON.parse(r.stdout);
      } catch {
        body = undefined;
      }
      return { ...r, body };
    },
  };
}

/** Polls `pred` every 100 ms until it holds; throws after `ms`. */
export async function until(pred: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await pred()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('timed out');
}
