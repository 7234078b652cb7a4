import { describe, it, expect } from 'vitest';
import {
  intentCoverageFacts,
  normalizeWriteIntentPattern,
  validateIntentMap,
  writeIntentConflictBetween,
  writeIntentPatternsMayOverlap,
  NormalizedIntentMapSchema,
} from '../../src/graphs/contract/index.js';
import { intentMapError, validGraph, validIntentMap } from './fixtures.js';

function mapInput(overrides: Record<string, unknown> = {}): Record<string, any> {
  return {
    schemaVersion: 1,
    parentTaskId: 'task-product-slice',
    scopePolicy: 'warn',
    subtasks: [
      { id: 'backend', writeIntent: ['src/server/**'] },
      { id: 'frontend', writeIntent: [] },
      { id: 'docs', writeIntent: ['docs/**'] },
    ],
    ...overrides,
  };
}

function patternError(pattern: unknown): string {
  const result = normalizeWriteIntentPattern(pattern);
  if (result.ok) throw new Error(`expected ${String(pattern)} to be refused`);
  expect(result.error).toMatchObject({ code: 'TASK_GRAPH_INVALID', stage: 'intent-map-validation' });
  return result.error.message;
}

describe('validateIntentMap: normalisation', () => {
  it('should normalise backslashes, repeated separators and dot segments', () => {
    const result = normalizeWriteIntentPattern('src\\server//./api/**');
    expect(result).toEqual({ ok: true, value: 'src/server/api/**' });
    expect(normalizeWriteIntentPattern('./docs/./README.md/')).toEqual({ ok: true, value: 'docs/README.md' });
  });

  it('should sort declarations by id and each pattern list in byte order', () => {
    const map = validIntentMap(
      mapInput({
        subtasks: [
          { id: 'frontend', writeIntent: ['web/z.ts', 'web/B.ts', 'web/a.ts'] },
          { id: 'docs', writeIntent: [] },
          { id: 'backend', writeIntent: ['src\\b', 'src/a'] },
        ],
      }),
      validGraph(),
    );
    expect(map).toEqual({
      schemaVersion: 1,
      parentTaskId: 'task-product-slice',
      scopePolicy: 'warn',
      subtasks: [
        { id: 'backend', writeIntent: ['src/a', 'src/b'] },
        { id: 'docs', writeIntent: [] },
        { id: 'frontend', writeIntent: ['web/B.ts', 'web/a.ts', 'web/z.ts'] },
      ],
    });
    expect(Object.isFrozen(map.subtasks[0].writeIntent)).toBe(true);
    expect(NormalizedIntentMapSchema.parse(map)).toEqual(JSON.parse(JSON.stringify(map)));
  });

  it('should default scopePolicy to warn and keep observe and strict', () => {
    const input = mapInput();
    delete input.scopePolicy;
    expect(validIntentMap(input, validGraph()).scopePolicy).toBe('warn');
    expect(validIntentMap(mapInput({ scopePolicy: 'observe' }), validGraph()).scopePolicy).toBe('observe');
    expect(validIntentMap(mapInput({ scopePolicy: 'strict' }), validGraph()).scopePolicy).toBe('strict');
  });

  it('should keep an empty writeIntent as explicit-empty coverage', () => {
    const map = validIntentMap(mapInput(), validGraph());
    expect(map.subtasks.find((declaration) => declaration.id === 'frontend')?.writeIntent).toEqual([]);
  });

  it('should treat an absent map as no companion map', () => {
    expect(validateIntentMap(undefined, validGraph())).toEqual({ ok: true, value: null });
    expect(validateIntentMap(null, validGraph())).toEqual({ ok: true, value: null });
  });

  it('should revalidate a normalised map to itself', () => {
    const graph = validGraph();
    const once = validIntentMap(
      mapInput({
        subtasks: [
          { id: 'backend', writeIntent: ['./src\\server//**', 'lib/x'] },
          { id: 'frontend', writeIntent: [] },
          { id: 'docs', writeIntent: ['docs'] },
        ],
      }),
      graph,
    );
    expect(validIntentMap(JSON.parse(JSON.stringify(once)), graph)).toEqual(once);
  });

  it('should not trim a pattern that is non-empty after trim', () => {
    expect(normalizeWriteIntentPattern(' src/a ')).toEqual({ ok: true, value: ' src/a ' });
  });
});

