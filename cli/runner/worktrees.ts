/**
 * Runtime-owned worktrees (seed 002 "Subtask dispatch in an isolated Git worktree" steps 1–2;
 * seeds-notes §3.7, §3.10). The runner creates or reuses `.coord/worktrees/<parent>/<subtask>` on
 * branch `coord/<parent>/<subtask>` at the graph base, and removes only exactly that. Before doing
 * anything it refuses unsafe ids and ref names, symlinks (or junctions) anywhere on the path,
 * paths that escape the repository, and existing folders git did not register as that worktree.
 * The user's checkout is never staged, committed, reset or checked out: the only write outside
 * `.coord/` is one `/.coord/` line in the repository's `info/exclude`, which keeps the runner's
 * folder out of `git status`.
 */
import { existsSync, lstatSync, mkdirSync, readFileSync, realpathSync, appendFileSync } from 'node:fs';
import path from 'node:path';
import { git, gitOk, isAncestor, isSafeBranch, worktreeList } from './git.js';

/** A refusal of the runner's own checks: a contract runtime error code and what was wrong. */
export class RunnerError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly stage: string,
    readonly facts: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'RunnerError';
  }
}

const TASK_ID = /^task-[A-Za-z0-9][A-Za-z0-9_-]{1,127}$/;
const SUBTASK_ID = /^(?:[a-z][a-z0-9_-]{0,63}|__integration__)$/;

/** The runner's folder under the repository root. */
export const RUNTIME_DIR = '.coord';

/** Where a subtask's worktree, branch and ref are (as the coordinator's dispatch names them). */
export function ownedWorktree(root: string, parentTaskId: string, subtaskId: string) {
  if (!TASK_ID.test(parentTaskId) || !SUBTASK_ID.test(subtaskId)) {
    throw new RunnerError('WORKTREE_CONFLICT', `unsafe task or subtask id: ${JSON.stringify(parentTaskId)}/${JSON.stringify(subtaskId)}`, 'worktree');
  }
  const rel = path.posix.join(RUNTIME_DIR, 'worktrees', parentTaskId, subtaskId);
  const branch = `coord/${parentTaskId}/${subtaskId}`;
  return { rel, abs: path.join(root, ...rel.split('/')), branch, ref: `refs/heads/${branch}` };
}

/** Refuses a symlink (or junction) on any existing component from `root` to `target`, and any escape from `root`. */
export function assertNoLinks(root: string, target: string): void {
  const relative = path.relative(root, target);
  if (relative.startsWith('..') || path.isAbsolute(relative)) {
    throw new RunnerError('WORKTREE_CONFLICT', `worktree path ${target} escapes the repository ${root}`, 'worktree', { path: target });
  }
  let cur = root;
  const parts = relative.split(path.sep);
  for (const [i, part] of parts.entries()) {
    cur = path.join(cur, part);
    if (!existsSync(cur) && !isDanglingLink(cur)) return;
    const st = lstatSync(cur);
    if (st.isSymbolicLink()) {
      throw new RunnerError('WORKTREE_CONFLICT', `refusing a symlink on the runner's path: ${cur}`, 'worktree', { path: cur });
    }
    if (i < parts.length - 1 && !st.isDirectory()) {
      throw new RunnerError('WORKTREE_CONFLICT', `${cur} is in the way: a folder of the runner's must be there`, 'worktree', { path: cur });
    }
  }
}

