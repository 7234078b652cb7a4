/**
 * Intent Map v1: optional write-intent declarations beside a Task Graph
 * (seed 002 "Optional Intent Map v1 companion"; docs/seeds/task-graph-v1.md §5, docs/seeds/README.md §4 item 8).
 *
 * Pure: patterns are repository-relative path/glob *data*. Nothing here
 * resolves a path against a filesystem.
 */
import type {
  IntentCoverage,
  IntentMapGraphContext,
  NormalizedIntentDeclaration,
  NormalizedIntentMap,
  ScopePolicy,
  TaskGraphInvalid,
  ValidateIntentMapResult,
  WriteIntentConflict,
} from './types.js';
import { ScopePolicySchema } from './schemas.js';
import { ContractFailure, fail as failAt, type FailureOptions } from './failure.js';
import { compareByteOrder, deepFreeze, displayValue, firstUnknownKey, isPlainObject, ownValue, sortByteOrder, utf8ByteLength } from './text.js';

export const INTENT_MAP_SCHEMA_VERSION = 1;
export const INTENT_MAP_SCOPE_POLICIES: readonly ScopePolicy[] = Object.freeze([...ScopePolicySchema.options]);
export const INTENT_MAP_DEFAULT_SCOPE_POLICY: ScopePolicy = 'warn';
/** 1 MiB of serialised JSON. */
export const INTENT_MAP_MAX_INPUT_BYTES = 1024 * 1024;
/** Patterns in total, across all declarations. */
export const INTENT_MAP_MAX_PATTERNS = 4096;
/** UTF-8 bytes per pattern. */
export const INTENT_MAP_MAX_PATTERN_BYTES = 4096;
/** Characters of a pattern echoed in a conflict fact. */
const MAX_CONFLICT_PATTERN_CHARS = 4096;
/** Characters of a user value echoed in an intent-map message. */
const MAX_INTENT_ECHO_CHARS = 256;

const TOP_LEVEL_KEYS: ReadonlySet<string> = new Set(['schemaVersion', 'parentTaskId', 'scopePolicy', 'subtasks']);
const DECLARATION_KEYS: ReadonlySet<string> = new Set(['id', 'writeIntent']);
const CONTROL_CHARACTER = /[\u0000-\u001F\u007F]/;
const DRIVE_PREFIX = /^[A-Za-z]:/;
const GLOB_SYNTAX = /[*?[\]{}]/;

function fail(message: string, options: FailureOptions = {}): never {
  return failAt('intent-map-validation', message, options);
}

function echo(value: unknown): string {
  return displayValue(value, MAX_INTENT_ECHO_CHARS);
}

function isRepositoryRelative(pattern: string): boolean {
  return !pattern.startsWith('/') && !pattern.startsWith('\\') && !DRIVE_PREFIX.test(pattern);
}

function normalizePattern(value: unknown, options: FailureOptions): string {
  if (typeof value !== 'string' || value.trim().length === 0) {
    fail('Intent Map v1 writeIntent patterns must be non-empty strings.', options);
  }
  if (utf8ByteLength(value) > INTENT_MAP_MAX_PATTERN_BYTES) {
    fail(`Intent Map v1 writeIntent pattern exceeds ${INTENT_MAP_MAX_PATTERN_BYTES} bytes.`, options);
  }
  if (CONTROL_CHARACTER.test(value)) {
    fail('Intent Map v1 writeIntent pattern contains a control character.', options);
  }
  // `/x` (POSIX absolute), `\\server\share` (UNC), `C:\x` (drive-absolute), `C:x` (drive-relative).
  if (!isRepositoryRelative(value)) {
    fail(`Intent Map v1 writeIntent pattern must be repository-relative: "${echo(value)}".`, options);
  }
  if (value.startsWith('!')) {
    fail(`Intent Map v1 writeIntent pattern cannot use negation: "${echo(value)}".`, options);
  }
  const segments = value.replaceAll('\\', '/').split('/');
  if (segments.includes('..')) {
    fail(`Intent Map v1 writeIntent pattern cannot escape the repository: "${echo(value)}".`, options);
  }
  const normalized = segments.filter((segment) => segment !== '' && segment !== '.').join('/');
  if (normalized === '') {
    fail(`Intent Map v1 writeIntent pattern is malformed: "${echo(value)}".`, options);
  }
  // Dropping a leading `./` must not turn a relative pattern into a drive or
  // negation pattern (`./C:x` → `C:x`, `./!x` → `!x`); refuse those as well.
  if (!isRepositoryRelative(normalized)) {
    fail(`Intent Map v1 writeIntent pattern must be repository-relative: "${echo(value)}".`, options);
  }
  if (normalized.startsWith('!')) {
    fail(`Intent Map v1 writeIntent pattern cannot use negation: "${echo(value)}".`, options);
  }
  return normalized;
}