describe('validateIntentMap: refused patterns', () => {
  it('should refuse absolute POSIX, UNC, drive-absolute and drive-relative paths', () => {
    expect(patternError('/etc/passwd')).toBe('Intent Map v1 writeIntent pattern must be repository-relative: "/etc/passwd".');
    expect(patternError('\\\\server\\share\\x')).toBe('Intent Map v1 writeIntent pattern must be repository-relative: "\\\\server\\share\\x".');
    expect(patternError('C:\\repo\\x')).toBe('Intent Map v1 writeIntent pattern must be repository-relative: "C:\\repo\\x".');
    expect(patternError('c:/repo/x')).toBe('Intent Map v1 writeIntent pattern must be repository-relative: "c:/repo/x".');
    expect(patternError('D:relative')).toBe('Intent Map v1 writeIntent pattern must be repository-relative: "D:relative".');
  });

  it('should refuse a drive or negation prefix revealed by dropping a leading dot segment', () => {
    expect(patternError('./C:x')).toBe('Intent Map v1 writeIntent pattern must be repository-relative: "./C:x".');
    expect(patternError('.\\!src')).toBe('Intent Map v1 writeIntent pattern cannot use negation: ".\\!src".');
  });

  it('should refuse parent-directory escapes anywhere in the pattern', () => {
    for (const pattern of ['../x', 'src/../../x', 'src\\..\\x', 'a/b/..']) {
      expect(patternError(pattern)).toBe(`Intent Map v1 writeIntent pattern cannot escape the repository: "${pattern}".`);
    }
  });

  it('should refuse negation, control characters and empty patterns', () => {
    expect(patternError('!src/**')).toBe('Intent Map v1 writeIntent pattern cannot use negation: "!src/**".');
    expect(patternError('src/\u0007bell')).toBe('Intent Map v1 writeIntent pattern contains a control character.');
    expect(patternError('src/\u007f')).toBe('Intent Map v1 writeIntent pattern contains a control character.');
    expect(patternError('   ')).toBe('Intent Map v1 writeIntent patterns must be non-empty strings.');
    expect(patternError(7)).toBe('Intent Map v1 writeIntent patterns must be non-empty strings.');
    expect(patternError('./')).toBe('Intent Map v1 writeIntent pattern is malformed: "./".');
    expect(patternError('.//.')).toBe('Intent Map v1 writeIntent pattern is malformed: ".//.".');
  });

  it('should refuse a pattern over 4096 UTF-8 bytes and accept one at the limit', () => {
    expect(normalizeWriteIntentPattern('é'.repeat(2048)).ok).toBe(true);
    expect(patternError('é'.repeat(2049))).toBe('Intent Map v1 writeIntent pattern exceeds 4096 bytes.');
  });
});

