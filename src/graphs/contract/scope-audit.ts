/**
 * Scope Audit v1: after a subtask's IMPLEMENTATION_DONE evidence and its
 * implementation commit are verified, compare the changes the runner reported
 * (committed name-status diff base→commit, plus dirty porcelain v1 worktree
 * status) with the subtask's normalised Intent Map `writeIntent` and build the
 * bounded `scopeEvidence` object (seed 002 "Optional Intent Map v1 companion";
 * docs/seeds/task-graph-v1.md §5, §9).
 *
 * Pure, I/O-free and deterministic. Running git is the runner's job; this
 * module only judges what was reported, and fails closed
 * (`TASK_STATE_CONFLICT`, stage `scope-audit`, recoverable) on anything
 * malformed: an audit that cannot trust its facts is never a success.
 *
 * Paths are data. Spaces, quotes, `$;[]`, TAB and any Unicode are ordinary
 * characters; only the characters that cannot be a sound repository-relative
 * path are refused (see {@link auditScope}).
 *
 * This file owns the audit: the reported-change shapes, their validation, and
 * the derivation of the evidence. The path matcher is glob.ts; the re-check of
 * persisted evidence and the visible warn reason are evidence-check.ts, which
 * share this file's validation and failure helpers (exported for it, not
 * re-exported from index.ts).
 */
import type { ContractResult, ScopePolicy } from './types.js';
import { INTENT_MAP_MAX_PATTERNS, INTENT_MAP_SCOPE_POLICIES, normalizeWriteIntentPattern } from './intent-map.js';
import { isSubtaskId, isTaskId } from './ids.js';
import { LONE_SURROGATE, pathCoveredByWriteIntent } from './glob.js';
import { boundMessage, compareByteOrder, deepFreeze, displayValue, isPlainObject, ownValue, sortByteOrder, utf8ByteLength } from './text.js';

// ---------------------------------------------------------------------------
// Public shapes and limits
// ---------------------------------------------------------------------------

/**
 * One reported change.
 *
 * Committed: a git name-status letter: `A` | `M` | `D` | `T` | `R<score>` |
 * `C<score>` (score: 0–3 digits, at most 100, optional: `R100`, `R`).
 * `oldPath` is required exactly for R/C and forbidden otherwise.
 *
 * Dirty: a git porcelain v1 two-character `XY` code, each character one of
 * ` MTADRCU?!`, not `"  "`; `?` and `!` appear only as `??` (untracked) and
 * `!!` (ignored). `oldPath` is allowed only when X or Y is `R` or `C`, and is
 * then required.
 */
export interface ReportedChange {
  status: string;
  path: string;
  oldPath?: string;
}

export interface ScopeAuditInput {
  parentTaskId: string;
  subtaskId: string;
  /** 40 or 64 hex digits, any case; stored lower-cased. */
  graphBaseCommit: string;
  /** 40 or 64 hex digits, any case; stored lower-cased. Must differ from graphBaseCommit. */
  implementationCommit: string;
  scopePolicy: ScopePolicy;
  /** The subtask's normalised patterns from the Intent Map (`[]` = explicit-empty coverage). */
  writeIntent: readonly string[];
  committedChanges: readonly ReportedChange[];
  /** The reporter (runner) had to cut its committed list. */
  committedChangesTruncated?: boolean;
  dirtyChanges: readonly ReportedChange[];
  /** The reporter had to cut its dirty list. */
  dirtyChangesTruncated?: boolean;
  /** False when the reporter could not inspect the worktree; dirtyChanges must then be `[]`. */
  dirtyWorktreeAvailable: boolean;
}

/** A change as recorded in evidence: `oldPath` only for renames and copies. */
export interface ScopeEvidenceChange {
  status: string;
  oldPath?: string;
  path: string;
}