/**
 * Normalise one repository-relative write-intent pattern (docs/seeds/task-graph-v1.md §5).
 *
 * Order: non-empty after trim (the pattern itself is not trimmed) → ≤ 4096
 * UTF-8 bytes → no control characters → not absolute (POSIX `/…`, UNC `\\…`,
 * drive-absolute `C:\…`, drive-relative `C:…`) → no leading `!` → backslashes
 * become `/` → any `..` segment refused → empty and `.` segments dropped →
 * empty result refused. `src\server//./api/**` → `src/server/api/**`.
 *
 * Returns `{ ok: true, value }` or `{ ok: false, error }` (TASK_GRAPH_INVALID,
 * stage `intent-map-validation`); never throws.
 */
export function normalizeWriteIntentPattern(
  value: unknown,
  options: { parentTaskId?: string | null; subtaskId?: string | null } = {},
): { ok: true; value: string } | { ok: false; error: TaskGraphInvalid } {
  try {
    return { ok: true, value: normalizePattern(value, options) };
  } catch (error) {
    if (error instanceof ContractFailure) return { ok: false, error: error.error };
    throw error;
  }
}

function serializedBytes(input: unknown, parentTaskId: string): number {
  let serialized: string | undefined;
  try {
    serialized = JSON.stringify(input);
  } catch {
    fail('Intent Map v1 input must be JSON-serializable.', { parentTaskId });
  }
  if (typeof serialized !== 'string') fail('Intent Map v1 input must be JSON-serializable.', { parentTaskId });
  return utf8ByteLength(serialized);
}

