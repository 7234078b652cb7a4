/**
 * The re-check of persisted Scope Audit v1 evidence: {@link checkScopeEvidence}
 * reads a stored `scopeEvidence` object back and refuses one that is not
 * exactly what {@link auditScope} would have written, and {@link driftReason}
 * renders the visible `warn` reason. Seed 002 ("Optional Intent Map v1
 * companion"): evidence "is persisted on the subtask" with identity, commits,
 * patterns, actual and outside-intent paths, counts, truncation flags,
 * dirty-worktree availability, policy and bounded INTENT_SCOPE_DRIFT details,
 * and "warn keeps success and adds a visible warning". Persisted facts are
 * revalidated on read, never repaired: a contradiction fails closed
 * (`TASK_STATE_CONFLICT`, stage `scope-audit`).
 *
 * Pure and I/O-free; shares the audit's validation and failure plumbing
 * (scope-audit.ts) so a check and an audit refuse the same inputs alike.
 */
import type { ContractResult, ScopePolicy } from './types.js';
import { isSubtaskId, isTaskId } from './ids.js';
import { pathCoveredByWriteIntent } from './glob.js';
import {
  capped,
  checkChange,
  checkCommits,
  checkWriteIntent,
  compareChanges,
  deriveEvidence,
  echoPath,
  guarded,
  identityOf,
  pathProblem,
  refuse,
  SCOPE_AUDIT_LIST_LIMIT,
  SCOPE_AUDIT_MAX_CHANGES,
  SCOPE_POLICY_SET,
  ScopeAuditFailure,
  type ChangeKind,
  type Identity,
  type ScopeDriftEvidence,
  type ScopeEvidence,
  type ScopeEvidenceChange,
  type ScopeAuditError,
} from './scope-audit.js';
import { boundMessage, boundText, compareByteOrder, deepFreeze, displayValue, isPlainObject, MAX_MESSAGE_CHARS, ownValue, sortByteOrder } from './text.js';

// ---------------------------------------------------------------------------
// checkScopeEvidence
// ---------------------------------------------------------------------------

const EVIDENCE_KEYS: readonly string[] = [
  'schemaVersion',
  'parentTaskId',
  'subtaskId',
  'graphBaseCommit',
  'implementationCommit',
  'scopePolicy',
  'coverage',
  'writeIntent',
  'actualPathCount',
  'actualPaths',
  'actualPathsTruncated',
  'outsideIntentPathCount',
  'outsideIntentPaths',
  'outsideIntentPathsTruncated',
  'committedChangeCount',
  'committedChanges',
  'committedChangesTruncated',
  'dirtyChangeCount',
  'dirtyChanges',
  'dirtyChangesTruncated',
  'dirtyWorktreeAvailable',
  'hasDirty',
  'drift',
  'driftEvidence',
];
const DRIFT_KEYS: readonly string[] = [
  'code',
  'outsideIntentPathCount',
  'outsideIntentPaths',
  'committedOutsideCount',
  'committedOutside',
  'dirtyOutsideCount',
  'dirtyOutside',
  'truncated',
];

class EvidenceReader {
  constructor(readonly identity: Identity) {}

  fail(problem: string): never {
    refuse(`Scope Audit v1 evidence for ${this.identity.parentTaskId}/${this.identity.subtaskId} is inconsistent: ${problem}.`, this.identity);
  }

  exactKeys(record: Record<string, unknown>, keys: readonly string[], where: string): void {
    const allowed = new Set(keys);
    const unknown = sortByteOrder(Object.keys(record).filter((key) => !allowed.has(key)));
    if (unknown.length > 0) this.fail(`${where} has unknown field "${displayValue(unknown[0])}"`);
    for (const key of keys) {
      if (!Object.hasOwn(record, key)) this.fail(`${where} is missing "${key}"`);
    }
  }