export interface ScopeDriftEvidence {
  code: 'INTENT_SCOPE_DRIFT';
  outsideIntentPathCount: number;
  /** The first ≤ 64 outside paths (byte order); equal to the evidence's `outsideIntentPaths`. */
  outsideIntentPaths: string[];
  /** Distinct outside paths that came from committed changes (either rename/copy side). */
  committedOutsideCount: number;
  committedOutside: string[];
  /** Distinct outside paths that came from dirty changes (either rename/copy side). */
  dirtyOutsideCount: number;
  dirtyOutside: string[];
  /** Equal to the evidence's `outsideIntentPathsTruncated`. */
  truncated: boolean;
}

/**
 * The persisted `scopeEvidence` of a subtask (docs/seeds/task-graph-v1.md §9). Every list
 * holds at most {@link SCOPE_AUDIT_LIST_LIMIT} entries; its count is the full
 * number (of reported change entries, or of distinct paths). A `*Truncated`
 * flag is true when its list was cut at 64 or when the reporter said it cut
 * its own list (for the path lists: either reporter list), so counts are then
 * lower bounds.
 */
export interface ScopeEvidence {
  schemaVersion: 1;
  parentTaskId: string;
  subtaskId: string;
  /** Lower-cased. */
  graphBaseCommit: string;
  /** Lower-cased. */
  implementationCommit: string;
  scopePolicy: ScopePolicy;
  coverage: 'declared' | 'explicit-empty';
  /** Sorted copy (byte order). */
  writeIntent: string[];
  actualPathCount: number;
  /** Sorted, unique: both rename/copy sides, committed and dirty. */
  actualPaths: string[];
  actualPathsTruncated: boolean;
  outsideIntentPathCount: number;
  outsideIntentPaths: string[];
  outsideIntentPathsTruncated: boolean;
  committedChangeCount: number;
  /** Sorted by path, then status, then oldPath (absent first); duplicates kept. */
  committedChanges: ScopeEvidenceChange[];
  committedChangesTruncated: boolean;
  dirtyChangeCount: number;
  /** Same order as committedChanges. */
  dirtyChanges: ScopeEvidenceChange[];
  dirtyChangesTruncated: boolean;
  dirtyWorktreeAvailable: boolean;
  hasDirty: boolean;
  drift: boolean;
  driftEvidence: ScopeDriftEvidence | null;
}

/** The fail-closed refusal of a Scope Audit (docs/seeds/task-graph-v1.md §9, §12). */
export interface ScopeAuditError {
  code: 'TASK_STATE_CONFLICT';
  stage: 'scope-audit';
  /** ≤ 2048 characters, control characters replaced. */
  message: string;
  recoverable: true;
  /** The parent Task id (bounded display when it was malformed). */
  taskId: string;
  details: { parentTaskId: string; subtaskId: string; path?: string };
}

/** Entries kept in every evidence list. */
export const SCOPE_AUDIT_LIST_LIMIT = 64;
/** Reported entries per list; more is refused. */
export const SCOPE_AUDIT_MAX_CHANGES = 10_000;
/** UTF-8 bytes per reported path. */
export const SCOPE_AUDIT_MAX_PATH_BYTES = 4096;

// ---------------------------------------------------------------------------
// Failure plumbing
// ---------------------------------------------------------------------------

/** Characters of a path echoed in an error. */
const MAX_PATH_ECHO_CHARS = 256;

export class ScopeAuditFailure extends Error {
  constructor(readonly error: ScopeAuditError) {
    super(error.message);
    this.name = 'ScopeAuditFailure';
  }
}

export interface Identity {
  parentTaskId: string;
  subtaskId: string;
}

function scopeAuditError(message: string, identity: Identity, path?: unknown): ScopeAuditError {
  return {
    code: 'TASK_STATE_CONFLICT',
    stage: 'scope-audit',
    message: boundMessage(message),
    recoverable: true,
    taskId: identity.parentTaskId,
    details: {
      parentTaskId: identity.parentTaskId,
      subtaskId: identity.subtaskId,
      ...(path === undefined ? {} : { path: displayValue(path, MAX_PATH_ECHO_CHARS) }),
    },
  };
}