function validate(input: unknown, graph: IntentMapGraphContext): NormalizedIntentMap | null {
  if (input === undefined || input === null) return null;
  const graphSubtasks: unknown = graph !== null && typeof graph === 'object' ? graph.subtasks : undefined;
  const graphParentTaskId: unknown = graph !== null && typeof graph === 'object' ? graph.parentTaskId : undefined;
  if (!Array.isArray(graphSubtasks) || typeof graphParentTaskId !== 'string') {
    fail('Intent Map v1 requires a validated Task Graph v1 companion.');
  }
  const parentTaskId = graphParentTaskId;
  if (!isPlainObject(input)) fail('Intent Map v1 input must be a JSON object.', { parentTaskId });
  if (serializedBytes(input, parentTaskId) > INTENT_MAP_MAX_INPUT_BYTES) {
    fail(`Intent Map v1 exceeds the ${INTENT_MAP_MAX_INPUT_BYTES} byte limit.`, { parentTaskId });
  }
  const unknown = firstUnknownKey(input, TOP_LEVEL_KEYS);
  if (unknown !== null) fail(`Intent Map v1 input contains unknown field "${echo(unknown)}".`, { parentTaskId });
  const schemaVersion = ownValue(input, 'schemaVersion');
  if (schemaVersion !== INTENT_MAP_SCHEMA_VERSION) {
    fail(`Unsupported Intent Map schemaVersion: ${echo(schemaVersion ?? '(missing)')}. Expected 1.`, { parentTaskId });
  }
  if (ownValue(input, 'parentTaskId') !== parentTaskId) {
    fail(`Intent Map v1 parentTaskId must match Task Graph ${parentTaskId}.`, { parentTaskId });
  }
  const rawPolicy = ownValue(input, 'scopePolicy');
  const scopePolicy = rawPolicy === undefined ? INTENT_MAP_DEFAULT_SCOPE_POLICY : rawPolicy;
  if (typeof scopePolicy !== 'string' || !(INTENT_MAP_SCOPE_POLICIES as readonly string[]).includes(scopePolicy)) {
    fail(`Unsupported Intent Map scopePolicy: ${echo(scopePolicy)}.`, { parentTaskId });
  }
  const declarationsInput = ownValue(input, 'subtasks');
  if (!Array.isArray(declarationsInput)) fail('Intent Map v1 subtasks must be an array.', { parentTaskId });

  const graphIds = new Set<string>();
  for (const subtask of graphSubtasks as unknown[]) {
    const id: unknown = subtask !== null && typeof subtask === 'object' ? (subtask as { id?: unknown }).id : undefined;
    if (typeof id === 'string') graphIds.add(id);
  }
  const declarations = new Map<string, NormalizedIntentDeclaration>();
  const declaredBy = new Map<string, string>();
  let totalPatterns = 0;
  for (let index = 0; index < declarationsInput.length; index += 1) {
    const declaration: unknown = declarationsInput[index];
    if (!isPlainObject(declaration)) fail(`Intent Map v1 subtask at index ${index} must be an object.`, { parentTaskId });
    const id = ownValue(declaration, 'id');
    const unknownField = firstUnknownKey(declaration, DECLARATION_KEYS);
    if (unknownField !== null) {
      fail(`Intent Map v1 subtask at index ${index} contains unknown field "${echo(unknownField)}".`, { parentTaskId, subtaskId: id });
    }
    if (typeof id !== 'string' || !graphIds.has(id)) {
      fail(`Intent Map v1 references unknown subtask "${echo(id)}".`, { parentTaskId, subtaskId: id });
    }
    if (declarations.has(id)) {
      fail(`Intent Map v1 contains duplicate subtask declaration "${id}".`, { parentTaskId, subtaskId: id });
    }
    const writeIntent = ownValue(declaration, 'writeIntent');
    if (!Array.isArray(writeIntent)) {
      fail(`Intent Map v1 subtask "${id}" writeIntent must be an array.`, { parentTaskId, subtaskId: id });
    }
    totalPatterns += writeIntent.length;
    if (totalPatterns > INTENT_MAP_MAX_PATTERNS) {
      fail(`Intent Map v1 exceeds the ${INTENT_MAP_MAX_PATTERNS} pattern limit.`, { parentTaskId, subtaskId: id });
    }
    const options = { parentTaskId, subtaskId: id };
    const patterns = (writeIntent as unknown[]).map((pattern) => normalizePattern(pattern, options));
    if (new Set(patterns).size !== patterns.length) {
      fail(`Intent Map v1 subtask "${id}" contains duplicate normalized writeIntent patterns.`, options);
    }
    for (const pattern of patterns) {
      const owner = declaredBy.get(pattern);
      if (owner !== undefined) {
        fail(`Intent Map v1 writeIntent pattern "${echo(pattern)}" is duplicated by subtasks "${owner}" and "${id}".`, options);
      }
      declaredBy.set(pattern, id);
    }
    declarations.set(id, { id, writeIntent: sortByteOrder(patterns) });
  }

  const missing = sortByteOrder([...graphIds].filter((id) => !declarations.has(id)));
  if (missing.length > 0) {
    fail(`Intent Map v1 is missing subtask declaration "${missing[0]}".`, { parentTaskId, subtaskId: missing[0] });
  }
  if (declarations.size !== graphIds.size) {
    fail('Intent Map v1 must cover every Task Graph subtask exactly once.', { parentTaskId });
  }

  return deepFreeze({
    schemaVersion: 1,
    parentTaskId,
    scopePolicy: scopePolicy as ScopePolicy,
    subtasks: [...declarations.values()].sort((left, right) => compareByteOrder(left.id, right.id)),
  });
}

