import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import {
  compareByteOrder,
  planGraph,
  validateIntentMap,
  validateTaskGraph,
  writeIntentPatternsMayOverlap,
  SUBTASK_STATES,
  type GraphSnapshot,
  type NormalizedIntentMap,
  type SubtaskState,
  type TaskGraphPlan,
} from '../../src/graphs/contract/index.js';
import { CONFIGURED } from './fixtures.js';
import { scaled } from '../helpers/scale.js';

const RUNS = { numRuns: scaled(200, 20) };
const ID_POOL = ['a', 'b', 'z', 'after-alpha', 'alpha', 'beta', 'gamma', 'delta', 'x_1', 'zeta', 'con-x', 'tostring'];
const SEGMENTS = ['src', 'docs', 'lib', 'shared', 'a', 'b', 'file.js', 'README.md'];
const GLOBS = ['*', '**', '*.ts', '{a,b}', '[ab]', 'fi?e.js'];
const AGENTS = [...CONFIGURED];

// ---------------------------------------------------------------------------
// Arbitraries
// ---------------------------------------------------------------------------

interface GraphShape {
  ids: string[];
  /** dependsOn per subtask, edges only to earlier subtasks (so always a DAG). */
  deps: string[][];
  implementers: string[];
  maxConcurrency: number;
}

const graphShape: fc.Arbitrary<GraphShape> = fc.uniqueArray(fc.constantFrom(...ID_POOL), { minLength: 1, maxLength: 8 }).chain((ids) =>
  fc.record({
    ids: fc.constant(ids),
    deps: fc.tuple(...ids.map((_, index) => fc.subarray(ids.slice(0, index)))),
    implementers: fc.tuple(...ids.map(() => fc.constantFrom(...AGENTS))),
    maxConcurrency: fc.integer({ min: 1, max: 4 }),
  }),
);

function graphDocument(shape: GraphShape): Record<string, any> {
  return {
    schemaVersion: 1,
    parentTask: { id: 'task-fuzz-1', title: 'Fuzzed graph', planner: 'codex', reviewer: 'codex' },
    subtasks: shape.ids.map((id, index) => ({
      id,
      implementer: shape.implementers[index],
      spec: `Implement ${id}.`,
      dependsOn: [...shape.deps[index]],
    })),
    maxConcurrency: shape.maxConcurrency,
  };
}

const pattern: fc.Arbitrary<string> = fc
  .array(fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...SEGMENTS) }, { weight: 1, arbitrary: fc.constantFrom(...GLOBS) }), {
    minLength: 1,
    maxLength: 3,
  })
  .map((segments) => segments.join('/'));

interface Scenario {
  snapshot: GraphSnapshot;
}

/** A consistent scheduling snapshot: random DAG, random stored states, optional Intent Map. */
const scenario: fc.Arbitrary<Scenario> = graphShape.chain((shape) =>
  fc
    .record({
      states: fc.tuple(...shape.ids.map(() => fc.constantFrom(...SUBTASK_STATES))),
      explicit: fc.tuple(...shape.ids.map(() => fc.boolean())),
      withMap: fc.boolean(),
      patterns: fc.tuple(...shape.ids.map(() => fc.array(pattern, { maxLength: 3 }))),
      policy: fc.constantFrom('observe', 'warn', 'strict'),
    })
    .map(({ states, explicit, withMap, patterns, policy }) => {
      // Claims are guarded, so a consistent snapshot never has more RUNNING than maxConcurrency.
      let running = 0;
      const stored = states.map((state): SubtaskState => {
        if (state !== 'RUNNING') return state;
        running += 1;
        return running > shape.maxConcurrency ? 'READY' : 'RUNNING';
      });
      let intentMap: NormalizedIntentMap | null = null;
      if (withMap) {
        // A normalised pattern may be declared by only one subtask.
        const taken = new Set<string>();
        const declarations = shape.ids.map((id, index) => ({
          id,
          writeIntent: [...new Set(patterns[index])].filter((item) => !taken.has(item) && (taken.add(item), true)),
        }));
        const result = validateIntentMap(
          { schemaVersion: 1, parentTaskId: 'task-fuzz-1', scopePolicy: policy, subtasks: declarations },
          { parentTaskId: 'task-fuzz-1', subtasks: shape.ids.map((id) => ({ id })) },
        );
        if (!result.ok || result.value === null) throw new Error(`generator built an invalid map: ${JSON.stringify(result)}`);
        intentMap = result.value;
      }
      const snapshot: GraphSnapshot = {
        parentTaskId: 'task-fuzz-1',
        maxConcurrency: shape.maxConcurrency,
        subtasks: shape.ids.map((id, index) => ({
          id,
          implementer: shape.implementers[index],
          dependsOn: shape.deps[index],
          state: stored[index],
          reason: null,
          blockedExplicitly: explicit[index],
        })),
        intentMap,
      };
      return { snapshot };
    }),
);

