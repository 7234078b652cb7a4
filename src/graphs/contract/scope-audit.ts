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
 */
import type { ContractResult, ScopePolicy } from './types.js';
import { INTENT_MAP_MAX_PATTERNS, INTENT_MAP_SCOPE_POLICIES, normalizeWriteIntentPattern } from './intent-map.js';
import { isSubtaskId, isTaskId } from './ids.js';
import {
  boundMessage,
  boundText,
  compareByteOrder,
  deepFreeze,
  displayValue,
  isPlainObject,
  MAX_MESSAGE_CHARS,
  ownValue,
  sortByteOrder,
  utf8ByteLength,
} from './text.js';

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
// Matcher (docs/seeds/task-graph-v1.md §9 "Matching")
// ---------------------------------------------------------------------------

const SLASH = 0x2f;

type SegmentToken =
  | { readonly kind: 'char'; readonly cp: number }
  | { readonly kind: 'any' }
  | { readonly kind: 'class'; readonly negated: boolean; readonly singles: ReadonlySet<number>; readonly ranges: readonly number[] }
  | { readonly kind: 'star' };

type PatternToken = SegmentToken | { readonly kind: 'globstar' } | { readonly kind: 'globdir' };

const STAR: SegmentToken = { kind: 'star' };
const ANY: SegmentToken = { kind: 'any' };
const GLOBSTAR: PatternToken = { kind: 'globstar' };
const GLOBDIR: PatternToken = { kind: 'globdir' };

/** A path split once, so one path can be tested against many patterns. */
interface PreparedPath {
  readonly path: string;
  readonly segments: readonly string[];
  readonly basename: string;
}

type CompiledPattern = (path: PreparedPath) => boolean;

/**
 * Parse `[...]` starting at `chars[start] === '['`. A leading `!` negates; a
 * `]` right after `[` or `[!` is a member; `a-z` is a code point range. The
 * class never spans a `/` and never matches `/`. Returns null when the class
 * is not closed within its segment (the `[` is then a literal).
 */
function parseClass(chars: readonly string[], start: number): { token: SegmentToken; end: number } | null {
  let index = start + 1;
  let negated = false;
  if (chars[index] === '!') {
    negated = true;
    index += 1;
  }
  const singles = new Set<number>();
  const ranges: number[] = [];
  let first = true;
  for (;;) {
    const char = chars[index];
    if (char === undefined || char === '/') return null;
    if (char === ']' && !first) break;
    first = false;
    const low = char.codePointAt(0)!;
    const dash = chars[index + 1];
    const high = chars[index + 2];
    if (dash === '-' && high !== undefined && high !== ']' && high !== '/') {
      ranges.push(low, high.codePointAt(0)!);
      index += 3;
    } else {
      singles.add(low);
      index += 1;
    }
  }
  return { token: { kind: 'class', negated, singles, ranges }, end: index };
}

/**
 * Glob → tokens, left to right: `**` followed by `/` is "zero or more
 * directories" (the `/` is consumed), any other `**` is "anything including
 * `/`", `*` is "within one segment", `?` is one non-`/` character, `[...]` a
 * class, everything else (including `{}`, `+`, `(`, `$`, `.`) a literal.
 * Characters are Unicode code points.
 */
function tokenize(pattern: string): PatternToken[] {
  const chars = Array.from(pattern);
  const tokens: PatternToken[] = [];
  for (let index = 0; index < chars.length; index += 1) {
    const char = chars[index];
    if (char === '*') {
      if (chars[index + 1] === '*') {
        if (chars[index + 2] === '/') {
          tokens.push(GLOBDIR);
          index += 2;
        } else {
          tokens.push(GLOBSTAR);
          index += 1;
        }
      } else {
        tokens.push(STAR);
      }
    } else if (char === '?') {
      tokens.push(ANY);
    } else if (char === '[') {
      const parsed = parseClass(chars, index);
      if (parsed === null) {
        tokens.push({ kind: 'char', cp: 0x5b });
      } else {
        tokens.push(parsed.token);
        index = parsed.end;
      }
    } else {
      tokens.push({ kind: 'char', cp: char.codePointAt(0)! });
    }
  }
  return tokens;
}