/**
 * Validate and normalise an optional Intent Map v1 against a validated graph.
 *
 * Input: any value (≤ 1 MiB serialised, {@link INTENT_MAP_MAX_INPUT_BYTES}) and
 * the graph's `{ parentTaskId, subtasks: [{ id }] }` (a NormalizedGraph works).
 * `undefined`/`null` means "no companion map" and yields `{ ok: true, value: null }`.
 *
 * Checks, in the order of docs/seeds/task-graph-v1.md §5 (stage `intent-map-validation`):
 * graph companion present → object → JSON-serialisable → ≤ 1 MiB → unknown top
 * keys → `schemaVersion === 1` → `parentTaskId` equals the graph's →
 * `scopePolicy` ∈ observe|warn|strict (default warn) → `subtasks` array → per
 * declaration in input order: object, only `id`/`writeIntent`, id is a graph
 * subtask, not declared twice, `writeIntent` array, running total ≤ 4096
 * patterns, each pattern normalised ({@link normalizeWriteIntentPattern}), no
 * duplicate normalised pattern within the declaration, no pattern already
 * declared by another subtask → first missing subtask (sorted) → coverage count.
 *
 * Output: a deep-frozen {@link NormalizedIntentMap} (declarations sorted by id,
 * patterns sorted, `writeIntent: []` kept as explicit-empty coverage), or a
 * `TASK_GRAPH_INVALID` error. Never throws for bad input. Normalisation is
 * idempotent, so a persisted map can be revalidated on read by passing it back in.
 */
export function validateIntentMap(input: unknown, graph: IntentMapGraphContext): ValidateIntentMapResult {
  try {
    return { ok: true, value: validate(input, graph) };
  } catch (error) {
    if (error instanceof ContractFailure) return { ok: false, error: error.error };
    throw error;
  }
}

/**
 * Additive `intentCoverage` facts for status, inspect and plan (seed 002; docs/seeds/task-graph-v1.md §5).
 * Without a map: `available: false`, every subtask `coverage: "unavailable"`,
 * `writeIntent: null`. With a map: `declared`, or `explicit-empty` with
 * `writeIntent: []`. Subtasks are listed in byte order of id.
 */
export function intentCoverageFacts(subtaskIds: readonly string[], intentMap: NormalizedIntentMap | null | undefined): IntentCoverage {
  const ids = sortByteOrder(subtaskIds);
  if (!intentMap) {
    return {
      available: false,
      schemaVersion: null,
      scopePolicy: null,
      subtasks: ids.map((subtaskId) => ({ subtaskId, coverage: 'unavailable', writeIntent: null })),
    };
  }
  const declarations = new Map(intentMap.subtasks.map((declaration) => [declaration.id, declaration.writeIntent]));
  return {
    available: true,
    schemaVersion: 1,
    scopePolicy: intentMap.scopePolicy,
    subtasks: ids.map((subtaskId) => {
      const writeIntent = [...(declarations.get(subtaskId) ?? [])];
      return { subtaskId, coverage: writeIntent.length === 0 ? 'explicit-empty' : 'declared', writeIntent };
    }),
  };
}

/** A normalised pattern with its literal prefix: what the disjointness rule compares. */
interface PatternFacts {
  pattern: string;
  /** The segments before the first one containing glob syntax. */
  prefix: string[];
  wildcard: boolean;
}

function patternFacts(pattern: string): PatternFacts {
  const prefix: string[] = [];
  for (const segment of pattern.split('/')) {
    if (GLOB_SYNTAX.test(segment)) return { pattern, prefix, wildcard: true };
    prefix.push(segment);
  }
  return { pattern, prefix, wildcard: false };
}

/** {@link writeIntentPatternsMayOverlap} on facts computed beforehand. */
function factsMayOverlap(left: PatternFacts, right: PatternFacts): boolean {
  if (left.pattern === right.pattern) return true;
  if (!left.wildcard && !right.wildcard) return false;
  const shared = Math.min(left.prefix.length, right.prefix.length);
  for (let index = 0; index < shared; index += 1) {
    if (left.prefix[index] !== right.prefix[index]) return false;
  }
  return true;
}