function mustPlan(snapshot: GraphSnapshot): TaskGraphPlan {
  const result = planGraph(snapshot);
  if (!result.ok) throw new Error(`consistent snapshot refused: ${result.error.message}`);
  return result.value;
}

function patternsOf(map: NormalizedIntentMap, id: string): readonly string[] {
  return map.subtasks.find((declaration) => declaration.id === id)?.writeIntent ?? [];
}

function mayConflict(map: NormalizedIntentMap, left: string, right: string): boolean {
  return patternsOf(map, left).some((a) => patternsOf(map, right).some((b) => writeIntentPatternsMayOverlap(a, b)));
}

// ---------------------------------------------------------------------------
// Plan properties
// ---------------------------------------------------------------------------

describe('planGraph properties over random graphs and intent maps', () => {
  it('should never select two subtasks whose write intents may overlap', () => {
    fc.assert(
      fc.property(scenario, ({ snapshot }) => {
        const { wave } = mustPlan(snapshot);
        const map = snapshot.intentMap;
        if (!map) return;
        for (const [index, left] of wave.selected.entries()) {
          for (const right of wave.selected.slice(index + 1)) expect(mayConflict(map, left, right)).toBe(false);
        }
      }),
      RUNS,
    );
  });

  it('should never select a subtask that conflicts with a RUNNING subtask', () => {
    fc.assert(
      fc.property(scenario, ({ snapshot }) => {
        const result = mustPlan(snapshot);
        const map = snapshot.intentMap;
        if (!map) return;
        for (const selected of result.wave.selected) {
          for (const running of result.frontier.running) expect(mayConflict(map, selected, running)).toBe(false);
        }
      }),
      RUNS,
    );
  });

  it('should never select more subtasks than there are free slots', () => {
    fc.assert(
      fc.property(scenario, ({ snapshot }) => {
        const result = mustPlan(snapshot);
        const running = snapshot.subtasks.filter((subtask) => subtask.state === 'RUNNING').length;
        expect(result.availableSlots).toBe(snapshot.maxConcurrency - running);
        expect(result.wave.selected.length).toBeLessThanOrEqual(result.availableSlots);
        expect(result.preflight.estimates.processCount).toBe(result.wave.selected.length);
      }),
      RUNS,
    );
  });

  it('should only select subtasks whose derived state is READY', () => {
    fc.assert(
      fc.property(scenario, ({ snapshot }) => {
        const result = mustPlan(snapshot);
        const states = new Map(result.decisions.map((decision) => [decision.subtaskId, decision.state]));
        for (const id of result.wave.selected) {
          expect(states.get(id)).toBe('READY');
          expect(result.frontier.ready).toContain(id);
        }
        const byId = new Map(snapshot.subtasks.map((subtask) => [subtask.id, subtask]));
        for (const id of result.wave.selected) {
          for (const dependency of byId.get(id)?.dependsOn ?? []) expect(states.get(dependency)).toBe('SUCCEEDED');
        }
      }),
      RUNS,
    );
  });

  it('should partition READY subtasks into selected, conflict-deferred and capacity-limited', () => {
    fc.assert(
      fc.property(scenario, ({ snapshot }) => {
        const { wave, frontier, decisions } = mustPlan(snapshot);
        const parts = [...wave.selected, ...wave.conflictDeferred, ...wave.capacityLimited].sort();
        expect(parts).toEqual([...frontier.ready].sort());
        expect(wave.conflicts).toHaveLength(wave.conflictDeferred.length);
        if (wave.capacityLimited.length > 0) expect(wave.selected.length).toBe(frontier.availableSlots);
        expect(decisions.map((decision) => decision.subtaskId)).toEqual([...decisions.map((decision) => decision.subtaskId)].sort());
        for (const decision of decisions) expect(decision.reason.length).toBeGreaterThan(0);
        if (!snapshot.intentMap) {
          expect(wave.selected).toEqual(frontier.ready.slice(0, frontier.availableSlots));
          expect(wave.conflictDeferred).toEqual([]);
        }
      }),
      RUNS,
    );
  });

  it('should only defer a subtask that really conflicts with a RUNNING or selected subtask', () => {
    fc.assert(
      fc.property(scenario, ({ snapshot }) => {
        const { wave, frontier } = mustPlan(snapshot);
        const map = snapshot.intentMap;
        for (const [index, deferred] of wave.conflictDeferred.entries()) {
          expect(map).toBeTruthy();
          if (!map) return;
          const conflict = wave.conflicts[index];
          expect(conflict.subtasks).toContain(deferred);
          const other = conflict.subtasks.find((id) => id !== deferred) as string;
          expect([...frontier.running, ...wave.selected]).toContain(other);
          expect(writeIntentPatternsMayOverlap(conflict.patterns[0].pattern, conflict.patterns[1].pattern)).toBe(true);
        }
      }),
      RUNS,
    );
  });

  it('should produce a deep-equal plan when computed twice or from a reordered snapshot', () => {
    fc.assert(
      fc.property(scenario, ({ snapshot }) => {
        const first = planGraph(snapshot);
        expect(planGraph(snapshot)).toEqual(first);
        expect(planGraph(structuredClone(snapshot))).toEqual(first);
        expect(planGraph({ ...snapshot, subtasks: [...snapshot.subtasks].reverse() })).toEqual(first);
      }),
      RUNS,
    );
  });
});