  count(record: Record<string, unknown>, key: string, max: number, where = key): number {
    const value = ownValue(record, key);
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || value > max) {
      this.fail(`${where} is not a count between 0 and ${max}`);
    }
    return value;
  }

  flag(record: Record<string, unknown>, key: string, where = key): boolean {
    const value = ownValue(record, key);
    if (typeof value !== 'boolean') this.fail(`${where} is not a boolean`);
    return value;
  }

  /** A list of ≤ 64 valid paths in strictly increasing byte order. */
  paths(record: Record<string, unknown>, key: string, where = key): string[] {
    const value = ownValue(record, key);
    if (!Array.isArray(value) || value.length > SCOPE_AUDIT_LIST_LIMIT) this.fail(`${where} is not a list of at most ${SCOPE_AUDIT_LIST_LIMIT} paths`);
    const paths: string[] = [];
    for (const path of value as unknown[]) {
      const problem = pathProblem(path);
      if (problem !== null) this.fail(`${where} path "${echoPath(path)}" ${problem}`);
      if (paths.length > 0 && compareByteOrder(paths[paths.length - 1], path as string) >= 0) {
        this.fail(`${where} is not sorted and unique`);
      }
      paths.push(path as string);
    }
    return paths;
  }

  changes(record: Record<string, unknown>, key: string, kind: ChangeKind): ScopeEvidenceChange[] {
    const value = ownValue(record, key);
    if (!Array.isArray(value) || value.length > SCOPE_AUDIT_LIST_LIMIT) this.fail(`${key} is not a list of at most ${SCOPE_AUDIT_LIST_LIMIT} changes`);
    const changes: ScopeEvidenceChange[] = [];
    for (let index = 0; index < value.length; index += 1) {
      let change: ScopeEvidenceChange;
      try {
        change = checkChange(value[index], kind, `${key}[${index}]`, this.identity);
      } catch (error) {
        if (error instanceof ScopeAuditFailure) this.fail(`${key}[${index}] is not a valid ${kind} change`);
        throw error;
      }
      if (changes.length > 0 && compareChanges(changes[changes.length - 1], change) > 0) this.fail(`${key} is not sorted`);
      changes.push(change);
    }
    return changes;
  }

  /** docs/seeds/task-graph-v1.md §9: list length = count when ≤ 64, else exactly 64 with truncated true. */
  agreement(field: string, count: number, length: number, truncated: boolean): void {
    if (length !== Math.min(count, SCOPE_AUDIT_LIST_LIMIT)) this.fail(`${field} lists ${length} entries for a count of ${count}`);
    if (count > SCOPE_AUDIT_LIST_LIMIT && !truncated) this.fail(`${field} holds more than ${SCOPE_AUDIT_LIST_LIMIT} entries but is not marked truncated`);
  }
}

function sameList(left: readonly string[], right: readonly string[]): boolean {
  return left.length === right.length && left.every((value, index) => value === right[index]);
}

/** The first top-level evidence field (in contract order) whose JSON differs, or null. */
function firstDifference(left: ScopeEvidence, right: ScopeEvidence): string | null {
  for (const key of EVIDENCE_KEYS) {
    const a = JSON.stringify((left as unknown as Record<string, unknown>)[key]);
    const b = JSON.stringify((right as unknown as Record<string, unknown>)[key]);
    if (a !== b) return key;
  }
  return null;
}