export function refuse(message: string, identity: Identity, path?: unknown): never {
  throw new ScopeAuditFailure(scopeAuditError(message, identity, path));
}

export function echoPath(path: unknown): string {
  return displayValue(path, MAX_PATH_ECHO_CHARS);
}

/** Turn any throw into a result; unexpected throws (hostile getters) become a generic refusal. */
export function guarded<T>(identity: () => Identity, body: () => T): ContractResult<T, ScopeAuditError> {
  try {
    return { ok: true, value: body() };
  } catch (error) {
    if (error instanceof ScopeAuditFailure) return { ok: false, error: error.error };
    let who: Identity;
    try {
      who = identity();
    } catch {
      who = { parentTaskId: '', subtaskId: '' };
    }
    return { ok: false, error: scopeAuditError('Scope Audit v1 could not read its input.', who) };
  }
}

// ---------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------

const HEX_COMMIT = /^(?:[0-9a-fA-F]{40}|[0-9a-fA-F]{64})$/;
const LOWER_HEX_COMMIT = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
const COMMITTED_STATUS = /^(?:[AMDT]|([RC])([0-9]{0,3}))$/;
const DIRTY_STATUS = /^[ MTADRCU?!]{2}$/;
/** Control characters other than TAB, which git allows in a path and the seed treats as data. */
const REFUSED_CONTROL = /[\u0000-\u0008\u000A-\u001F\u007F]/;
const NUL_OR_REPLACEMENT = /[\u0000\uFFFD]/;
const DRIVE_PREFIX = /^[A-Za-z]:/;
export const SCOPE_POLICY_SET: ReadonlySet<string> = new Set(INTENT_MAP_SCOPE_POLICIES);
const CHANGE_KEYS: ReadonlySet<string> = new Set(['status', 'path', 'oldPath']);

export type ChangeKind = 'committed' | 'dirty';

/** Why a reported path cannot be audited, or null when it is a sound repository-relative path. */
export function pathProblem(path: unknown): string | null {
  if (typeof path !== 'string') return 'is not a string';
  if (path === '') return 'is empty';
  if (path.length > SCOPE_AUDIT_MAX_PATH_BYTES || utf8ByteLength(path) > SCOPE_AUDIT_MAX_PATH_BYTES) {
    return `exceeds ${SCOPE_AUDIT_MAX_PATH_BYTES} UTF-8 bytes`;
  }
  if (NUL_OR_REPLACEMENT.test(path)) return 'contains NUL or U+FFFD';
  if (LONE_SURROGATE.test(path)) return 'contains a lone UTF-16 surrogate';
  if (REFUSED_CONTROL.test(path)) return 'contains a control character';
  if (path.includes('\\')) return 'contains a backslash';
  if (path.startsWith('/') || DRIVE_PREFIX.test(path)) return 'is absolute';
  for (const segment of path.split('/')) {
    if (segment === '' || segment === '.' || segment === '..') return "has an empty, '.' or '..' segment";
  }
  return null;
}

/** Whether a status takes an old path (rename or copy), or null when the status is malformed. */
function statusTakesOldPath(kind: ChangeKind, status: unknown): boolean | null {
  if (typeof status !== 'string') return null;
  if (kind === 'committed') {
    const match = COMMITTED_STATUS.exec(status);
    if (match === null) return null;
    if (match[1] === undefined) return false;
    if (match[2] !== '' && Number(match[2]) > 100) return null;
    return true;
  }
  if (!DIRTY_STATUS.test(status) || status === '  ') return null;
  const [x, y] = status;
  if ((x === '?' || y === '?' || x === '!' || y === '!') && !(status === '??' || status === '!!')) return null;
  return x === 'R' || x === 'C' || y === 'R' || y === 'C';
}