function matchesOne(token: SegmentToken, cp: number): boolean {
  switch (token.kind) {
    case 'char':
      return token.cp === cp;
    case 'any':
      return cp !== SLASH;
    case 'class': {
      if (cp === SLASH) return false;
      let member = token.singles.has(cp);
      for (let index = 0; !member && index < token.ranges.length; index += 2) {
        member = cp >= token.ranges[index] && cp <= token.ranges[index + 1];
      }
      return member !== token.negated;
    }
    default:
      return false;
  }
}

function codePointWidth(text: string, index: number): number {
  return text.codePointAt(index)! > 0xffff ? 2 : 1;
}

/**
 * Match one segment's tokens against text that contains no `/`. With a single
 * kind of star, backtracking to the latest star is complete, so this is
 * O(text × tokens) in the worst case and linear in practice (no regex, so no
 * catastrophic backtracking on `*a*a*a*b`).
 */
function matchSegmentTokens(tokens: readonly SegmentToken[], text: string): boolean {
  let token = 0;
  let at = 0;
  let starToken = -1;
  let starAt = 0;
  while (at < text.length) {
    if (token < tokens.length) {
      const current = tokens[token];
      if (current.kind === 'star') {
        starToken = token;
        starAt = at;
        token += 1;
        continue;
      }
      const cp = text.codePointAt(at)!;
      if (matchesOne(current, cp)) {
        token += 1;
        at += cp > 0xffff ? 2 : 1;
        continue;
      }
    }
    if (starToken < 0) return false;
    starAt += codePointWidth(text, starAt);
    at = starAt;
    token = starToken + 1;
  }
  while (token < tokens.length && tokens[token].kind === 'star') token += 1;
  return token === tokens.length;
}

function literalText(tokens: readonly SegmentToken[]): string | null {
  let text = '';
  for (const token of tokens) {
    if (token.kind !== 'char') return null;
    text += String.fromCodePoint(token.cp);
  }
  return text;
}

/** A matcher for one path segment (or a basename): literal, `pre*suf`, or general. */
function compileSegment(tokens: readonly SegmentToken[]): (text: string) => boolean {
  const literal = literalText(tokens);
  if (literal !== null) return (text) => text === literal;
  const stars = tokens.filter((token) => token.kind === 'star').length;
  const starAt = tokens.findIndex((token) => token.kind === 'star');
  const prefix = stars === 1 ? literalText(tokens.slice(0, starAt)) : null;
  const suffix = stars === 1 ? literalText(tokens.slice(starAt + 1)) : null;
  // (Not for a pattern holding a lone surrogate, which must not match half of a pair.)
  if (prefix !== null && suffix !== null && !LONE_SURROGATE.test(prefix) && !LONE_SURROGATE.test(suffix)) {
    // One star between literals: the middle is any run of non-`/` characters.
    const minimum = prefix.length + suffix.length;
    return (text) => text.length >= minimum && text.startsWith(prefix) && text.endsWith(suffix);
  }
  const bounds = literalBounds(tokens);
  return (text) => bounds.admits(text) && matchSegmentTokens(tokens, text);
}

/**
 * The literal characters every match must start and end with (the tokens
 * before the first and after the last non-literal token): a cheap,
 * sound pre-filter in front of the full matcher. Only for token lists that
 * contain at least one non-literal token, so prefix and suffix never overlap.
 */
function literalBounds(tokens: readonly PatternToken[]): { admits: (text: string) => boolean } {
  let first = 0;
  while (first < tokens.length && tokens[first].kind === 'char') first += 1;
  let last = tokens.length;
  while (last > first && tokens[last - 1].kind === 'char') last -= 1;
  const prefix = literalText(tokens.slice(0, first) as SegmentToken[]) ?? '';
  const suffix = literalText(tokens.slice(last) as SegmentToken[]) ?? '';
  const minimum = prefix.length + suffix.length;
  if (minimum === 0) return { admits: () => true };
  return { admits: (text) => text.length >= minimum && text.startsWith(prefix) && text.endsWith(suffix) };
}

type SegmentStep = { readonly kind: 'segment'; readonly test: (text: string) => boolean } | { readonly kind: 'dirs' };

/**
 * Segment-level matching for anchored patterns whose `**` only ever forms a
 * whole segment: `dirs` is zero or more path segments, anything else exactly
 * one. The steps before the first and after the last `dirs` are pinned to the
 * first and last path segments; the middle is matched greedily, backtracking
 * to the latest `dirs` (complete for one kind of star).
 */
