/**
 * The write-intent glob matcher of Scope Audit v1: does a normalised
 * Intent Map `writeIntent` pattern cover a repository-relative path? Seed 002
 * ("Optional Intent Map v1 companion"): additions, modifications, deletions,
 * copies and both sides of renames "are matched against the subtask's
 * normalized writeIntent"; this file is that match. The exact semantics are
 * pinned by test/graphs/contract.scope-audit.test.ts and documented on
 * {@link matchesWriteIntentPattern}.
 *
 * Why our own matcher and not picomatch/minimatch/micromatch (all in
 * node_modules): their glob dialect is not ours, so swapping would change
 * which paths count as drift. They expand `{a,b}` braces and `+(…)`/`@(…)`
 * extglobs (here literal characters), treat `\` as an escape (here a literal,
 * after normalisation never a separator), skip dot files unless asked, and
 * read a `**` that is not a whole segment (`src/a**b`) as `*`, where ours
 * crosses `/`. Patterns come from agents, so the matcher must also stay
 * linear on hostile input: each pattern is compiled once to the cheapest of
 * five strategies (exact literal, per-segment steps, one-quantifier regex,
 * bit-parallel NFA, general NFA), all equal to the regex translation.
 *
 * Pure, I/O-free; compiled patterns are cached (bounded).
 */

// ---------------------------------------------------------------------------
// Matcher (docs/seeds/task-graph-v1.md §9 "Matching")
// ---------------------------------------------------------------------------

const SLASH = 0x2f;

/** A UTF-16 surrogate without its partner: never half of a matched pair, never a valid reported path. */
export const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

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
