import { describe, it, expect } from 'vitest';
import { validateTaskGraph, TaskGraphInvalidSchema, NormalizedTaskGraphSchema } from '../../src/graphs/contract/index.js';
import { CONFIGURED, graphError, graphInput, graphOf, validGraph } from './fixtures.js';

describe('validateTaskGraph: normalisation', () => {
  it('should sort subtasks and dependsOn by id and freeze the result', () => {
    const input = graphOf([{ id: 'gamma', dependsOn: ['beta', 'alpha'] }, { id: 'alpha' }, { id: 'beta', dependsOn: ['alpha'] }]);
    const graph = validGraph(input);
    expect(graph.subtasks.map((subtask) => subtask.id)).toEqual(['alpha', 'beta', 'gamma']);
    expect(graph.subtasks[2].dependsOn).toEqual(['alpha', 'beta']);
    expect(Object.isFrozen(graph)).toBe(true);
    expect(Object.isFrozen(graph.subtasks[2].dependsOn)).toBe(true);
    expect(() => (graph.subtasks[2].dependsOn as string[]).push('x')).toThrow();
  });

  it('should return the parent and subtask normalised shape with CREATED and PENDING states', () => {
    const graph = validGraph();
    expect(graph).toMatchObject({
      schemaVersion: 1,
      kind: 'task-graph',
      parentTaskId: 'task-product-slice',
      state: 'CREATED',
      maxConcurrency: 2,
      parentTask: { id: 'task-product-slice', title: 'Build the approved product slice', planner: 'codex', reviewer: 'codex' },
    });
    expect(graph.subtasks).toEqual([
      {
        id: 'backend',
        parentTaskId: 'task-product-slice',
        implementer: 'agent-backend',
        spec: 'Implement the approved backend changes.',
        dependsOn: [],
        state: 'PENDING',
      },
      { id: 'docs', parentTaskId: 'task-product-slice', implementer: 'agent-docs', spec: 'Document the slice.', dependsOn: [], state: 'PENDING' },
      {
        id: 'frontend',
        parentTaskId: 'task-product-slice',
        implementer: 'agent-frontend',
        spec: 'Implement the approved frontend changes.',
        dependsOn: ['backend'],
        state: 'PENDING',
      },
    ]);
    expect(NormalizedTaskGraphSchema.parse(graph)).toEqual(JSON.parse(JSON.stringify(graph)));
  });

  it('should expose durable facts that keep the parent identity distinct from subtask identities', () => {
    const { facts } = validGraph();
    expect(facts.parent).toEqual({
      kind: 'parent-task',
      taskId: 'task-product-slice',
      planner: 'codex',
      reviewer: 'codex',
      state: 'CREATED',
      status: 'CREATED',
      maxConcurrency: 2,
    });
    expect(facts.subtasks[2]).toEqual({
      kind: 'subtask',
      parentTaskId: 'task-product-slice',
      subtaskId: 'frontend',
      implementer: 'agent-frontend',
      state: 'PENDING',
      status: 'PENDING',
      dependsOn: ['backend'],
    });
  });

  it('should keep an optional parent spec and implementer', () => {
    const input = graphInput();
    input.parentTask.spec = 'Parent spec.';
    input.parentTask.implementer = 'agy';
    const graph = validGraph(input);
    expect(graph.parentTask.spec).toBe('Parent spec.');
    expect(graph.parentTask.implementer).toBe('agy');
    expect(graph.facts.parent.implementer).toBe('agy');
  });

  it('should keep an optional subtask title trimmed and omit an absent one', () => {
    const input = graphInput();
    input.subtasks[0].title = '  Backend  ';
    const graph = validGraph(input);
    expect(graph.subtasks[0].title).toBe('Backend');
    expect('title' in graph.subtasks[1]).toBe(false);
  });

  it('should accept configured agents as an array of ids, id records or an agents object', () => {
    const agents = [...CONFIGURED];
    for (const configuredAgents of [agents, agents.map((id) => ({ id })), { agents }]) {
      expect(validateTaskGraph(graphInput(), { configuredAgents }).ok).toBe(true);
    }
  });

  it('should accept exactly 256 subtasks and maxConcurrency 1 and 32', () => {
    const many = graphOf(
      Array.from({ length: 256 }, (_, index) => ({ id: `s${index}` })),
      32,
    );
    expect(validateTaskGraph(many, { configuredAgents: CONFIGURED }).ok).toBe(true);
    expect(validateTaskGraph(graphOf([{ id: 'a' }], 1), { configuredAgents: CONFIGURED }).ok).toBe(true);
  });

  it('should accept a spec of exactly 256 KiB of UTF-8 bytes', () => {
    const input = graphInput();
    input.subtasks[0].spec = 'é'.repeat(128 * 1024);
    expect(validateTaskGraph(input, { configuredAgents: CONFIGURED }).ok).toBe(true);
  });
});