function compileSegmentSteps(steps: readonly SegmentStep[]): (segments: readonly string[]) => boolean {
  let head = 0;
  while (head < steps.length && steps[head].kind === 'segment') head += 1;
  if (head === steps.length) {
    return (segments) => segments.length === steps.length && steps.every((step, index) => matchStep(step, segments[index]));
  }
  let tail = steps.length;
  while (steps[tail - 1].kind === 'segment') tail -= 1;
  const minimum = steps.filter((step) => step.kind === 'segment').length;
  const tailLength = steps.length - tail;
  return (segments) => {
    if (segments.length < minimum) return false;
    for (let index = 0; index < head; index += 1) if (!matchStep(steps[index], segments[index])) return false;
    const offset = segments.length - tailLength;
    for (let index = 0; index < tailLength; index += 1) if (!matchStep(steps[tail + index], segments[offset + index])) return false;
    return matchMiddle(steps, head, tail, segments, head, offset);
  };
}

function matchStep(step: SegmentStep, segment: string): boolean {
  return step.kind === 'segment' && step.test(segment);
}

function matchMiddle(
  steps: readonly SegmentStep[],
  firstStep: number,
  endStep: number,
  segments: readonly string[],
  firstSegment: number,
  endSegment: number,
): boolean {
  let step = firstStep;
  let at = firstSegment;
  let starStep = -1;
  let starAt = 0;
  while (at < endSegment) {
    if (step < endStep) {
      const current = steps[step];
      if (current.kind === 'dirs') {
        starStep = step;
        starAt = at;
        step += 1;
        continue;
      }
      if (current.test(segments[at])) {
        step += 1;
        at += 1;
        continue;
      }
    }
    if (starStep < 0) return false;
    starAt += 1;
    at = starAt;
    step = starStep + 1;
  }
  while (step < endStep && steps[step].kind === 'dirs') step += 1;
  return step === endStep;
}

/**
 * The general matcher for anchored patterns with a `**` inside a segment
 * (`src/**.ts`, `a**b/c`): a Thompson NFA simulation over code points,
 * O(path × tokens), never exponential. State `i` is "before token i"; state
 * `loopBase + i` is "inside the `.*` of a `**` + `/` group at token i".
 */
function compileNfa(tokens: readonly PatternToken[]): (text: string) => boolean {
  if (tokens.length <= MAX_BIT_PARALLEL_TOKENS) return compileBitParallelNfa(tokens);
  // Buffers are reused across calls: matching is synchronous and never re-entrant.
  const size = 2 * tokens.length + 1;
  const buffers: [Uint8Array, Uint8Array] = [new Uint8Array(size), new Uint8Array(size)];
  const stack: number[] = [];
  return (text) => matchTokensNfa(tokens, text, buffers, stack);
}

function matchTokensNfa(tokens: readonly PatternToken[], text: string, buffers: [Uint8Array, Uint8Array], stack: number[]): boolean {
  const count = tokens.length;
  const loopBase = count + 1;
  let [current, next] = buffers;
  current.fill(0);
  stack.length = 0;
  const add = (set: Uint8Array, state: number): void => {
    stack.push(state);
    while (stack.length > 0) {
      const item = stack.pop()!;
      if (set[item] === 1) continue;
      set[item] = 1;
      if (item >= count) continue; // accept or loop states have no epsilon edges
      const kind = tokens[item].kind;
      if (kind === 'star' || kind === 'globstar') stack.push(item + 1);
      else if (kind === 'globdir') stack.push(item + 1, loopBase + item);
    }
  };
  add(current, 0);
  for (let at = 0; at < text.length; ) {
    const cp = text.codePointAt(at)!;
    at += cp > 0xffff ? 2 : 1;
    next.fill(0);
    let alive = false;
    for (let state = 0; state < count; state += 1) {
      if (current[state] === 1) {
        const token = tokens[state];
        if (token.kind === 'star') {
          if (cp !== SLASH) add(next, state);
        } else if (token.kind === 'globstar') {
          add(next, state);
        } else if (token.kind !== 'globdir' && matchesOne(token, cp)) {
          add(next, state + 1);
        }
      }
      if (current[loopBase + state] === 1) {
        add(next, loopBase + state);
        if (cp === SLASH) add(next, state + 1);
      }
    }
    for (let state = 0; state < next.length && !alive; state += 1) alive = next[state] === 1;
    if (!alive) return false;
    [current, next] = [next, current];
  }
  return current[count] === 1;
}

