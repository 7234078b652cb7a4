/**
 * Runtime-owned worktrees (seed 002 "Subtask dispatch in an isolated Git worktree" steps 1–2;
 * docs/seeds/task-graph-v1.md §7, §10). The runner creates `.coord/worktrees/<parent>/<subtask>` on branch
 * `coord/<parent>/<subtask>` at the graph base, and removes only exactly that. Before doing
 * anything it refuses unsafe ids and ref names, symlinks (or junctions) anywhere on the path,
 * paths that escape the repository, and existing folders git did not register as that worktree.
 *
 * Ownership is recorded, never inferred from a name: when the runner creates a
 * subtask's branch it writes `.coord/owned/<parent>/<subtask>.json` (the branch, the base, the
 * attempt, a random id) and the same id into the branch's own git configuration
 * (`branch.<name>.coordOwner`), which git deletes with the branch. A branch of that name without
 * both is the user's, even one recreated under a name the runner once used, and is refused before
 * anything is claimed, with the command that moves it aside. Every attempt starts at the base:
 * a new attempt on an owned branch keeps the previous tip under
 * `refs/coord/attempts/<parent>/<subtask>/<attempt>` (so no commit is lost), moves the branch back
 * to the base and checks it out in a fresh worktree; a registered worktree whose folder vanished
 * is pruned by the runner itself.
 * The user's checkout is never staged, committed, reset or checked out: the only write outside
 * `.coord/` is one `/.coord/` line in the repository's `info/exclude`, which keeps the runner's
 * folder out of `git status`.
 */