export function checkChange(raw: unknown, kind: ChangeKind, where: string, identity: Identity): ScopeEvidenceChange {
  const subject = `Scope Audit v1 for ${identity.parentTaskId}/${identity.subtaskId}`;
  if (!isPlainObject(raw)) refuse(`${subject} refused ${where}: not an object.`, identity);
  for (const key of Object.keys(raw)) {
    if (!CHANGE_KEYS.has(key)) refuse(`${subject} refused ${where}: unknown field "${displayValue(key)}".`, identity);
  }
  const status = ownValue(raw, 'status');
  const takesOldPath = statusTakesOldPath(kind, status);
  if (takesOldPath === null) {
    const expected = kind === 'committed' ? 'a name-status letter (A, M, D, T, R<score>, C<score>)' : 'a porcelain v1 XY code';
    refuse(`${subject} refused ${where}.status "${displayValue(status)}": not ${expected}.`, identity);
  }
  const path = ownValue(raw, 'path');
  const problem = pathProblem(path);
  if (problem !== null) refuse(`${subject} refused ${where}.path "${echoPath(path)}": ${problem}.`, identity, path);
  const oldPath = ownValue(raw, 'oldPath');
  if (oldPath === undefined) {
    if (takesOldPath) refuse(`${subject} refused ${where}: status "${status as string}" requires oldPath.`, identity, path);
    return { status: status as string, path: path as string };
  }
  if (!takesOldPath) refuse(`${subject} refused ${where}: status "${status as string}" does not take oldPath.`, identity, path);
  const oldProblem = pathProblem(oldPath);
  if (oldProblem !== null) refuse(`${subject} refused ${where}.oldPath "${echoPath(oldPath)}": ${oldProblem}.`, identity, oldPath);
  return { status: status as string, oldPath: oldPath as string, path: path as string };
}

function checkChanges(raw: unknown, kind: ChangeKind, field: string, identity: Identity): ScopeEvidenceChange[] {
  const subject = `Scope Audit v1 for ${identity.parentTaskId}/${identity.subtaskId}`;
  if (!Array.isArray(raw)) refuse(`${subject} refused ${field}: not an array.`, identity);
  if (raw.length > SCOPE_AUDIT_MAX_CHANGES) {
    refuse(`${subject} refused ${field}: ${raw.length} entries exceed the ${SCOPE_AUDIT_MAX_CHANGES} entry limit.`, identity);
  }
  const changes: ScopeEvidenceChange[] = [];
  for (let index = 0; index < raw.length; index += 1) {
    changes.push(checkChange(raw[index], kind, `${field}[${index}]`, identity));
  }
  return changes;
}

function checkOptionalFlag(raw: unknown, field: string, identity: Identity): boolean {
  if (raw === undefined) return false;
  if (typeof raw !== 'boolean') {
    refuse(`Scope Audit v1 for ${identity.parentTaskId}/${identity.subtaskId} refused ${field}: not a boolean.`, identity);
  }
  return raw;
}

export function checkWriteIntent(raw: unknown, identity: Identity, requireSorted: boolean): string[] {
  const subject = `Scope Audit v1 for ${identity.parentTaskId}/${identity.subtaskId}`;
  if (!Array.isArray(raw)) refuse(`${subject} refused writeIntent: not an array.`, identity);
  if (raw.length > INTENT_MAP_MAX_PATTERNS) {
    refuse(`${subject} refused writeIntent: more than ${INTENT_MAP_MAX_PATTERNS} patterns.`, identity);
  }
  const seen = new Set<string>();
  for (const pattern of raw as unknown[]) {
    const normalized = normalizeWriteIntentPattern(pattern);
    if (typeof pattern !== 'string' || !normalized.ok || normalized.value !== pattern) {
      refuse(`${subject} refused writeIntent pattern "${displayValue(pattern, MAX_PATH_ECHO_CHARS)}": not a normalised Intent Map v1 pattern.`, identity);
    }
    if (seen.has(pattern)) {
      refuse(`${subject} refused writeIntent pattern "${displayValue(pattern, MAX_PATH_ECHO_CHARS)}": declared twice.`, identity);
    }
    seen.add(pattern);
  }
  const sorted = sortByteOrder(raw as string[]);
  if (requireSorted && sorted.some((pattern, index) => pattern !== raw[index])) {
    refuse(`${subject} refused writeIntent: not sorted in byte order.`, identity);
  }
  return sorted;
}