function check(raw: unknown, expectedRaw: unknown): ScopeEvidence {
  const expectedIdentity = isPlainObject(expectedRaw) ? identityOf(expectedRaw) : { parentTaskId: '', subtaskId: '' };
  if (!isPlainObject(expectedRaw)) refuse('Scope Audit v1 evidence check needs an expected parentTaskId, subtaskId and scopePolicy.', expectedIdentity);
  const expectedParent = ownValue(expectedRaw, 'parentTaskId');
  const expectedSubtask = ownValue(expectedRaw, 'subtaskId');
  const expectedPolicy = ownValue(expectedRaw, 'scopePolicy');
  if (!isTaskId(expectedParent) || !isSubtaskId(expectedSubtask) || typeof expectedPolicy !== 'string' || !SCOPE_POLICY_SET.has(expectedPolicy)) {
    refuse('Scope Audit v1 evidence check needs a valid expected parentTaskId, subtaskId and scopePolicy.', expectedIdentity);
  }
  const identity: Identity = { parentTaskId: expectedParent, subtaskId: expectedSubtask };
  const reader: EvidenceReader = new EvidenceReader(identity);
  if (!isPlainObject(raw)) reader.fail('scopeEvidence is not an object');
  const record = raw;
  reader.exactKeys(record, EVIDENCE_KEYS, 'scopeEvidence');
  if (ownValue(record, 'schemaVersion') !== 1) reader.fail('schemaVersion is not 1');
  if (ownValue(record, 'parentTaskId') !== expectedParent) {
    reader.fail(`parentTaskId "${displayValue(ownValue(record, 'parentTaskId'))}" is not ${expectedParent}`);
  }
  if (ownValue(record, 'subtaskId') !== expectedSubtask) {
    reader.fail(`subtaskId "${displayValue(ownValue(record, 'subtaskId'))}" is not ${expectedSubtask}`);
  }
  const scopePolicy = ownValue(record, 'scopePolicy');
  if (scopePolicy !== expectedPolicy) {
    reader.fail(`scopePolicy "${displayValue(scopePolicy)}" contradicts the Intent Map policy "${expectedPolicy}"`);
  }
  let commits: [string, string];
  try {
    commits = checkCommits(ownValue(record, 'graphBaseCommit'), ownValue(record, 'implementationCommit'), identity, true);
  } catch (error) {
    if (error instanceof ScopeAuditFailure) reader.fail('graphBaseCommit/implementationCommit are not two distinct lower-case commits');
    throw error;
  }
  let writeIntent: string[];
  try {
    writeIntent = checkWriteIntent(ownValue(record, 'writeIntent'), identity, true);
  } catch (error) {
    if (error instanceof ScopeAuditFailure) reader.fail('writeIntent is not a sorted list of distinct normalised patterns');
    throw error;
  }
  const coverage = ownValue(record, 'coverage');
  if (coverage !== (writeIntent.length === 0 ? 'explicit-empty' : 'declared')) reader.fail(`coverage "${displayValue(coverage)}" does not match writeIntent`);

  const limit = SCOPE_AUDIT_LIST_LIMIT;
  const committedChangeCount = reader.count(record, 'committedChangeCount', SCOPE_AUDIT_MAX_CHANGES);
  const committedChanges = reader.changes(record, 'committedChanges', 'committed');
  const committedChangesTruncated = reader.flag(record, 'committedChangesTruncated');
  reader.agreement('committedChanges', committedChangeCount, committedChanges.length, committedChangesTruncated);
  const dirtyWorktreeAvailable = reader.flag(record, 'dirtyWorktreeAvailable');
  const dirtyChangeCount = reader.count(record, 'dirtyChangeCount', SCOPE_AUDIT_MAX_CHANGES);
  const dirtyChanges = reader.changes(record, 'dirtyChanges', 'dirty');
  const dirtyChangesTruncated = reader.flag(record, 'dirtyChangesTruncated');
  reader.agreement('dirtyChanges', dirtyChangeCount, dirtyChanges.length, dirtyChangesTruncated);
  if (!dirtyWorktreeAvailable && (dirtyChangeCount > 0 || dirtyChangesTruncated)) {
    reader.fail('dirty changes are recorded although the worktree was not inspected');
  }
  const hasDirty = reader.flag(record, 'hasDirty');
  if (hasDirty !== dirtyChangeCount > 0) reader.fail(`hasDirty is ${hasDirty} for ${dirtyChangeCount} dirty changes`);

  const maxPaths = 2 * (committedChangeCount + dirtyChangeCount);
  const actualPathCount = reader.count(record, 'actualPathCount', maxPaths);
  if ((actualPathCount === 0) !== (maxPaths === 0)) reader.fail(`actualPathCount ${actualPathCount} does not match the recorded changes`);
  const actualPaths = reader.paths(record, 'actualPaths');
  const actualPathsTruncated = reader.flag(record, 'actualPathsTruncated');
  reader.agreement('actualPaths', actualPathCount, actualPaths.length, actualPathsTruncated);
  const outsideIntentPathCount = reader.count(record, 'outsideIntentPathCount', actualPathCount);
  const outsideIntentPaths = reader.paths(record, 'outsideIntentPaths');
  const outsideIntentPathsTruncated = reader.flag(record, 'outsideIntentPathsTruncated');
  reader.agreement('outsideIntentPaths', outsideIntentPathCount, outsideIntentPaths.length, outsideIntentPathsTruncated);

  // A path list flagged truncated below the cap means the reporter cut a list,
  // which marks both path lists and requires a truncated change list.
  const reporterCut = (actualPathsTruncated && actualPathCount <= limit) || (outsideIntentPathsTruncated && outsideIntentPathCount <= limit);
  if (reporterCut && !(committedChangesTruncated || dirtyChangesTruncated)) {
    reader.fail('a path list is marked truncated although no change list was cut');
  }
  // A change list flagged truncated below the cap was cut by its reporter,
  // which makes both path lists incomplete.
  const changeListCut = (committedChangesTruncated && committedChangeCount <= limit) || (dirtyChangesTruncated && dirtyChangeCount <= limit);
  if ((reporterCut || changeListCut) && !(actualPathsTruncated && outsideIntentPathsTruncated)) {
    reader.fail('a change list was cut by its reporter but the path lists are not marked truncated');
  }
  for (const path of outsideIntentPaths) {
    if (pathCoveredByWriteIntent(writeIntent, path)) reader.fail(`outside path "${echoPath(path)}" is covered by writeIntent`);
  }
  if (actualPathCount <= limit) {
    const outside = actualPaths.filter((path) => !pathCoveredByWriteIntent(writeIntent, path));
    if (outside.length !== outsideIntentPathCount || !sameList(outside, outsideIntentPaths)) {
      reader.fail('outsideIntentPaths do not match actualPaths and writeIntent');
    }
  }

  const drift = reader.flag(record, 'drift');
  if (drift !== outsideIntentPathCount > 0) reader.fail(`drift is ${drift} for ${outsideIntentPathCount} outside paths`);
  const driftRaw = ownValue(record, 'driftEvidence');
  let driftEvidence: ScopeDriftEvidence | null = null;
  if (!drift) {
    if (driftRaw !== null) reader.fail('driftEvidence is present without drift');
  } else {
    if (!isPlainObject(driftRaw)) reader.fail('driftEvidence is missing although there is drift');
    reader.exactKeys(driftRaw, DRIFT_KEYS, 'driftEvidence');
    if (ownValue(driftRaw, 'code') !== 'INTENT_SCOPE_DRIFT') reader.fail('driftEvidence.code is not INTENT_SCOPE_DRIFT');
    const driftCount = reader.count(driftRaw, 'outsideIntentPathCount', actualPathCount, 'driftEvidence.outsideIntentPathCount');
    const driftPaths = reader.paths(driftRaw, 'outsideIntentPaths', 'driftEvidence.outsideIntentPaths');
    if (driftCount !== outsideIntentPathCount || !sameList(driftPaths, outsideIntentPaths)) {
      reader.fail('driftEvidence outside paths differ from outsideIntentPaths');
    }
    const truncated = reader.flag(driftRaw, 'truncated', 'driftEvidence.truncated');
    if (truncated !== outsideIntentPathsTruncated) reader.fail('driftEvidence.truncated differs from outsideIntentPathsTruncated');
    const committedOutsideCount = reader.count(
      driftRaw,
      'committedOutsideCount',
      Math.min(outsideIntentPathCount, 2 * committedChangeCount),
      'driftEvidence.committedOutsideCount',
    );
    const committedOutside = reader.paths(driftRaw, 'committedOutside', 'driftEvidence.committedOutside');
    reader.agreement('driftEvidence.committedOutside', committedOutsideCount, committedOutside.length, truncated);
    const dirtyOutsideCount = reader.count(
      driftRaw,
      'dirtyOutsideCount',
      Math.min(outsideIntentPathCount, 2 * dirtyChangeCount),
      'driftEvidence.dirtyOutsideCount',
    );
    const dirtyOutside = reader.paths(driftRaw, 'dirtyOutside', 'driftEvidence.dirtyOutside');
    reader.agreement('driftEvidence.dirtyOutside', dirtyOutsideCount, dirtyOutside.length, truncated);
    if (committedOutsideCount + dirtyOutsideCount < outsideIntentPathCount) reader.fail('driftEvidence committed and dirty outside paths do not add up');
    for (const path of [...committedOutside, ...dirtyOutside]) {
      if (pathCoveredByWriteIntent(writeIntent, path)) reader.fail(`driftEvidence path "${echoPath(path)}" is covered by writeIntent`);
    }
    // A complete change list determines its own outside paths exactly.
    const expectOutside = (
      field: 'committed' | 'dirty',
      changes: readonly ScopeEvidenceChange[],
      changeCount: number,
      outsideCount: number,
      listed: readonly string[],
    ): void => {
      if (changes.length !== changeCount) return;
      const sides = changes.flatMap((entry) => (entry.oldPath === undefined ? [entry.path] : [entry.path, entry.oldPath]));
      const derived = sortByteOrder(new Set(sides)).filter((path) => !pathCoveredByWriteIntent(writeIntent, path));
      if (derived.length !== outsideCount || !sameList(capped(derived), listed)) {
        reader.fail(`driftEvidence.${field}Outside does not match the recorded ${field} changes`);
      }
    };
    expectOutside('committed', committedChanges, committedChangeCount, committedOutsideCount, committedOutside);
    expectOutside('dirty', dirtyChanges, dirtyChangeCount, dirtyOutsideCount, dirtyOutside);
    if (outsideIntentPathCount <= limit) {
      const outside = new Set(outsideIntentPaths);
      const union = new Set([...committedOutside, ...dirtyOutside]);
      if (union.size !== outside.size || [...union].some((path) => !outside.has(path))) {
        reader.fail('driftEvidence committed and dirty outside paths do not make up outsideIntentPaths');
      }
    }
    driftEvidence = {
      code: 'INTENT_SCOPE_DRIFT',
      outsideIntentPathCount: driftCount,
      outsideIntentPaths: driftPaths,
      committedOutsideCount,
      committedOutside,
      dirtyOutsideCount,
      dirtyOutside,
      truncated,
    };
  }

  const evidence: ScopeEvidence = {
    schemaVersion: 1,
    parentTaskId: expectedParent,
    subtaskId: expectedSubtask,
    graphBaseCommit: commits[0],
    implementationCommit: commits[1],
    scopePolicy: expectedPolicy as ScopePolicy,
    coverage: writeIntent.length === 0 ? 'explicit-empty' : 'declared',
    writeIntent,
    actualPathCount,
    actualPaths,
    actualPathsTruncated,
    outsideIntentPathCount,
    outsideIntentPaths,
    outsideIntentPathsTruncated,
    committedChangeCount,
    committedChanges,
    committedChangesTruncated,
    dirtyChangeCount,
    dirtyChanges,
    dirtyChangesTruncated,
    dirtyWorktreeAvailable,
    hasDirty,
    drift,
    driftEvidence,
  };

  // With both change lists complete, every other field is determined by them:
  // re-derive and require an exact match.
  if (committedChangeCount <= limit && dirtyChangeCount <= limit) {
    const derived = deriveEvidence({
      parentTaskId: expectedParent,
      subtaskId: expectedSubtask,
      graphBaseCommit: commits[0],
      implementationCommit: commits[1],
      scopePolicy: expectedPolicy as ScopePolicy,
      writeIntent,
      committedChanges,
      committedReporterTruncated: committedChangesTruncated,
      dirtyChanges,
      dirtyReporterTruncated: dirtyChangesTruncated,
      dirtyWorktreeAvailable,
    });
    const difference = firstDifference(evidence, derived);
    if (difference !== null) reader.fail(`${difference} does not match the recorded changes`);
  }
  return evidence;
}