function isDanglingLink(p: string): boolean {
  try {
    return lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}

/** Adds `/.coord/` to the repository's info/exclude once, so the runner's folder never shows in `git status`. */
export async function excludeRuntimeDir(root: string): Promise<void> {
  const file = path.resolve(root, (await git(root, ['rev-parse', '--git-path', 'info/exclude'])).trim());
  const line = `/${RUNTIME_DIR}/`;
  const current = existsSync(file) ? readFileSync(file, 'utf8') : '';
  if (current.split('\n').some((l) => l.trim() === line)) return;
  mkdirSync(path.dirname(file), { recursive: true });
  appendFileSync(file, `${current === '' || current.endsWith('\n') ? '' : '\n'}# Coord's runner (worktrees and logs)\n${line}\n`);
}

/** The registered worktree at `abs`, if git has one there. */
async function registered(root: string, abs: string) {
  const real = existsSync(abs) ? realpathSync(abs) : abs;
  return (await worktreeList(root)).find((w) => w.path === real || w.path === abs);
}

/** How {@link ensureWorktree} will provide a worktree: reuse it, add it on its existing branch, or create both. */
type WorktreePlan = 'reuse' | 'add-existing-branch' | 'create';

/**
 * Checks, without changing anything, that the subtask's worktree can be created or reused at
 * `base` (the runner calls it before the coordinator claims anything). Reuse requires git to have
 * registered that exact folder on the expected branch, with a HEAD that descends from the base; an
 * existing branch must descend from the base; a registered path that is missing on disk needs an
 * explicit cleanup first. Throws RunnerError WORKTREE_CONFLICT naming what is in the way.
 */
export async function checkWorktree(root: string, parentTaskId: string, subtaskId: string, base: string): Promise<{ plan: WorktreePlan; w: ReturnType<typeof ownedWorktree> }> {
  const w = ownedWorktree(root, parentTaskId, subtaskId);
  if (!(await isSafeBranch(root, w.branch))) throw new RunnerError('WORKTREE_CONFLICT', `unsafe branch name ${w.branch}`, 'worktree', { branch: w.branch });
  assertNoLinks(root, w.abs);
  const existing = await registered(root, w.abs);
  if (existsSync(w.abs)) {
    if (!existing) throw new RunnerError('WORKTREE_CONFLICT', `${w.rel} exists but is not a worktree git registered: refusing a foreign folder`, 'worktree', { path: w.rel });
    if (existing.branch !== w.ref) {
      throw new RunnerError('WORKTREE_CONFLICT', `${w.rel} is on ${existing.branch ?? '(detached)'}, not ${w.ref}`, 'worktree', { path: w.rel, branch: existing.branch });
    }
    if (!(await isAncestor(root, base, existing.head ?? 'HEAD'))) {
      throw new RunnerError('WORKTREE_CONFLICT', `${w.rel} HEAD does not descend from the graph base ${base}`, 'worktree', { path: w.rel });
    }
    return { plan: 'reuse', w };
  }
  if (existing) {
    throw new RunnerError('WORKTREE_CONFLICT', `${w.rel} is registered with git but missing on disk: run cleanup first`, 'worktree', { path: w.rel });
  }
  if (await gitOk(root, ['show-ref', '--verify', '--quiet', w.ref])) {
    if (!(await isAncestor(root, base, w.ref))) {
      throw new RunnerError('WORKTREE_CONFLICT', `branch ${w.branch} exists and does not descend from the graph base ${base}`, 'worktree', { branch: w.branch });
    }
    return { plan: 'add-existing-branch', w };
  }
  return { plan: 'create', w };
}

/**
 * Serialises this process's `git worktree add|remove|prune` (concurrent ones read each other's
 * half-written administrative folders), and retries the transient failure that another runner
 * process on the same repository can still cause.
 */
let worktreeLock: Promise<unknown> = Promise.resolve();
async function worktreeAdmin<T>(fn: () => Promise<T>): Promise<T> {
  const run = async () => {
    for (let attempt = 0; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        const transient = /commondir|gitdir|\.lock|could not lock|unable to create/i.test((err as Error).message);
        if (!transient || attempt >= 4) throw err;
        await new Promise((r) => setTimeout(r, 50 * 2 ** attempt + Math.random() * 50));
      }
    }
  };
  const next = worktreeLock.then(run, run);
  worktreeLock = next.catch(() => undefined);
  return next;
}

/** Creates or reuses the subtask's worktree at `base` (see {@link checkWorktree}). Returns it and whether it was created. */
export async function ensureWorktree(root: string, parentTaskId: string, subtaskId: string, base: string) {
  await excludeRuntimeDir(root);
  return worktreeAdmin(async () => {
    const { plan, w } = await checkWorktree(root, parentTaskId, subtaskId, base);
    if (plan === 'reuse') return { ...w, created: false };
    mkdirSync(path.dirname(w.abs), { recursive: true });
    assertNoLinks(root, w.abs);
    if (plan === 'add-existing-branch') await git(root, ['worktree', 'add', '--quiet', w.abs, w.branch]);
    else await git(root, ['worktree', 'add', '--quiet', '-b', w.branch, w.abs, base]);
    return { ...w, created: true };
  });
}

/**
 * Removes exactly the owned worktree of a subtask (never its branch or commits). Outcomes:
 * CLEANED (removed, or already gone and unregistered), FAILED (refused: a foreign folder, a
 * symlink, a registration elsewhere, or git failed), with the reason.
 */
export async function removeWorktree(root: string, parentTaskId: string, subtaskId: string): Promise<{ status: 'CLEANED' | 'FAILED'; error?: { code: string; message: string } }> {
  try {
    const w = ownedWorktree(root, parentTaskId, subtaskId);
    assertNoLinks(root, w.abs);
    const existing = await registered(root, w.abs);
    if (!existsSync(w.abs)) {
      if (existing) await worktreeAdmin(() => git(root, ['worktree', 'prune']));
      return { status: 'CLEANED' };
    }
    if (!existing) throw new RunnerError('WORKTREE_CONFLICT', `${w.rel} is not a worktree git registered: left untouched`, 'cleanup', { path: w.rel });
    if (existing.branch !== w.ref) throw new RunnerError('WORKTREE_CONFLICT', `${w.rel} is on ${existing.branch ?? '(detached)'}, not ${w.ref}: left untouched`, 'cleanup', { path: w.rel });
    await worktreeAdmin(() => git(root, ['worktree', 'remove', '--force', w.abs]));
    return { status: 'CLEANED' };
  } catch (err) {
    const code = err instanceof RunnerError ? err.code : 'WORKTREE_CONFLICT';
    return { status: 'FAILED', error: { code, message: (err as Error).message.slice(0, 2000) } };
  }
}