describe('validateTaskGraph: contract failures (docs/seeds/task-graph-v1.md §14)', () => {
  const cases: Array<[string, (input: Record<string, any>) => void, string]> = [
    [
      'a duplicate subtask id',
      (input) => {
        input.subtasks[1].id = 'backend';
        input.subtasks[1].dependsOn = [];
      },
      'Task Graph v1 contains duplicate subtask id "backend".',
    ],
    [
      'a malformed subtask id Bad.ID',
      (input) => {
        input.subtasks[0].id = 'Bad.ID';
      },
      'Task Graph v1 subtask at index 0 has malformed id "Bad.ID".',
    ],
    [
      'the device name con as a subtask id',
      (input) => {
        input.subtasks[2].id = 'con';
      },
      'Task Graph v1 subtask at index 2 has malformed id "con".',
    ],
    [
      'a self edge',
      (input) => {
        input.subtasks[0].dependsOn = ['backend'];
      },
      'Task Graph v1 subtask "backend" cannot depend on itself.',
    ],
    [
      'a missing dependency absent',
      (input) => {
        input.subtasks[1].dependsOn = ['absent'];
      },
      'Task Graph v1 subtask "frontend" references missing dependency "absent".',
    ],
    [
      'a cycle',
      (input) => {
        input.subtasks[0].dependsOn = ['frontend'];
      },
      'Task Graph v1 contains a dependency cycle: backend -> frontend -> backend.',
    ],
    [
      'an unknown subtask implementer agent-z',
      (input) => {
        input.subtasks[0].implementer = 'agent-z';
      },
      'Task Graph v1 subtask "backend" Implementer "agent-z" is unknown or unconfigured.',
    ],
    [
      'an unknown parent planner agent-z',
      (input) => {
        input.parentTask.planner = 'agent-z';
      },
      'Task Graph v1 parent planner "agent-z" is unknown or unconfigured.',
    ],
    [
      'a malformed agent Bad.Agent',
      (input) => {
        input.subtasks[0].implementer = 'Bad.Agent';
      },
      'Task Graph v1 field "subtasks[0].implementer" Agent identity "Bad.Agent" is malformed.',
    ],
    [
      'a blank spec',
      (input) => {
        input.subtasks[0].spec = '   ';
      },
      'Task Graph v1 field "subtasks[0].spec" must be a non-empty string.',
    ],
    [
      'maxConcurrency 0',
      (input) => {
        input.maxConcurrency = 0;
      },
      'Task Graph v1 maxConcurrency must be an integer from 1 to 32.',
    ],
    [
      'maxConcurrency 33',
      (input) => {
        input.maxConcurrency = 33;
      },
      'Task Graph v1 maxConcurrency must be an integer from 1 to 32.',
    ],
    [
      'an unknown field unexpected',
      (input) => {
        input.unexpected = true;
      },
      'Task Graph v1 input contains unknown field "unexpected".',
    ],
    [
      'a duplicate dependency edge',
      (input) => {
        input.subtasks[1].dependsOn = ['backend', 'backend'];
      },
      'Task Graph v1 subtask "frontend" contains a duplicate dependency edge.',
    ],
  ];

  for (const [label, mutate, message] of cases) {
    it(`should reject ${label} with TASK_GRAPH_INVALID at graph-validation`, () => {
      const input = graphInput();
      mutate(input);
      const error = graphError(input);
      expect(error).toMatchObject({ code: 'TASK_GRAPH_INVALID', stage: 'graph-validation', recoverable: false, message });
      expect(TaskGraphInvalidSchema.parse(error)).toEqual(error);
    });
  }

  it('should reject a null graph with a bounded message', () => {
    const error = graphError(null);
    expect(error).toMatchObject({ code: 'TASK_GRAPH_INVALID', stage: 'graph-validation', message: 'Task Graph v1 input must be a JSON object.' });
    expect(error.message.length).toBeLessThanOrEqual(2048);
    expect(error.taskId).toBeNull();
  });

  it('should reject arrays, strings and numbers as the input document', () => {
    for (const input of [[], [graphInput()], 'graph', 42, true, undefined]) {
      expect(graphError(input).message).toBe('Task Graph v1 input must be a JSON object.');
    }
  });

  it('should not trim identities', () => {
    const planner = graphInput();
    planner.parentTask.planner = ' codex';
    expect(graphError(planner).message).toBe('Task Graph v1 field "parentTask.planner" Agent identity " codex" is malformed.');
    const subtask = graphInput();
    subtask.subtasks[0].id = 'backend ';
    expect(graphError(subtask).message).toBe('Task Graph v1 subtask at index 0 has malformed id "backend ".');
    const parent = graphInput();
    parent.parentTask.id = ' task-product-slice';
    expect(graphError(parent).message).toBe('Task Graph v1 parentTask.id must be a valid Task identifier.');
  });

  it('should reject the device name con as an agent id', () => {
    const input = graphInput();
    input.parentTask.reviewer = 'con';
    expect(graphError(input, new Set([...CONFIGURED, 'con'])).message).toBe('Task Graph v1 field "parentTask.reviewer" Agent identity "con" is malformed.');
  });

  it('should report the unsupported schemaVersion value or (missing)', () => {
    const two = graphInput();
    two.schemaVersion = 2;
    expect(graphError(two).message).toBe('Unsupported Task Graph schemaVersion: 2. Expected 1.');
    const missing = graphInput();
    delete missing.schemaVersion;
    expect(graphError(missing).message).toBe('Unsupported Task Graph schemaVersion: (missing). Expected 1.');
    const text = graphInput();
    text.schemaVersion = '1';
    expect(graphError(text).message).toBe('Unsupported Task Graph schemaVersion: 1. Expected 1.');
  });

  it('should reject zero and more than 256 subtasks', () => {
    expect(graphError(graphOf([])).message).toBe('Task Graph v1 requires at least one subtask.');
    const tooMany = graphOf(Array.from({ length: 257 }, (_, index) => ({ id: `s${index}` })));
    expect(graphError(tooMany).message).toBe('Task Graph v1 exceeds the 256 subtask limit.');
  });

  it('should reject a non-integer or non-number maxConcurrency', () => {
    for (const value of [1.5, '2', null, Number.MAX_VALUE, Number.NaN, Infinity, 1e308]) {
      const input = graphInput();
      input.maxConcurrency = value;
      expect(graphError(input).message).toBe('Task Graph v1 maxConcurrency must be an integer from 1 to 32.');
    }
  });

  it('should reject a spec within 256 KiB of characters but over 256 KiB of bytes', () => {
    const input = graphInput();
    input.subtasks[0].spec = 'é'.repeat(128 * 1024 + 1);
    expect(graphError(input)).toMatchObject({
      message: 'Task Graph v1 subtask "backend" specification exceeds 262144 bytes.',
      details: { parentTaskId: 'task-product-slice', subtaskId: 'backend' },
    });
  });

  it('should reject a spec longer than 256 KiB of characters by its character limit', () => {
    const input = graphInput();
    input.subtasks[0].spec = 'a'.repeat(256 * 1024 + 1);
    expect(graphError(input).message).toBe('Task Graph v1 field "subtasks[0].spec" exceeds the 262144 character limit.');
  });

  it('should reject an oversized parent spec by bytes', () => {
    const input = graphInput();
    input.parentTask.spec = '€'.repeat(90_000);
    expect(graphError(input).message).toBe('Task Graph v1 parent specification exceeds 262144 bytes.');
  });

  it('should reject a title longer than 1024 characters after trim', () => {
    const input = graphInput();
    input.parentTask.title = ` ${'t'.repeat(1025)} `;
    expect(graphError(input).message).toBe('Task Graph v1 field "parentTask.title" exceeds the 1024 character limit.');
    const ok = graphInput();
    ok.parentTask.title = `   ${'t'.repeat(1024)}   `;
    expect(validGraph(ok).parentTask.title).toHaveLength(1024);
  });

  it('should reject an empty subtask title and a non-array dependsOn', () => {
    const title = graphInput();
    title.subtasks[1].title = '';
    expect(graphError(title).message).toBe('Task Graph v1 field "subtasks[1].title" must be a non-empty string.');
    const dependsOn = graphInput();
    dependsOn.subtasks[1].dependsOn = 'backend';
    expect(graphError(dependsOn).message).toBe('Task Graph v1 subtask "frontend" dependsOn must be an array.');
    const nullDependsOn = graphInput();
    nullDependsOn.subtasks[1].dependsOn = null;
    expect(graphError(nullDependsOn).message).toBe('Task Graph v1 subtask "frontend" dependsOn must be an array.');
  });

  it('should reject a malformed dependency identifier', () => {
    const input = graphInput();
    input.subtasks[1].dependsOn = ['Backend'];
    expect(graphError(input).message).toBe('Task Graph v1 subtask "frontend" has a malformed dependency identifier.');
  });

  it('should reject unknown parentTask and subtask fields naming the alphabetically first one', () => {
    const parent = graphInput();
    parent.parentTask.zeta = 1;
    parent.parentTask.alpha = 1;
    expect(graphError(parent).message).toBe('Task Graph v1 parentTask contains unknown field "alpha".');
    const subtask = graphInput();
    subtask.subtasks[1].status = 'READY';
    expect(graphError(subtask)).toMatchObject({
      message: 'Task Graph v1 subtask at index 1 contains unknown field "status".',
      details: { parentTaskId: 'task-product-slice', subtaskId: 'frontend' },
    });
  });

  it('should reject a non-object subtask and a non-object parentTask', () => {
    const subtask = graphInput();
    subtask.subtasks[1] = ['frontend'];
    expect(graphError(subtask).message).toBe('Task Graph v1 subtask at index 1 must be an object.');
    const parent = graphInput();
    parent.parentTask = null;
    expect(graphError(parent).message).toBe('Task Graph v1 requires one parentTask object.');
  });

  it('should reject a configured-agent list that is neither an array nor a Set', () => {
    const result = validateTaskGraph(graphInput(), { configuredAgents: 'codex' as never });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.message).toBe('Task Graph v1 configuredAgents must be an array or Set of Agent identities.');
  });

  it('should reject an unconfigured parent implementer', () => {
    const input = graphInput();
    input.parentTask.implementer = 'agent-z';
    expect(graphError(input)).toMatchObject({
      message: 'Task Graph v1 parent Implementer "agent-z" is unknown or unconfigured.',
      details: { parentTaskId: 'task-product-slice', subtaskId: null, agent: 'agent-z' },
    });
  });
});