export function checkCommits(base: unknown, implementation: unknown, identity: Identity, lowerOnly: boolean): [string, string] {
  const subject = `Scope Audit v1 for ${identity.parentTaskId}/${identity.subtaskId}`;
  const format = lowerOnly ? LOWER_HEX_COMMIT : HEX_COMMIT;
  const digits = lowerOnly ? '40 or 64 lower-case hex digits' : '40 or 64 hex digits';
  if (typeof base !== 'string' || !format.test(base)) {
    refuse(`${subject} refused graphBaseCommit "${displayValue(base)}": not ${digits}.`, identity);
  }
  if (typeof implementation !== 'string' || !format.test(implementation)) {
    refuse(`${subject} refused implementationCommit "${displayValue(implementation)}": not ${digits}.`, identity);
  }
  if (base.length !== implementation.length) {
    refuse(`${subject} refused its commits: graphBaseCommit and implementationCommit use different object formats.`, identity);
  }
  const lowerBase = base.toLowerCase();
  const lowerImplementation = implementation.toLowerCase();
  if (lowerBase === lowerImplementation) {
    refuse(`${subject} refused implementationCommit: it equals graphBaseCommit ${lowerBase}.`, identity);
  }
  return [lowerBase, lowerImplementation];
}

export function identityOf(record: Record<string, unknown>): Identity {
  const parentTaskId = ownValue(record, 'parentTaskId');
  const subtaskId = ownValue(record, 'subtaskId');
  return {
    parentTaskId: isTaskId(parentTaskId) ? parentTaskId : displayValue(parentTaskId),
    subtaskId: isSubtaskId(subtaskId) ? subtaskId : displayValue(subtaskId),
  };
}

// ---------------------------------------------------------------------------
// Evidence derivation
// ---------------------------------------------------------------------------

interface AuditFacts {
  parentTaskId: string;
  subtaskId: string;
  graphBaseCommit: string;
  implementationCommit: string;
  scopePolicy: ScopePolicy;
  /** Sorted. */
  writeIntent: string[];
  committedChanges: ScopeEvidenceChange[];
  committedReporterTruncated: boolean;
  dirtyChanges: ScopeEvidenceChange[];
  dirtyReporterTruncated: boolean;
  dirtyWorktreeAvailable: boolean;
}

function compareOptional(left: string | undefined, right: string | undefined): number {
  if (left === right) return 0;
  if (left === undefined) return -1;
  if (right === undefined) return 1;
  return compareByteOrder(left, right);
}

export function compareChanges(left: ScopeEvidenceChange, right: ScopeEvidenceChange): number {
  return compareByteOrder(left.path, right.path) || compareByteOrder(left.status, right.status) || compareOptional(left.oldPath, right.oldPath);
}

export function capped<T>(values: readonly T[]): T[] {
  return values.slice(0, SCOPE_AUDIT_LIST_LIMIT);
}

function copyChange(change: ScopeEvidenceChange): ScopeEvidenceChange {
  return change.oldPath === undefined ? { status: change.status, path: change.path } : { status: change.status, oldPath: change.oldPath, path: change.path };
}