// ---------------------------------------------------------------------------
// Fuzzed invalid graph inputs
// ---------------------------------------------------------------------------

const notAString = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string(), fc.integer(), { maxKeys: 2 }),
);
const notAnArray = fc.oneof(fc.integer(), fc.boolean(), fc.constant(null), fc.string(), fc.dictionary(fc.string(), fc.integer(), { maxKeys: 2 }));
const notAnObject = fc.oneof(fc.integer(), fc.boolean(), fc.constant(null), fc.string(), fc.array(fc.anything(), { maxLength: 2 }));
const badSubtaskId = fc.oneof(fc.constantFrom(' a', 'a ', 'A', '1a', '-a', 'con', 'lpt9', 'a.b', '', 'a'.repeat(65), '__proto__', 'é', 'a/b'), notAString);
const badTaskId = fc.oneof(fc.constantFrom('task-', 'task-a', 'Task-ab', ' task-ab', 'task-ab ', `task-${'a'.repeat(129)}`, 'ab', 'task-_a'), notAString);
const badAgent = fc.oneof(fc.constantFrom(' codex', 'Codex', 'con', 'agent-unknown', '', 'a'.repeat(65), 'a.b'), notAString);
const badMaxConcurrency = fc.oneof(
  fc.integer({ max: 0 }),
  fc.integer({ min: 33 }),
  fc.double({ noInteger: true }),
  fc.constant(Number.MAX_VALUE),
  fc.constant(Number.NaN),
  notAString.filter((value) => typeof value !== 'number'),
  fc.string(),
);
const unknownKey = (allowed: string[]) =>
  fc.oneof(fc.constantFrom('__proto__', 'constructor', 'unexpected', 'status'), fc.string()).filter((key) => !allowed.includes(key));