import { appendFileSync, existsSync, lstatSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
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

/** The runner's record that it created a subtask's branch (see the file comment). */
export interface Ownership {
  /** Random; also in the branch's git configuration, which dies with the branch. */
  id: string;
  branch: string;
  base: string;
  /** The attempt that last used the branch. */
  attempt: number;
  createdAt: string;
}

/** Where the ownership record of a subtask's branch is. */
export const ownershipRel = (parentTaskId: string, subtaskId: string) => path.posix.join(RUNTIME_DIR, 'owned', parentTaskId, `${subtaskId}.json`);

/** The key of the branch configuration that carries the ownership id. */
const ownerKey = (branch: string) => `branch.${branch}.coordOwner`;

/**
 * The runner's ownership record of the subtask's branch, or null when it did not create the
 * branch that exists now (no record, or the branch's configuration does not carry its id).
 */
export async function readOwnership(root: string, parentTaskId: string, subtaskId: string): Promise<Ownership | null> {
  const w = ownedWorktree(root, parentTaskId, subtaskId);
  const file = path.join(root, ...ownershipRel(parentTaskId, subtaskId).split('/'));
  assertNoLinks(root, file);
  if (!existsSync(file)) return null;
  let o: Ownership;
  try {
    o = JSON.parse(readFileSync(file, 'utf8')) as Ownership;
  } catch {
    return null;
  }
  if (!o || o.branch !== w.branch || typeof o.attempt !== 'number' || typeof o.id !== 'string') return null;
  const marked = (await git(root, ['config', '--get', ownerKey(w.branch)], { allowExit: [1] })).trim();
  return marked === o.id ? o : null;
}

function writeOwnership(root: string, parentTaskId: string, subtaskId: string, o: Ownership): void {
  const file = path.join(root, ...ownershipRel(parentTaskId, subtaskId).split('/'));
  mkdirSync(path.dirname(file), { recursive: true });
  assertNoLinks(root, file);
  writeFileSync(file, `${JSON.stringify(o, null, 2)}\n`);
}

/** Where a previous attempt's tip is kept when a new attempt starts over at the base. */
export const attemptRef = (parentTaskId: string, subtaskId: string, attempt: number) => `refs/coord/attempts/${parentTaskId}/${subtaskId}/${attempt}`;

/**
 * How {@link ensureWorktree} will provide a worktree: `reuse` the owned worktree of this very
 * attempt, `create` branch and worktree, or `restart` an owned branch at the base in a fresh
 * worktree (keeping its previous tip when it moved).
 */
type WorktreePlan = 'reuse' | 'create' | 'restart';

/**
 * Checks, without changing anything, that the subtask's worktree can be provided at `base` for
 * `attempt` (the runner calls it before the coordinator claims anything; without `attempt`, for
 * the next one). Throws RunnerError WORKTREE_CONFLICT naming what is in the way: a branch of the
 * subtask's name the runner did not create (with the command to move it aside), a folder git did
 * not register, a registered folder on another branch.
 */
export async function checkWorktree(
  root: string,
  parentTaskId: string,
  subtaskId: string,
  base: string,
  attempt?: number,
): Promise<{ plan: WorktreePlan; w: ReturnType<typeof ownedWorktree>; owned: Ownership | null }> {
  const w = ownedWorktree(root, parentTaskId, subtaskId);
  if (!(await isSafeBranch(root, w.branch))) throw new RunnerError('WORKTREE_CONFLICT', `unsafe branch name ${w.branch}`, 'worktree', { branch: w.branch });
  assertNoLinks(root, w.abs);
  const existing = await registered(root, w.abs);
  const owned = await readOwnership(root, parentTaskId, subtaskId);
  const branchExists = await gitOk(root, ['show-ref', '--verify', '--quiet', w.ref]);
  if (existsSync(w.abs)) {
    if (!existing)
      throw new RunnerError('WORKTREE_CONFLICT', `${w.rel} exists but is not a worktree git registered: refusing a foreign folder`, 'worktree', {
        path: w.rel,
      });
    if (existing.branch !== w.ref) {
      throw new RunnerError('WORKTREE_CONFLICT', `${w.rel} is on ${existing.branch ?? '(detached)'}, not ${w.ref}`, 'worktree', {
        path: w.rel,
        branch: existing.branch,
      });
    }
  }
  if (branchExists && !owned) {
    const aside = `${w.branch.replace(/^coord\//, '')}-mine`;
    const command = `git branch -m ${w.branch} ${aside}`;
    throw new RunnerError(
      'WORKTREE_CONFLICT',
      `branch ${w.branch} exists but Coord's runner did not create it (no ${ownershipRel(parentTaskId, subtaskId)}): it is never built on. ` +
        `Move it aside with \`${command}\`${existing ? ` (after \`git worktree remove ${w.rel}\`)` : ''}, then run again`,
      'worktree',
      { branch: w.branch, command },
    );
  }
  if (!branchExists) {
    // The record outlived its branch (deleted by hand): start over as if new.
    if (existing && existsSync(w.abs))
      throw new RunnerError('WORKTREE_CONFLICT', `${w.rel} is registered on ${w.ref}, which does not exist`, 'worktree', { path: w.rel });
    return { plan: 'create', w, owned };
  }
  if (existing && existsSync(w.abs) && attempt !== undefined && owned!.attempt === attempt) {
    if (!(await isAncestor(root, base, existing.head ?? 'HEAD'))) {
      throw new RunnerError('WORKTREE_CONFLICT', `${w.rel} HEAD does not descend from the graph base ${base}`, 'worktree', { path: w.rel });
    }
    return { plan: 'reuse', w, owned };
  }
  return { plan: 'restart', w, owned };
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

/**
 * Provides the subtask's worktree at `base` for `attempt` (see {@link checkWorktree}): creates it,
 * reuses this attempt's own, or restarts an owned branch at the base (its previous tip kept under
 * {@link attemptRef}, a vanished folder pruned). Records ownership. Returns the worktree and whether
 * it was created.
 */
export async function ensureWorktree(root: string, parentTaskId: string, subtaskId: string, base: string, attempt: number) {
  await excludeRuntimeDir(root);
  return worktreeAdmin(async () => {
    const { plan, w, owned } = await checkWorktree(root, parentTaskId, subtaskId, base, attempt);
    const record = (createdAt: string, id: string) => writeOwnership(root, parentTaskId, subtaskId, { id, branch: w.branch, base, attempt, createdAt });
    if (plan === 'reuse') return { ...w, created: false };
    mkdirSync(path.dirname(w.abs), { recursive: true });
    assertNoLinks(root, w.abs);
    if (plan === 'create') {
      if (await registered(root, w.abs)) await git(root, ['worktree', 'prune']);
      await git(root, ['worktree', 'add', '--quiet', '-b', w.branch, w.abs, base]);
      const id = randomUUID();
      await git(root, ['config', ownerKey(w.branch), id]);
      record(new Date().toISOString(), id);
      return { ...w, created: true };
    }
    // restart: no worktree on the branch, the previous tip kept, the branch at the base, a fresh worktree.
    const existing = await registered(root, w.abs);
    if (existing && existsSync(w.abs)) await git(root, ['worktree', 'remove', '--force', w.abs]);
    else if (existing) await git(root, ['worktree', 'prune']);
    const tip = (await git(root, ['rev-parse', '--verify', `${w.ref}^{commit}`])).trim();
    if (tip !== base) await git(root, ['update-ref', attemptRef(parentTaskId, subtaskId, owned!.attempt), tip]);
    await git(root, ['branch', '--force', w.branch, base]);
    await git(root, ['worktree', 'add', '--quiet', w.abs, w.branch]);
    record(owned!.createdAt, owned!.id);
    return { ...w, created: true };
  });
}

/**
 * Removes exactly the owned worktree of a subtask (never its branch or commits). Outcomes:
 * CLEANED (removed, or already gone and unregistered), FAILED (refused: a foreign folder, a
 * symlink, a registration elsewhere, or git failed), with the reason.
 */
export async function removeWorktree(
  root: string,
  parentTaskId: string,
  subtaskId: string,
): Promise<{ status: 'CLEANED' | 'FAILED'; error?: { code: string; message: string } }> {
  try {
    const w = ownedWorktree(root, parentTaskId, subtaskId);
    assertNoLinks(root, w.abs);
    const existing = await registered(root, w.abs);
    if (!existsSync(w.abs)) {
      if (existing) await worktreeAdmin(() => git(root, ['worktree', 'prune']));
      return { status: 'CLEANED' };
    }
    if (!existing) throw new RunnerError('WORKTREE_CONFLICT', `${w.rel} is not a worktree git registered: left untouched`, 'cleanup', { path: w.rel });
    if (existing.branch !== w.ref)
      throw new RunnerError('WORKTREE_CONFLICT', `${w.rel} is on ${existing.branch ?? '(detached)'}, not ${w.ref}: left untouched`, 'cleanup', { path: w.rel });
    await worktreeAdmin(() => git(root, ['worktree', 'remove', '--force', w.abs]));
    return { status: 'CLEANED' };
  } catch (err) {
    const code = err instanceof RunnerError ? err.code : 'WORKTREE_CONFLICT';
    return { status: 'FAILED', error: { code, message: (err as Error).message.slice(0, 2000) } };
  }
}