describe('validateIntentMap: document failures (docs/seeds/task-graph-v1.md §5)', () => {
  it('should name the subtask whose pattern is refused', () => {
    const error = intentMapError(
      mapInput({
        subtasks: [
          { id: 'backend', writeIntent: ['/abs'] },
          { id: 'frontend', writeIntent: [] },
          { id: 'docs', writeIntent: [] },
        ],
      }),
    );
    expect(error).toMatchObject({
      code: 'TASK_GRAPH_INVALID',
      stage: 'intent-map-validation',
      recoverable: false,
      taskId: 'task-product-slice',
      details: { parentTaskId: 'task-product-slice', subtaskId: 'backend' },
    });
  });

  it('should refuse a non-object map and a map over 1 MiB', () => {
    expect(intentMapError([]).message).toBe('Intent Map v1 input must be a JSON object.');
    const huge = mapInput({ subtasks: [{ id: 'backend', writeIntent: ['x'.repeat(1024 * 1024)] }] });
    expect(intentMapError(huge).message).toBe('Intent Map v1 exceeds the 1048576 byte limit.');
  });

  it('should refuse unknown top-level and declaration fields', () => {
    expect(intentMapError(mapInput({ extra: 1 })).message).toBe('Intent Map v1 input contains unknown field "extra".');
    const declaration = mapInput();
    declaration.subtasks[0].readIntent = [];
    expect(intentMapError(declaration).message).toBe('Intent Map v1 subtask at index 0 contains unknown field "readIntent".');
  });

  it('should refuse an unsupported schemaVersion, a foreign parentTaskId and an unsupported policy', () => {
    expect(intentMapError(mapInput({ schemaVersion: 2 })).message).toBe('Unsupported Intent Map schemaVersion: 2. Expected 1.');
    expect(intentMapError(mapInput({ schemaVersion: undefined })).message).toBe('Unsupported Intent Map schemaVersion: (missing). Expected 1.');
    expect(intentMapError(mapInput({ parentTaskId: 'task-other' })).message).toBe('Intent Map v1 parentTaskId must match Task Graph task-product-slice.');
    expect(intentMapError(mapInput({ scopePolicy: 'enforce' })).message).toBe('Unsupported Intent Map scopePolicy: enforce.');
    expect(intentMapError(mapInput({ scopePolicy: null })).message).toBe('Unsupported Intent Map scopePolicy: .');
  });

  it('should refuse unknown, duplicate and missing subtask declarations', () => {
    const unknown = mapInput();
    unknown.subtasks.push({ id: 'ghost', writeIntent: [] });
    expect(intentMapError(unknown).message).toBe('Intent Map v1 references unknown subtask "ghost".');
    const duplicate = mapInput();
    duplicate.subtasks.push({ id: 'docs', writeIntent: ['other/**'] });
    expect(intentMapError(duplicate).message).toBe('Intent Map v1 contains duplicate subtask declaration "docs".');
    const missing = mapInput({ subtasks: [{ id: 'backend', writeIntent: [] }] });
    expect(intentMapError(missing)).toMatchObject({
      message: 'Intent Map v1 is missing subtask declaration "docs".',
      details: { subtaskId: 'docs' },
    });
  });

  it('should refuse a non-array subtasks list and a non-array writeIntent', () => {
    expect(intentMapError(mapInput({ subtasks: {} })).message).toBe('Intent Map v1 subtasks must be an array.');
    const input = mapInput();
    input.subtasks[1].writeIntent = 'web/**';
    expect(intentMapError(input).message).toBe('Intent Map v1 subtask "frontend" writeIntent must be an array.');
    const absent = mapInput();
    delete absent.subtasks[1].writeIntent;
    expect(intentMapError(absent).message).toBe('Intent Map v1 subtask "frontend" writeIntent must be an array.');
  });

  it('should refuse duplicate normalised patterns within one subtask', () => {
    const input = mapInput();
    input.subtasks[0].writeIntent = ['src/a', 'src//a'];
    expect(intentMapError(input).message).toBe('Intent Map v1 subtask "backend" contains duplicate normalized writeIntent patterns.');
  });

  it('should refuse a normalised pattern declared by two subtasks', () => {
    const input = mapInput();
    input.subtasks[2].writeIntent = ['./src\\server/**'];
    expect(intentMapError(input).message).toBe('Intent Map v1 writeIntent pattern "src/server/**" is duplicated by subtasks "backend" and "docs".');
  });

  it('should refuse more than 4096 patterns in total', () => {
    const input = mapInput({
      subtasks: [
        { id: 'backend', writeIntent: Array.from({ length: 2048 }, (_, index) => `b/${index}`) },
        { id: 'docs', writeIntent: Array.from({ length: 2049 }, (_, index) => `d/${index}`) },
        { id: 'frontend', writeIntent: [] },
      ],
    });
    expect(intentMapError(input)).toMatchObject({
      message: 'Intent Map v1 exceeds the 4096 pattern limit.',
      details: { subtaskId: 'docs' },
    });
  });

  it('should refuse a missing graph companion', () => {
    const result = validateIntentMap(mapInput(), null as never);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.message).toBe('Intent Map v1 requires a validated Task Graph v1 companion.');
  });

  it('should refuse a map that cannot be serialised', () => {
    const input = mapInput();
    input.self = input;
    expect(intentMapError(input).message).toBe('Intent Map v1 input must be JSON-serializable.');
    expect(intentMapError(mapInput({ big: 10n })).message).toBe('Intent Map v1 input must be JSON-serializable.');
  });
});