type Mutation = (document: Record<string, any>) => void;

function setOwn(target: Record<string, any>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, configurable: true, writable: true });
}

function mutation(shape: GraphShape): fc.Arbitrary<{ label: string; apply: Mutation }> {
  const n = shape.ids.length;
  const index = fc.integer({ min: 0, max: n - 1 });
  const options: Array<fc.Arbitrary<{ label: string; apply: Mutation }>> = [
    fc.constantFrom('schemaVersion', 'parentTask', 'subtasks', 'maxConcurrency').map((key) => ({
      label: `delete ${key}`,
      apply: (doc) => {
        delete doc[key];
      },
    })),
    fc.constantFrom('id', 'title', 'planner', 'reviewer').map((key) => ({
      label: `delete parentTask.${key}`,
      apply: (doc) => {
        delete doc.parentTask[key];
      },
    })),
    fc.tuple(index, fc.constantFrom('id', 'implementer', 'spec')).map(([i, key]) => ({
      label: `delete subtasks[${i}].${key}`,
      apply: (doc) => {
        delete doc.subtasks[i][key];
      },
    })),
    fc
      .anything()
      .filter((value) => value !== 1)
      .map((value) => ({
        label: 'wrong schemaVersion',
        apply: (doc) => {
          doc.schemaVersion = value;
        },
      })),
    notAnObject.map((value) => ({
      label: 'parentTask not an object',
      apply: (doc) => {
        doc.parentTask = value;
      },
    })),
    fc.oneof(notAnArray, fc.constant([])).map((value) => ({
      label: 'subtasks not a non-empty array',
      apply: (doc) => {
        doc.subtasks = value;
      },
    })),
    badMaxConcurrency.map((value) => ({
      label: 'bad maxConcurrency',
      apply: (doc) => {
        doc.maxConcurrency = value;
      },
    })),
    fc.tuple(fc.constantFrom('title', 'planner', 'reviewer'), notAString).map(([key, value]) => ({
      label: `parentTask.${key} not a string`,
      apply: (doc) => {
        doc.parentTask[key] = value;
      },
    })),
    fc.tuple(index, fc.constantFrom('implementer', 'spec', 'title'), notAString).map(([i, key, value]) => ({
      label: `subtasks[${i}].${key} not a string`,
      apply: (doc) => {
        doc.subtasks[i][key] = value;
      },
    })),
    fc.tuple(index, notAnArray).map(([i, value]) => ({
      label: `subtasks[${i}].dependsOn not an array`,
      apply: (doc) => {
        doc.subtasks[i].dependsOn = value;
      },
    })),
    fc.tuple(index, notAnObject).map(([i, value]) => ({
      label: `subtasks[${i}] not an object`,
      apply: (doc) => {
        doc.subtasks[i] = value;
      },
    })),
    fc.tuple(unknownKey(['schemaVersion', 'parentTask', 'subtasks', 'maxConcurrency']), fc.anything()).map(([key, value]) => ({
      label: `unknown top-level key ${key}`,
      apply: (doc) => setOwn(doc, key, value),
    })),
    fc.tuple(unknownKey(['id', 'title', 'spec', 'planner', 'implementer', 'reviewer']), fc.anything()).map(([key, value]) => ({
      label: `unknown parentTask key ${key}`,
      apply: (doc) => setOwn(doc.parentTask, key, value),
    })),
    fc.tuple(index, unknownKey(['id', 'title', 'implementer', 'spec', 'dependsOn']), fc.anything()).map(([i, key, value]) => ({
      label: `unknown subtask key ${key}`,
      apply: (doc) => setOwn(doc.subtasks[i], key, value),
    })),
    fc.tuple(index, badSubtaskId).map(([i, value]) => ({
      label: `bad subtask id ${safeJson(value)}`,
      apply: (doc) => {
        doc.subtasks[i].id = value;
      },
    })),
    badTaskId.map((value) => ({
      label: `bad parent id ${safeJson(value)}`,
      apply: (doc) => {
        doc.parentTask.id = value;
      },
    })),
    fc.tuple(fc.constantFrom('planner', 'reviewer'), badAgent).map(([key, value]) => ({
      label: `bad ${key}`,
      apply: (doc) => {
        doc.parentTask[key] = value;
      },
    })),
    fc.tuple(index, badAgent).map(([i, value]) => ({
      label: 'bad implementer',
      apply: (doc) => {
        doc.subtasks[i].implementer = value;
      },
    })),
    fc.tuple(index, badSubtaskId).map(([i, value]) => ({
      label: 'bad dependency id',
      apply: (doc) => {
        doc.subtasks[i].dependsOn = [...doc.subtasks[i].dependsOn, value];
      },
    })),
    index.map((i) => ({
      label: 'self edge',
      apply: (doc) => {
        doc.subtasks[i].dependsOn = [...doc.subtasks[i].dependsOn, doc.subtasks[i].id];
      },
    })),
    index.map((i) => ({
      label: 'missing dependency',
      apply: (doc) => {
        doc.subtasks[i].dependsOn = [...doc.subtasks[i].dependsOn, 'ghost-dependency'];
      },
    })),
    fc.tuple(index, fc.constantFrom(...shape.ids)).map(([i, id]) => ({
      label: 'duplicate edge',
      apply: (doc) => {
        doc.subtasks[i].dependsOn = [...doc.subtasks[i].dependsOn, id, id];
      },
    })),
    fc.tuple(index, fc.constantFrom('spec', 'title')).map(([i, key]) => ({
      label: `blank ${key}`,
      apply: (doc) => {
        doc.subtasks[i][key] = ' \t ';
      },
    })),
  ];
  if (n >= 2) {
    const pair = fc.tuple(index, index).filter(([i, j]) => i !== j);
    options.push(
      pair.map(([i, j]) => ({
        label: 'cycle',
        apply: (doc) => {
          const a = doc.subtasks[i];
          const b = doc.subtasks[j];
          a.dependsOn = [...new Set([...a.dependsOn, b.id])];
          b.dependsOn = [...new Set([...b.dependsOn, a.id])];
        },
      })),
      pair.map(([i, j]) => ({
        label: 'duplicate id',
        apply: (doc) => {
          doc.subtasks[j].id = doc.subtasks[i].id;
        },
      })),
    );
  }
  return fc.oneof(...options);
}