/** Build the evidence from validated facts; the only place evidence is computed (docs/seeds/task-graph-v1.md §9). */
export function deriveEvidence(facts: AuditFacts): ScopeEvidence {
  const covered = new Map<string, boolean>();
  const isCovered = (path: string): boolean => {
    let result = covered.get(path);
    if (result === undefined) {
      result = pathCoveredByWriteIntent(facts.writeIntent, path);
      covered.set(path, result);
    }
    return result;
  };
  const actual = new Set<string>();
  const collect = (changes: readonly ScopeEvidenceChange[], outside: Set<string>): void => {
    for (const change of changes) {
      for (const path of change.oldPath === undefined ? [change.path] : [change.path, change.oldPath]) {
        actual.add(path);
        if (!isCovered(path)) outside.add(path);
      }
    }
  };
  const committedOutsideSet = new Set<string>();
  const dirtyOutsideSet = new Set<string>();
  collect(facts.committedChanges, committedOutsideSet);
  collect(facts.dirtyChanges, dirtyOutsideSet);

  const actualPaths = sortByteOrder(actual);
  const outsidePaths = actualPaths.filter((path) => !isCovered(path));
  const committedOutside = sortByteOrder(committedOutsideSet);
  const dirtyOutside = sortByteOrder(dirtyOutsideSet);
  const committedChanges = [...facts.committedChanges].sort(compareChanges);
  const dirtyChanges = [...facts.dirtyChanges].sort(compareChanges);
  const reporterTruncated = facts.committedReporterTruncated || facts.dirtyReporterTruncated;
  const limit = SCOPE_AUDIT_LIST_LIMIT;
  const outsideTruncated = outsidePaths.length > limit || reporterTruncated;
  const drift = outsidePaths.length > 0;

  return {
    schemaVersion: 1,
    parentTaskId: facts.parentTaskId,
    subtaskId: facts.subtaskId,
    graphBaseCommit: facts.graphBaseCommit,
    implementationCommit: facts.implementationCommit,
    scopePolicy: facts.scopePolicy,
    coverage: facts.writeIntent.length === 0 ? 'explicit-empty' : 'declared',
    writeIntent: [...facts.writeIntent],
    actualPathCount: actualPaths.length,
    actualPaths: capped(actualPaths),
    actualPathsTruncated: actualPaths.length > limit || reporterTruncated,
    outsideIntentPathCount: outsidePaths.length,
    outsideIntentPaths: capped(outsidePaths),
    outsideIntentPathsTruncated: outsideTruncated,
    committedChangeCount: committedChanges.length,
    committedChanges: capped(committedChanges).map(copyChange),
    committedChangesTruncated: committedChanges.length > limit || facts.committedReporterTruncated,
    dirtyChangeCount: dirtyChanges.length,
    dirtyChanges: capped(dirtyChanges).map(copyChange),
    dirtyChangesTruncated: dirtyChanges.length > limit || facts.dirtyReporterTruncated,
    dirtyWorktreeAvailable: facts.dirtyWorktreeAvailable,
    hasDirty: dirtyChanges.length > 0,
    drift,
    driftEvidence: drift
      ? {
          code: 'INTENT_SCOPE_DRIFT',
          outsideIntentPathCount: outsidePaths.length,
          outsideIntentPaths: capped(outsidePaths),
          committedOutsideCount: committedOutside.length,
          committedOutside: capped(committedOutside),
          dirtyOutsideCount: dirtyOutside.length,
          dirtyOutside: capped(dirtyOutside),
          truncated: outsideTruncated,
        }
      : null,
  };
}

// ---------------------------------------------------------------------------
// auditScope
// ---------------------------------------------------------------------------