/**
 * Whether two normalised patterns may intersect (docs/seeds/task-graph-v1.md §5, docs/seeds/README.md §4 item 8).
 *
 * Identical patterns overlap. Two wildcard-free patterns that differ are
 * disjoint (`src` and `src/a` are different files, not directory containment).
 * Otherwise the literal prefixes (segments before the first one containing
 * `* ? [ ] { }`) are compared over their shared length: any mismatch proves
 * disjointness, and no mismatch is treated as an overlap, conservatively.
 * `src/shared/**` vs `src/shared/file.js` overlap; `src/alpha/**` vs
 * `src/beta/**` are disjoint; `**\/x` overlaps everything.
 */
export function writeIntentPatternsMayOverlap(left: string, right: string): boolean {
  return factsMayOverlap(patternFacts(left), patternFacts(right));
}

function displayPattern(pattern: string): string {
  return pattern.length <= MAX_CONFLICT_PATTERN_CHARS ? pattern : `${pattern.slice(0, MAX_CONFLICT_PATTERN_CHARS - 1)}…`;
}

/**
 * Declarations by subtask id (id → sorted normalised patterns with their literal prefixes), for
 * repeated conflict checks over one map (docs/seeds/task-graph-v1.md §5). The prefixes are split once here: a plan compares
 * every READY subtask with every RUNNING and selected one, pattern by pattern, and splitting both
 * patterns on every comparison made the plan of 16 subtasks × 256 patterns take seconds.
 */
export function writeIntentIndex(intentMap: NormalizedIntentMap): ReadonlyMap<string, readonly PatternFacts[]> {
  return new Map(intentMap.subtasks.map((declaration) => [declaration.id, declaration.writeIntent.map(patternFacts)]));
}

/**
 * The first overlapping pattern pair between a candidate and another subtask,
 * scanning the candidate's sorted patterns against the other's, or null
 * (docs/seeds/task-graph-v1.md §5 "Conflict fact"). The fact lists the lower id first (byte
 * order); each echoed pattern is at most 4096 characters.
 */
export function conflictFromIndex(index: ReadonlyMap<string, readonly PatternFacts[]>, candidateId: string, otherId: string): WriteIntentConflict | null {
  const candidatePatterns = index.get(candidateId) ?? [];
  const otherPatterns = index.get(otherId) ?? [];
  for (const candidate of candidatePatterns) {
    for (const other of otherPatterns) {
      if (!factsMayOverlap(candidate, other)) continue;
      const candidatePattern = candidate.pattern;
      const otherPattern = other.pattern;
      const candidateFact = { subtaskId: candidateId, pattern: displayPattern(candidatePattern) };
      const otherFact = { subtaskId: otherId, pattern: displayPattern(otherPattern) };
      const candidateFirst = compareByteOrder(candidateId, otherId) < 0;
      return {
        code: 'WRITE_INTENT_CONFLICT',
        subtasks: candidateFirst ? [candidateId, otherId] : [otherId, candidateId],
        patterns: candidateFirst ? [candidateFact, otherFact] : [otherFact, candidateFact],
        conservative: candidatePattern !== otherPattern,
      };
    }
  }
  return null;
}

/**
 * The deterministic `WRITE_INTENT_CONFLICT` fact between two subtasks of a
 * normalised Intent Map, or null when they are provably disjoint or there is
 * no map. Conflicts only constrain scheduling; they never add, remove or infer
 * a dependency edge (docs/seeds/task-graph-v1.md §5).
 */
export function writeIntentConflictBetween(
  intentMap: NormalizedIntentMap | null | undefined,
  candidateId: string,
  otherId: string,
): WriteIntentConflict | null {
  if (!intentMap) return null;
  return conflictFromIndex(writeIntentIndex(intentMap), candidateId, otherId);
}