function expectInvalid(
  input: unknown,
  stage: 'graph-validation' | 'intent-map-validation',
  result: ReturnType<typeof validateTaskGraph> | ReturnType<typeof validateIntentMap>,
): void {
  expect(result.ok, `expected refusal of ${safeJson(input)}`).toBe(false);
  if (result.ok) return;
  expect(result.error.code).toBe('TASK_GRAPH_INVALID');
  expect(result.error.stage).toBe(stage);
  expect(result.error.recoverable).toBe(false);
  expect(result.error.message.length).toBeGreaterThan(0);
  expect(result.error.message.length).toBeLessThanOrEqual(2048);
  expect(result.error.message).not.toMatch(/[\u0000-\u001f\u007f]/);
  expect(() => JSON.stringify(result.error)).not.toThrow();
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value)?.slice(0, 500) ?? String(value);
  } catch {
    return '[unserialisable]';
  }
}

describe('validateTaskGraph properties over fuzzed inputs', () => {
  it('should accept every randomly generated well-formed DAG', () => {
    fc.assert(
      fc.property(graphShape, (shape) => {
        const result = validateTaskGraph(graphDocument(shape), { configuredAgents: CONFIGURED });
        expect(result.ok).toBe(true);
      }),
      RUNS,
    );
  });

  it('should refuse every random mutation of a valid graph with TASK_GRAPH_INVALID and never throw', () => {
    fc.assert(
      fc.property(
        graphShape.chain((shape) => fc.tuple(fc.constant(shape), mutation(shape))),
        ([shape, { apply }]) => {
          const document = graphDocument(shape);
          apply(document);
          expectInvalid(document, 'graph-validation', validateTaskGraph(document, { configuredAgents: CONFIGURED }));
        },
      ),
      RUNS,
    );
  });

  it('should never throw for arbitrary JSON values', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const result = validateTaskGraph(value, { configuredAgents: CONFIGURED });
        expectInvalid(value, 'graph-validation', result);
      }),
      RUNS,
    );
  });

  it('should never throw for arbitrary JavaScript values including null-prototype objects', () => {
    fc.assert(
      fc.property(fc.anything({ withNullPrototype: true, withBigInt: true, withMap: true, withSet: true, withDate: true, withSparseArray: true }), (value) => {
        expectInvalid(value, 'graph-validation', validateTaskGraph(value, { configuredAgents: CONFIGURED }));
      }),
      RUNS,
    );
  });

  it('should never throw when any nested value of a valid graph is replaced by an arbitrary value', () => {
    fc.assert(
      fc.property(graphShape, fc.array(fc.nat(), { minLength: 1, maxLength: 4 }), fc.anything({ withNullPrototype: true }), (shape, path, replacement) => {
        const document: any = graphDocument(shape);
        let cursor: any = document;
        for (const [depth, step] of path.entries()) {
          const keys = Object.keys(cursor);
          if (keys.length === 0) break;
          const key = keys[step % keys.length];
          if (depth === path.length - 1 || cursor[key] === null || typeof cursor[key] !== 'object') {
            cursor[key] = replacement;
            break;
          }
          cursor = cursor[key];
        }
        const result = validateTaskGraph(document, { configuredAgents: CONFIGURED });
        if (!result.ok) expectInvalid(document, 'graph-validation', result);
      }),
      RUNS,
    );
  });
});