describe('validateTaskGraph: fixed validation order (docs/seeds/task-graph-v1.md §2)', () => {
  it('should report unknown top-level keys before the schemaVersion', () => {
    const input = graphInput();
    input.schemaVersion = 9;
    input.extra = true;
    expect(graphError(input).message).toBe('Task Graph v1 input contains unknown field "extra".');
  });

  it('should report maxConcurrency before configured-agent membership', () => {
    const input = graphInput();
    input.maxConcurrency = 0;
    input.parentTask.planner = 'agent-z';
    expect(graphError(input).message).toBe('Task Graph v1 maxConcurrency must be an integer from 1 to 32.');
  });

  it('should check the planner before the reviewer', () => {
    const input = graphInput();
    input.parentTask.planner = 'agent-y';
    input.parentTask.reviewer = 'agent-z';
    expect(graphError(input).message).toBe('Task Graph v1 parent planner "agent-y" is unknown or unconfigured.');
  });

  it('should check subtasks in input order for structural failures', () => {
    const input = graphOf([
      { id: 'zulu', dependsOn: ['zulu'] },
      { id: 'alpha', dependsOn: ['alpha'] },
    ]);
    expect(graphError(input).message).toBe('Task Graph v1 subtask "zulu" cannot depend on itself.');
  });

  it('should report missing dependencies over sorted ids regardless of input order', () => {
    const forward = graphOf([
      { id: 'zulu', dependsOn: ['nowhere'] },
      { id: 'alpha', dependsOn: ['zzz', 'absent'] },
    ]);
    const backward = graphOf([
      { id: 'alpha', dependsOn: ['absent', 'zzz'] },
      { id: 'zulu', dependsOn: ['nowhere'] },
    ]);
    const expected = 'Task Graph v1 subtask "alpha" references missing dependency "absent".';
    expect(graphError(forward).message).toBe(expected);
    expect(graphError(backward).message).toBe(expected);
  });

  it('should report missing dependencies before cycles', () => {
    const input = graphOf([
      { id: 'alpha', dependsOn: ['beta'] },
      { id: 'beta', dependsOn: ['alpha', 'ghost'] },
    ]);
    expect(graphError(input).message).toBe('Task Graph v1 subtask "beta" references missing dependency "ghost".');
  });

  it('should report the same cycle path alpha -> beta -> alpha for any input order', () => {
    const one = graphOf([
      { id: 'alpha', dependsOn: ['beta'] },
      { id: 'beta', dependsOn: ['alpha'] },
    ]);
    const two = graphOf([
      { id: 'beta', dependsOn: ['alpha'] },
      { id: 'alpha', dependsOn: ['beta'] },
    ]);
    const expected = 'Task Graph v1 contains a dependency cycle: alpha -> beta -> alpha.';
    expect(graphError(one).message).toBe(expected);
    expect(graphError(two).message).toBe(expected);
  });

  it('should bound a long cycle path to the first 8 entries, an ellipsis and the last', () => {
    const ids = Array.from({ length: 12 }, (_, index) => `n${String(index).padStart(2, '0')}`);
    const input = graphOf(ids.map((id, index) => ({ id, dependsOn: [ids[(index + 1) % ids.length]] })));
    expect(graphError(input).message).toBe('Task Graph v1 contains a dependency cycle: n00 -> n01 -> n02 -> n03 -> n04 -> n05 -> n06 -> n07 -> ... -> n00.');
  });

  it('should report the cycle found from the sorted-first node, not a cycle elsewhere', () => {
    const input = graphOf([
      { id: 'x', dependsOn: ['y'] },
      { id: 'y', dependsOn: ['x'] },
      { id: 'b', dependsOn: ['c'] },
      { id: 'c', dependsOn: ['b'] },
      { id: 'a', dependsOn: ['b'] },
    ]);
    expect(graphError(input).message).toBe('Task Graph v1 contains a dependency cycle: b -> c -> b.');
  });
});

