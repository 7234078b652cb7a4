/**
 * The runner's one door to git (seed 002: "Git output is NUL-delimited and argument-vector based,
 * so spaces and shell metacharacters do not become shell input"). Every call is `git` with an
 * argument vector (no shell), `-c core.quotePath=false`, a clean locale, and the repository named
 * with `-C`; outputs that carry paths are read with `-z` and split on NUL.
 */
import { execFile } from 'node:child_process';

/** A git command that exited non-zero: its arguments, exit code and stderr. */
export class GitError extends Error {
  constructor(
    readonly args: readonly string[],
    readonly exitCode: number | null,
    readonly stderr: string,
  ) {
    super(`git ${args.join(' ')} failed (${exitCode}): ${stderr.trim().slice(0, 2000)}`);
    this.name = 'GitError';
  }
}

const ENV = { GIT_TERMINAL_PROMPT: '0', LC_ALL: 'C', GIT_OPTIONAL_LOCKS: '0' };

/** Runs `git -C <cwd> <args>` and resolves with stdout (bytes as UTF-8 text). Rejects with {@link GitError}. */
export function git(cwd: string, args: readonly string[], opts: { env?: NodeJS.ProcessEnv; allowExit?: number[] } = {}): Promise<string> {
  const argv = ['-C', cwd, '-c', 'core.quotePath=false', ...args];
  return new Promise((resolve, reject) => {
    execFile('git', argv, { env: { ...process.env, ...ENV, ...(opts.env ?? {}) }, maxBuffer: 256 * 1024 * 1024, encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err) {
        const code = typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : null;
        if (code !== null && opts.allowExit?.includes(code)) return resolve(stdout);
        return reject(new GitError(args, code, stderr || err.message));
      }
      resolve(stdout);
    });
  });
}

/** Whether `git` runs with exit 0. */
export async function gitOk(cwd: string, args: readonly string[]): Promise<boolean> {
  try {
    await git(cwd, args);
    return true;
  } catch (err) {
    if (err instanceof GitError) return false;
    throw err;
  }
}

/** The full commit id HEAD resolves to in `cwd`. */
export async function headCommit(cwd: string): Promise<string> {
  return (await git(cwd, ['rev-parse', '--verify', 'HEAD^{commit}'])).trim();
}

/** The repository's top level (absolute, real path) for a folder inside it. */
export async function topLevel(cwd: string): Promise<string> {
  return (await git(cwd, ['rev-parse', '--show-toplevel'])).trim();
}

/** Whether `ancestor` is an ancestor of (or equal to) `descendant`. */
export function isAncestor(cwd: string, ancestor: string, descendant: string): Promise<boolean> {
  return gitOk(cwd, ['merge-base', '--is-ancestor', ancestor, descendant]);
}

/** Whether `ref` is a branch name git accepts (`git check-ref-format --branch`). */
export function isSafeBranch(cwd: string, branch: string): Promise<boolean> {
  return gitOk(cwd, ['check-ref-format', '--branch', branch]);
}

/** One entry of `git worktree list --porcelain -z`. */
export interface WorktreeEntry {
  path: string;
  head: string | null;
  branch: string | null;
  prunable: boolean;
}

/** The worktrees git has registered for the repository at `root`. */
export async function worktreeList(root: string): Promise<WorktreeEntry[]> {
  const out = await git(root, ['worktree', 'list', '--porcelain', '-z']);
  const entries: WorktreeEntry[] = [];
  let cur: WorktreeEntry | null = null;
  for (const field of out.split('\0')) {
    if (field === '') {
      if (cur) entries.push(cur);
      cur = null;
      continue;
    }
    if (field.startsWith('worktree ')) cur = { path: field.slice(9), head: null, branch: null, prunable: false };
    else if (cur && field.startsWith('HEAD ')) cur.head = field.slice(5);
    else if (cur && field.startsWith('branch ')) cur.branch = field.slice(7);
    else if (cur && field.startsWith('prunable')) cur.prunable = true;
  }
  if (cur) entries.push(cur);
  return entries;
}

/** One reported change, as the coordinator's `complete` takes it. */
export interface Change {
  status: string;
  path: string;
  oldPath?: string;
}

/**
 * `git diff --name-status -M -z base commit`: committed changes with rename detection at 50 %
 * (docs/seeds/task-graph-v1.md §9). NUL-delimited: `status\0path\0` or, for R/C, `status\0old\0new\0`.
 */
export async function committedChanges(cwd: string, base: string, commit: string): Promise<Change[]> {
  const out = await git(cwd, ['diff', '--name-status', '-M50%', '-z', '--no-ext-diff', base, commit, '--']);
  const fields = out.split('\0');
  const changes: Change[] = [];
  for (let i = 0; i < fields.length; ) {
    const status = fields[i++];
    if (!status) continue;
    if (status.startsWith('R') || status.startsWith('C')) {
      const oldPath = fields[i++];
      const path = fields[i++];
      changes.push({ status, oldPath, path });
    } else {
      changes.push({ status, path: fields[i++] });
    }
  }
  return changes;
}

/**
 * `git status --porcelain=v1 -z --untracked-files=all`: staged, unstaged and untracked changes of
 * the worktree. NUL-delimited `XY path\0`, renames and copies followed by `old\0`.
 */
export async function dirtyChanges(cwd: string): Promise<Change[]> {
  const out = await git(cwd, ['status', '--porcelain=v1', '-z', '--untracked-files=all']);
  const fields = out.split('\0');
  const changes: Change[] = [];
  for (let i = 0; i < fields.length; ) {
    const entry = fields[i++];
    if (!entry) continue;
    const status = entry.slice(0, 2);
    const path = entry.slice(3);
    if (status.includes('R') || status.includes('C')) changes.push({ status, path, oldPath: fields[i++] });
    else changes.push({ status, path });
  }
  return changes;
}