/** Position states 0..n (n = accept) must fit in a 32-bit integer. */
const MAX_BIT_PARALLEL_TOKENS = 30;

/**
 * The same NFA for short token lists, one bit per state (shift-and): bit i of
 * `positions` is "before token i", bit i of `loops` is "inside the `.*` of the
 * `**` + `/` group at token i". A few integer operations per character.
 */
function compileBitParallelNfa(tokens: readonly PatternToken[]): (text: string) => boolean {
  const count = tokens.length;
  let starMask = 0;
  let globstarMask = 0;
  let globdirMask = 0;
  for (let index = 0; index < count; index += 1) {
    const kind = tokens[index].kind;
    if (kind === 'star') starMask |= 1 << index;
    else if (kind === 'globstar') globstarMask |= 1 << index;
    else if (kind === 'globdir') globdirMask |= 1 << index;
  }
  const epsilonMask = starMask | globstarMask | globdirMask;
  const accept = 1 << count;
  const singleMask = (cp: number): number => {
    let mask = 0;
    for (let index = 0; index < count; index += 1) {
      const token = tokens[index];
      if (token.kind !== 'star' && token.kind !== 'globstar' && token.kind !== 'globdir' && matchesOne(token, cp)) mask |= 1 << index;
    }
    return mask;
  };
  const ascii = new Int32Array(128);
  for (let cp = 0; cp < 128; cp += 1) ascii[cp] = singleMask(cp);
  const close = (positions: number): number => {
    let closed = positions;
    for (;;) {
      const added = ((closed & epsilonMask) << 1) & ~closed;
      if (added === 0) return closed;
      closed |= added;
    }
  };
  return (text) => {
    let positions = close(1);
    let loops = positions & globdirMask;
    for (let at = 0; at < text.length; ) {
      const cp = text.codePointAt(at)!;
      at += cp > 0xffff ? 2 : 1;
      const single = cp < 128 ? ascii[cp] : singleMask(cp);
      let next = ((positions & single) << 1) | (positions & globstarMask);
      if (cp === SLASH) next |= loops << 1;
      else next |= positions & starMask;
      positions = close(next);
      loops |= positions & globdirMask;
      if (positions === 0 && loops === 0) return false;
    }
    return (positions & accept) !== 0;
  };
}

function compilePattern(pattern: string): CompiledPattern {
  if (!pattern.includes('/')) {
    // Basename mode: the basename holds no `/`, so `**` means the same as `*`.
    const tokens = tokenize(pattern).map((token): SegmentToken => (token.kind === 'globstar' ? STAR : (token as SegmentToken)));
    const test = compileSegment(tokens);
    return (path) => test(path.basename);
  }
  const rawSegments = pattern.split('/');
  const steps: SegmentStep[] = [];
  let crossing = false;
  for (let index = 0; index < rawSegments.length && !crossing; index += 1) {
    const raw = rawSegments[index];
    if (raw === '**') {
      if (index < rawSegments.length - 1) {
        steps.push({ kind: 'dirs' });
      } else {
        // A trailing `/**` is `.*` after the `/`: one or more whole segments of a valid path.
        steps.push({ kind: 'segment', test: () => true }, { kind: 'dirs' });
      }
      continue;
    }
    const tokens = tokenize(raw);
    if (tokens.some((token) => token.kind === 'globstar' || token.kind === 'globdir')) crossing = true;
    else steps.push({ kind: 'segment', test: compileSegment(tokens as SegmentToken[]) });
  }
  const tokens = tokenize(pattern);
  const literal = literalText(tokens as SegmentToken[]);
  if (literal !== null) return (path) => path.path === literal;
  const bounds = literalBounds(tokens);
  if (!crossing) {
    const matchSegments = compileSegmentSteps(steps);
    return (path) => bounds.admits(path.path) && matchSegments(path.segments);
  }
  const unbounded = tokens.filter((token) => token.kind === 'star' || token.kind === 'globstar' || token.kind === 'globdir').length;
  if (unbounded <= 1) {
    // One quantifier cannot backtrack catastrophically: the regex is O(path × pattern).
    const regex = tokensToRegExp(tokens);
    return (path) => bounds.admits(path.path) && regex.test(path.path);
  }
  const nfa = compileNfa(tokens);
  return (path) => bounds.admits(path.path) && nfa(path.path);
}