/**
 * Re-validate a persisted `scopeEvidence` object on load (docs/seeds/task-graph-v1.md §9).
 * Never throws; returns a deep-frozen canonical copy (contract key order) or
 * a `TASK_STATE_CONFLICT` error at stage `scope-audit`.
 *
 * Checks: exact keys; schemaVersion 1; identity and scopePolicy equal to
 * `expected` (a contradicting policy is refused); two distinct lower-case
 * commits; writeIntent sorted, distinct, normalised, and coverage to match;
 * every list ≤ 64 sorted entries of valid paths/changes with count/list/
 * truncated agreement (length = count when ≤ 64, else exactly 64 with
 * truncated true); hasDirty ⇔ dirty count > 0; no dirty changes when the
 * worktree was not inspected; drift ⇔ outside count > 0; driftEvidence null ⇔
 * no drift, and its lists agree with the top-level ones; listed outside paths
 * are not covered by writeIntent. When both change lists are complete
 * (counts ≤ 64) the whole object is re-derived from them and must match
 * exactly.
 */
export function checkScopeEvidence(
  evidence: unknown,
  expected: { parentTaskId: string; subtaskId: string; scopePolicy: string },
): ContractResult<ScopeEvidence, ScopeAuditError> {
  return guarded(
    () => (isPlainObject(expected) ? identityOf(expected) : { parentTaskId: '', subtaskId: '' }),
    () => deepFreeze(check(evidence, expected)),
  );
}

/** Outside paths named in the visible warn reason. */
const DRIFT_REASON_PATHS = 3;

/**
 * The visible `warn` reason (docs/seeds/task-graph-v1.md §9): `INTENT_SCOPE_DRIFT: ` plus
 * the first up to three outside paths, comma-separated, and ` (+N more)` when
 * there are more; bounded with boundMessage. Null without drift.
 */
export function driftReason(evidence: ScopeEvidence): string | null {
  if (!isPlainObject(evidence) || evidence.drift !== true) return null;
  const paths = Array.isArray(evidence.outsideIntentPaths) ? evidence.outsideIntentPaths.slice(0, DRIFT_REASON_PATHS) : [];
  const count = typeof evidence.outsideIntentPathCount === 'number' ? evidence.outsideIntentPathCount : paths.length;
  const more = count > paths.length ? ` (+${count - paths.length} more)` : '';
  // Bound the path list first so the "(+N more)" suffix always survives.
  return boundMessage(boundText(`INTENT_SCOPE_DRIFT: ${paths.join(', ')}`, MAX_MESSAGE_CHARS - more.length) + more);
}