describe('intentCoverageFacts', () => {
  it('should report coverage unavailable with null writeIntent when there is no map', () => {
    expect(intentCoverageFacts(['frontend', 'backend'], null)).toEqual({
      available: false,
      schemaVersion: null,
      scopePolicy: null,
      subtasks: [
        { subtaskId: 'backend', coverage: 'unavailable', writeIntent: null },
        { subtaskId: 'frontend', coverage: 'unavailable', writeIntent: null },
      ],
    });
  });

  it('should report declared and explicit-empty coverage with a map', () => {
    const graph = validGraph();
    const map = validIntentMap(mapInput({ scopePolicy: 'strict' }), graph);
    expect(
      intentCoverageFacts(
        graph.subtasks.map((subtask) => subtask.id),
        map,
      ),
    ).toEqual({
      available: true,
      schemaVersion: 1,
      scopePolicy: 'strict',
      subtasks: [
        { subtaskId: 'backend', coverage: 'declared', writeIntent: ['src/server/**'] },
        { subtaskId: 'docs', coverage: 'declared', writeIntent: ['docs/**'] },
        { subtaskId: 'frontend', coverage: 'explicit-empty', writeIntent: [] },
      ],
    });
  });
});

describe('writeIntentPatternsMayOverlap (docs/seeds/task-graph-v1.md §5 disjointness rule)', () => {
  const cases: Array<[string, string, boolean]> = [
    ['src/alpha/**', 'src/beta/**', false],
    ['src/shared/**', 'src/shared/file.js', true],
    ['src/*/index.js', 'src/*/other.js', true],
    ['README.md', 'README.zh-CN.md', false],
    ['**/x', 'anything/at/all.ts', true],
    ['src', 'src/a', false],
    ['src/a.ts', 'src/a.ts', true],
    ['src/**', 'src', true],
    ['docs/**', 'config/**', false],
    ['src/{a,b}/x', 'src/c/x', true],
    ['src/[ab]/x', 'lib/a/x', false],
    ['src/a?/x', 'src/ab/y', true],
  ];

  for (const [left, right, expected] of cases) {
    it(`should treat ${left} and ${right} as ${expected ? 'overlapping' : 'disjoint'} in both orders`, () => {
      expect(writeIntentPatternsMayOverlap(left, right)).toBe(expected);
      expect(writeIntentPatternsMayOverlap(right, left)).toBe(expected);
    });
  }

  // The planner checks conflicts through an index that splits each pattern once
  // (writeIntentIndex); it must give the rule's answer for every pair above.
  it('should give the same answers through an Intent Map as pattern by pattern', () => {
    const graph = validGraph();
    for (const [left, right, expected] of cases.filter(([l, r]) => l !== r)) {
      const map = validIntentMap(
        mapInput({
          subtasks: [
            { id: 'backend', writeIntent: [left] },
            { id: 'docs', writeIntent: [right] },
            { id: 'frontend', writeIntent: [] },
          ],
        }),
        graph,
      );
      expect(writeIntentConflictBetween(map, 'backend', 'docs') !== null, `${left} / ${right}`).toBe(expected);
      expect(writeIntentConflictBetween(map, 'docs', 'backend') !== null, `${right} / ${left}`).toBe(expected);
    }
  });

  it('should name the lower id first and the first overlapping pattern pair in a conflict fact', () => {
    const graph = validGraph();
    const map = validIntentMap(
      mapInput({
        subtasks: [
          { id: 'backend', writeIntent: ['a/**', 'src/shared/**'] },
          { id: 'docs', writeIntent: ['src/shared/file.js', 'src/shared/z.js'] },
          { id: 'frontend', writeIntent: [] },
        ],
      }),
      graph,
    );
    const expected = {
      code: 'WRITE_INTENT_CONFLICT',
      subtasks: ['backend', 'docs'],
      patterns: [
        { subtaskId: 'backend', pattern: 'src/shared/**' },
        { subtaskId: 'docs', pattern: 'src/shared/file.js' },
      ],
      conservative: true,
    };
    expect(writeIntentConflictBetween(map, 'docs', 'backend')).toEqual(expected);
    expect(writeIntentConflictBetween(map, 'backend', 'docs')).toEqual(expected);
    expect(writeIntentConflictBetween(map, 'backend', 'frontend')).toBeNull();
    expect(writeIntentConflictBetween(null, 'backend', 'docs')).toBeNull();
  });
});