function codePointEscape(cp: number): string {
  return `\\u{${cp.toString(16)}}`;
}

/** The literal regex translation of docs/seeds/task-graph-v1.md §9 (flags `su`: code points, `.` matches every character). */
function tokensToRegExp(tokens: readonly PatternToken[]): RegExp {
  let source = '^';
  for (const token of tokens) {
    switch (token.kind) {
      case 'char':
        source += codePointEscape(token.cp);
        break;
      case 'any':
        source += '[^/]';
        break;
      case 'star':
        source += '[^/]*';
        break;
      case 'globstar':
        source += '.*';
        break;
      case 'globdir':
        source += '(?:.*/)?';
        break;
      case 'class': {
        let members = [...token.singles].map(codePointEscape).join('');
        for (let index = 0; index < token.ranges.length; index += 2) {
          const low = token.ranges[index];
          const high = token.ranges[index + 1];
          if (low <= high) members += `${codePointEscape(low)}-${codePointEscape(high)}`;
        }
        source += token.negated ? `[^${members}/]` : `(?!/)[${members}]`;
        break;
      }
    }
  }
  return new RegExp(`${source}$`, 'su');
}

/** Compiled matchers by pattern; cleared when full so it stays bounded in a long-lived process. */
const COMPILED = new Map<string, CompiledPattern>();
const MAX_COMPILED = 8192;

function compiled(pattern: string): CompiledPattern {
  let matcher = COMPILED.get(pattern);
  if (matcher === undefined) {
    matcher = compilePattern(pattern);
    if (COMPILED.size >= MAX_COMPILED) COMPILED.clear();
    COMPILED.set(pattern, matcher);
  }
  return matcher;
}

function preparePath(path: string): PreparedPath {
  const segments = path.split('/');
  return { path, segments, basename: segments[segments.length - 1] };
}

/**
 * The Scope Audit matcher (docs/seeds/task-graph-v1.md §9), for one normalised pattern and
 * one valid repository-relative path.
 *
 * `**` + `/` = zero or more directories; other `**` = anything including `/`;
 * `*` = within one segment; `?` = one non-`/` character; `[...]` a class
 * (leading `!` negates, `a-z` ranges, a first `]` is a member, never matches
 * `/`, unclosed `[` is literal); everything else literal. A pattern without
 * `/` matches the basename at any depth (`README.md` matches
 * `docs/README.md`); a pattern with `/` is anchored at the repository root and
 * must match the whole path (`src/index.js` does not match
 * `lib/src/index.js`; `src/**` matches `src/a` and `src/x/y`). A literal
 * `src` covers only a file named `src`.
 *
 * Semantically this is the regex translation above (`(?:.*\/)?`, `.*`,
 * `[^/]*`, `[^/]`, `[...]`, escaped literals, on code points), evaluated by
 * backtracking-free matchers so hostile patterns cannot stall the audit.
 * Compiled matchers are cached per pattern. Results for paths that
 * {@link auditScope} would refuse are unspecified (but never throw).
 */
export function matchesWriteIntentPattern(pattern: string, path: string): boolean {
  if (typeof pattern !== 'string' || typeof path !== 'string') return false;
  return compiled(pattern)(preparePath(path));
}

/** Whether any of the normalised patterns covers the path (`[]` covers nothing). */
export function pathCoveredByWriteIntent(writeIntent: readonly string[], path: string): boolean {
  if (!Array.isArray(writeIntent) || typeof path !== 'string' || writeIntent.length === 0) return false;
  const prepared = preparePath(path);
  for (const pattern of writeIntent) {
    if (typeof pattern === 'string' && compiled(pattern)(prepared)) return true;
  }
  return false;
}

// ---------------------------------------------------------------------------
// Failure plumbing
// ---------------------------------------------------------------------------

/** Characters of a path echoed in an error. */
const MAX_PATH_ECHO_CHARS = 256;

class ScopeAuditFailure extends Error {
  constructor(readonly error: ScopeAuditError) {
    super(error.message);
    this.name = 'ScopeAuditFailure';
  }
}