describe('validateTaskGraph: hostile input', () => {
  it('should report a __proto__ key as an unknown field without polluting any prototype', () => {
    const input = JSON.parse('{"__proto__":{"polluted":true},"schemaVersion":1}');
    expect(graphError(input).message).toBe('Task Graph v1 input contains unknown field "__proto__".');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('should ignore values inherited from a polluted Object.prototype', () => {
    const input = graphInput();
    delete input.subtasks[2].dependsOn;
    Object.defineProperty(Object.prototype, 'dependsOn', { value: ['ghost'], configurable: true, writable: true });
    try {
      expect(validGraph(input).subtasks[1].dependsOn).toEqual([]);
    } finally {
      delete (Object.prototype as Record<string, unknown>).dependsOn;
    }
  });

  it('should accept ids named like Object.prototype members and refuse __proto__ by its format', () => {
    const graph = validGraph(graphOf([{ id: 'constructor' }, { id: 'tostring', dependsOn: ['constructor'] }]));
    expect(graph.subtasks.map((subtask) => subtask.id)).toEqual(['constructor', 'tostring']);
    expect(graphError(graphOf([{ id: '__proto__' }])).message).toBe('Task Graph v1 subtask at index 0 has malformed id "__proto__".');
  });

  it('should replace control characters in echoed values and cap them at 128 characters', () => {
    const input = graphInput();
    input.subtasks[0].id = `bad\u0000\n${'x'.repeat(500)}`;
    const error = graphError(input);
    expect(error.message).not.toMatch(/[\u0000-\u001f]/);
    const echoed = /"(.*)"/.exec(error.message)?.[1] ?? '';
    expect(echoed.length).toBe(128);
    expect(echoed.startsWith('bad  x')).toBe(true);
  });

  it('should survive values whose string conversion throws', () => {
    const input = graphInput();
    input.schemaVersion = { toString: 1 };
    expect(graphError(input).message).toBe('Unsupported Task Graph schemaVersion: [object]. Expected 1.');
    const nested: unknown[] = [];
    let cursor = nested;
    for (let depth = 0; depth < 100_000; depth += 1) {
      const next: unknown[] = [];
      cursor.push(next);
      cursor = next;
    }
    const deep = graphInput();
    deep.schemaVersion = nested;
    expect(graphError(deep).code).toBe('TASK_GRAPH_INVALID');
  });

  it('should reject class instances where JSON objects are required', () => {
    expect(graphError(new Date()).message).toBe('Task Graph v1 input must be a JSON object.');
    const input = graphInput();
    input.parentTask = new Map();
    expect(graphError(input).message).toBe('Task Graph v1 requires one parentTask object.');
  });
});