// ---------------------------------------------------------------------------
// Fuzzed invalid intent maps
// ---------------------------------------------------------------------------

function mapDocument(shape: GraphShape): Record<string, any> {
  return {
    schemaVersion: 1,
    parentTaskId: 'task-fuzz-1',
    scopePolicy: 'warn',
    subtasks: shape.ids.map((id) => ({ id, writeIntent: [`owned/${id}/**`] })),
  };
}

function mapMutation(shape: GraphShape): fc.Arbitrary<Mutation> {
  const index = fc.integer({ min: 0, max: shape.ids.length - 1 });
  const badPattern = fc.oneof(
    fc.constantFrom('/abs', '\\\\unc\\share', 'C:\\x', 'c:rel', '../up', 'a/../../b', '!neg', 'a\u0000b', 'tab\there', '', '   ', './', '.\\!x', './D:x'),
    notAString,
    fc.string().map((text) => `/${text}`),
    fc.string().map((text) => `${text}/../x`),
  );
  const options: Array<fc.Arbitrary<Mutation>> = [
    fc.tuple(index, badPattern).map(
      ([i, value]): Mutation =>
        (doc) => {
          doc.subtasks[i].writeIntent.push(value);
        },
    ),
    fc.tuple(unknownKey(['schemaVersion', 'parentTaskId', 'scopePolicy', 'subtasks']), fc.jsonValue()).map(
      ([key, value]): Mutation =>
        (doc) =>
          setOwn(doc, key, value),
    ),
    fc.tuple(index, unknownKey(['id', 'writeIntent']), fc.jsonValue()).map(
      ([i, key, value]): Mutation =>
        (doc) =>
          setOwn(doc.subtasks[i], key, value),
    ),
    fc
      .jsonValue()
      .filter((value) => value !== 1)
      .map(
        (value): Mutation =>
          (doc) => {
            doc.schemaVersion = value;
          },
      ),
    fc.oneof(badTaskId, fc.constant('task-other-graph')).map(
      (value): Mutation =>
        (doc) => {
          doc.parentTaskId = value;
        },
    ),
    fc
      .jsonValue()
      .filter((value) => !['observe', 'warn', 'strict'].includes(value as string) && value !== undefined)
      .map(
        (value): Mutation =>
          (doc) => {
            doc.scopePolicy = value;
          },
      ),
    index.map(
      (i): Mutation =>
        (doc) => {
          doc.subtasks.splice(i, 1);
        },
    ),
    index.map(
      (i): Mutation =>
        (doc) => {
          doc.subtasks.push({ ...doc.subtasks[i], writeIntent: [] });
        },
    ),
    badSubtaskId.map(
      (value): Mutation =>
        (doc) => {
          doc.subtasks.push({ id: value, writeIntent: [] });
        },
    ),
    fc.tuple(index, notAnArray).map(
      ([i, value]): Mutation =>
        (doc) => {
          doc.subtasks[i].writeIntent = value;
        },
    ),
    index.map(
      (i): Mutation =>
        (doc) => {
          doc.subtasks[i].writeIntent.push(`./${doc.subtasks[i].writeIntent[0]}`);
        },
    ),
    notAnArray.map(
      (value): Mutation =>
        (doc) => {
          doc.subtasks = value;
        },
    ),
  ];
  if (shape.ids.length >= 2) {
    options.push(
      fc
        .tuple(index, index)
        .filter(([i, j]) => i !== j)
        .map(
          ([i, j]): Mutation =>
            (doc) => {
              doc.subtasks[j].writeIntent.push(doc.subtasks[i].writeIntent[0]);
            },
        ),
    );
  }
  return fc.oneof(...options);
}