interface Identity {
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

function refuse(message: string, identity: Identity, path?: unknown): never {
  throw new ScopeAuditFailure(scopeAuditError(message, identity, path));
}

function echoPath(path: unknown): string {
  return displayValue(path, MAX_PATH_ECHO_CHARS);
}

/** Turn any throw into a result; unexpected throws (hostile getters) become a generic refusal. */
function guarded<T>(identity: () => Identity, body: () => T): ContractResult<T, ScopeAuditError> {
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
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const DRIVE_PREFIX = /^[A-Za-z]:/;
const SCOPE_POLICY_SET: ReadonlySet<string> = new Set(INTENT_MAP_SCOPE_POLICIES);
const CHANGE_KEYS: ReadonlySet<string> = new Set(['status', 'path', 'oldPath']);

type ChangeKind = 'committed' | 'dirty';

/** Why a reported path cannot be audited, or null when it is a sound repository-relative path. */
function pathProblem(path: unknown): string | null {
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

function checkChange(raw: unknown, kind: ChangeKind, where: string, identity: Identity): ScopeEvidenceChange {
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

function checkWriteIntent(raw: unknown, identity: Identity, requireSorted: boolean): string[] {
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

function checkCommits(base: unknown, implementation: unknown, identity: Identity, lowerOnly: boolean): [string, string] {
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

function identityOf(record: Record<string, unknown>): Identity {
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

function compareChanges(left: ScopeEvidenceChange, right: ScopeEvidenceChange): number {
  return compareByteOrder(left.path, right.path)
    || compareByteOrder(left.status, right.status)
    || compareOptional(left.oldPath, right.oldPath);
}

function capped<T>(values: readonly T[]): T[] {
  return values.slice(0, SCOPE_AUDIT_LIST_LIMIT);
}

function copyChange(change: ScopeEvidenceChange): ScopeEvidenceChange {
  return change.oldPath === undefined
    ? { status: change.status, path: change.path }
    : { status: change.status, oldPath: change.oldPath, path: change.path };
}

/** Build the evidence from validated facts; the only place evidence is computed (docs/seeds/task-graph-v1.md §9). */
function deriveEvidence(facts: AuditFacts): ScopeEvidence {
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
  const [graphBaseCommit, implementationCommit] = checkCommits(
    ownValue(input, 'graphBaseCommit'),
    ownValue(input, 'implementationCommit'),
    identity,
    false,
  );
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

// ---------------------------------------------------------------------------
// checkScopeEvidence
// ---------------------------------------------------------------------------

const EVIDENCE_KEYS: readonly string[] = [
  'schemaVersion', 'parentTaskId', 'subtaskId', 'graphBaseCommit', 'implementationCommit', 'scopePolicy',
  'coverage', 'writeIntent', 'actualPathCount', 'actualPaths', 'actualPathsTruncated', 'outsideIntentPathCount',
  'outsideIntentPaths', 'outsideIntentPathsTruncated', 'committedChangeCount', 'committedChanges',
  'committedChangesTruncated', 'dirtyChangeCount', 'dirtyChanges', 'dirtyChangesTruncated',
  'dirtyWorktreeAvailable', 'hasDirty', 'drift', 'driftEvidence',
];
const DRIFT_KEYS: readonly string[] = [
  'code', 'outsideIntentPathCount', 'outsideIntentPaths', 'committedOutsideCount', 'committedOutside',
  'dirtyOutsideCount', 'dirtyOutside', 'truncated',
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
      if (!Object.prototype.hasOwnProperty.call(record, key)) this.fail(`${where} is missing "${key}"`);
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
    const committedOutsideCount = reader.count(driftRaw, 'committedOutsideCount', Math.min(outsideIntentPathCount, 2 * committedChangeCount), 'driftEvidence.committedOutsideCount');
    const committedOutside = reader.paths(driftRaw, 'committedOutside', 'driftEvidence.committedOutside');
    reader.agreement('driftEvidence.committedOutside', committedOutsideCount, committedOutside.length, truncated);
    const dirtyOutsideCount = reader.count(driftRaw, 'dirtyOutsideCount', Math.min(outsideIntentPathCount, 2 * dirtyChangeCount), 'driftEvidence.dirtyOutsideCount');
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