function audit(raw: unknown): ScopeEvidence {
  if (!isPlainObject(raw)) refuse('Scope Audit v1 input must be an object.', { parentTaskId: '', subtaskId: '' });
  const input = raw;
  const identity = identityOf(input);
  const parentTaskId = ownValue(input, 'parentTaskId');
  const subtaskId = ownValue(input, 'subtaskId');
  if (!isTaskId(parentTaskId)) refuse(`Scope Audit v1 refused parentTaskId "${identity.parentTaskId}": malformed.`, identity);
  if (!isSubtaskId(subtaskId)) {
    refuse(`Scope Audit v1 for ${parentTaskId} refused subtaskId "${identity.subtaskId}": malformed.`, identity);
  }
  const subject = `Scope Audit v1 for ${parentTaskId}/${subtaskId}`;
  const [graphBaseCommit, implementationCommit] = checkCommits(ownValue(input, 'graphBaseCommit'), ownValue(input, 'implementationCommit'), identity, false);
  const scopePolicy = ownValue(input, 'scopePolicy');
  if (typeof scopePolicy !== 'string' || !SCOPE_POLICY_SET.has(scopePolicy)) {
    refuse(`${subject} refused scopePolicy "${displayValue(scopePolicy)}": not observe, warn or strict.`, identity);
  }
  const writeIntent = checkWriteIntent(ownValue(input, 'writeIntent'), identity, false);
  const dirtyWorktreeAvailable = ownValue(input, 'dirtyWorktreeAvailable');
  if (typeof dirtyWorktreeAvailable !== 'boolean') refuse(`${subject} refused dirtyWorktreeAvailable: not a boolean.`, identity);
  const committedReporterTruncated = checkOptionalFlag(ownValue(input, 'committedChangesTruncated'), 'committedChangesTruncated', identity);
  const dirtyReporterTruncated = checkOptionalFlag(ownValue(input, 'dirtyChangesTruncated'), 'dirtyChangesTruncated', identity);
  const committedChanges = checkChanges(ownValue(input, 'committedChanges'), 'committed', 'committedChanges', identity);
  const dirtyRaw = ownValue(input, 'dirtyChanges');
  if (!dirtyWorktreeAvailable) {
    if ((Array.isArray(dirtyRaw) && dirtyRaw.length > 0) || dirtyReporterTruncated) {
      refuse(`${subject} refused dirtyChanges: the worktree was not inspected (dirtyWorktreeAvailable false), so there can be no dirty changes.`, identity);
    }
  }
  const dirtyChanges = checkChanges(dirtyRaw, 'dirty', 'dirtyChanges', identity);
  return deriveEvidence({
    parentTaskId,
    subtaskId,
    graphBaseCommit,
    implementationCommit,
    scopePolicy: scopePolicy as ScopePolicy,
    writeIntent,
    committedChanges,
    committedReporterTruncated,
    dirtyChanges,
    dirtyReporterTruncated,
    dirtyWorktreeAvailable,
  });
}

/**
 * Audit one subtask's reported changes against its normalised writeIntent
 * (docs/seeds/task-graph-v1.md §9). Never throws.
 *
 * Refused, in this order, with `TASK_STATE_CONFLICT` at stage `scope-audit`
 * (recoverable; fail closed, never treated as success): a non-object input;
 * a malformed parentTaskId or subtaskId; a commit that is not 40 or 64 hex
 * digits, commits of different lengths, or an implementationCommit equal to
 * graphBaseCommit (case-insensitive); an unknown scopePolicy; a writeIntent
 * that is not an array of ≤ 4096 distinct, already-normalised patterns; a
 * non-boolean dirtyWorktreeAvailable or truncation flag; more than
 * {@link SCOPE_AUDIT_MAX_CHANGES} entries in a list; an entry that is not a
 * plain object of `status`, `path` and optional `oldPath`; a malformed status;
 * `oldPath` present or missing contrary to its status; dirty changes (or a
 * dirty truncation flag) when the worktree was not inspected; and a path or
 * old path that is empty, over {@link SCOPE_AUDIT_MAX_PATH_BYTES} UTF-8 bytes,
 * contains NUL or U+FFFD, a lone surrogate, a control character other than
 * TAB, or a backslash, is absolute (`/…` or a drive prefix `C:`), or has an
 * empty, `.` or `..` segment. A path refusal names the path (bounded).
 *
 * A change is outside intent when its path, or for a rename/copy its old
 * path, is not covered ({@link pathCoveredByWriteIntent}); with explicit-empty
 * writeIntent every actual path is outside. Duplicate entries are counted as
 * reported; path lists are unique. The result is deep-frozen and does not
 * depend on the order of the reported entries or patterns.
 */
export function auditScope(input: ScopeAuditInput): ContractResult<ScopeEvidence, ScopeAuditError> {
  return guarded(
    () => (isPlainObject(input) ? identityOf(input) : { parentTaskId: '', subtaskId: '' }),
    () => deepFreeze(audit(input)),
  );
}