describe('validateIntentMap properties over fuzzed inputs', () => {
  it('should refuse every random mutation of a valid map at intent-map-validation and never throw', () => {
    fc.assert(
      fc.property(
        graphShape.chain((shape) => fc.tuple(fc.constant(shape), mapMutation(shape))),
        ([shape, apply]) => {
          const graph = validateTaskGraph(graphDocument(shape), { configuredAgents: CONFIGURED });
          if (!graph.ok) throw new Error(graph.error.message);
          expect(validateIntentMap(mapDocument(shape), graph.value).ok).toBe(true);
          const document = mapDocument(shape);
          apply(document);
          expectInvalid(document, 'intent-map-validation', validateIntentMap(document, graph.value));
        },
      ),
      RUNS,
    );
  });

  it('should never throw for arbitrary values and keep normalisation idempotent', () => {
    fc.assert(
      fc.property(graphShape, fc.anything({ withNullPrototype: true }), fc.array(pattern, { maxLength: 4 }), (shape, value, patterns) => {
        const graph = validateTaskGraph(graphDocument(shape), { configuredAgents: CONFIGURED });
        if (!graph.ok) throw new Error(graph.error.message);
        const result = validateIntentMap(value, graph.value);
        if (!result.ok) expectInvalid(value, 'intent-map-validation', result);
        const declared = mapDocument(shape);
        declared.subtasks[0].writeIntent = [...new Set(patterns.map((item) => `./x\\${item}//`))];
        const once = validateIntentMap(declared, graph.value);
        expect(once.ok).toBe(true);
        if (once.ok) expect(validateIntentMap(structuredClone(once.value), graph.value)).toEqual(once);
      }),
      RUNS,
    );
  });
});

describe('compareByteOrder', () => {
  it('should order any two strings exactly as their UTF-8 bytes compare', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), (left, right) => {
        expect(Math.sign(compareByteOrder(left, right))).toBe(Math.sign(Buffer.compare(Buffer.from(left), Buffer.from(right))));
      }),
      RUNS,
    );
  });
});
