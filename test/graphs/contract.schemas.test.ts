import { describe, it, expect, expectTypeOf } from 'vitest';
import { z } from 'zod';
import {
  IntentMapV1Schema,
  NormalizedIntentMapSchema,
  NormalizedTaskGraphSchema,
  TaskGraphFrontierSchema,
  TaskGraphInvalidSchema,
  TaskGraphPlanSchema,
  TaskGraphSchedulingErrorSchema,
  TaskGraphV1Schema,
  type NormalizedGraph,
  type NormalizedIntentMap,
  type TaskGraphFrontier,
  type TaskGraphInvalid,
  type TaskGraphPlan,
  type TaskGraphSchedulingError,
} from '../../src/graphs/contract/index.js';
import { graphInput } from './fixtures.js';

describe('contract zod schemas', () => {
  it('should register stable OpenAPI component ids', () => {
    const ids = [TaskGraphV1Schema, IntentMapV1Schema, TaskGraphFrontierSchema, TaskGraphPlanSchema, TaskGraphInvalidSchema].map(
      (schema) => z.globalRegistry.get(schema)?.id,
    );
    expect(ids).toEqual(['TaskGraphV1', 'IntentMapV1', 'TaskGraphFrontier', 'TaskGraphPlan', 'TaskGraphInvalidError']);
  });

  it('should convert every public schema to JSON Schema', () => {
    for (const schema of [
      TaskGraphV1Schema,
      IntentMapV1Schema,
      NormalizedTaskGraphSchema,
      NormalizedIntentMapSchema,
      TaskGraphFrontierSchema,
      TaskGraphPlanSchema,
      TaskGraphInvalidSchema,
      TaskGraphSchedulingErrorSchema,
    ]) {
      expect(() => z.toJSONSchema(schema)).not.toThrow();
    }
    type Json = { additionalProperties?: unknown; required?: string[]; $defs?: Record<string, Json> };
    const document = z.toJSONSchema(TaskGraphV1Schema) as Json;
    const json = document.$defs?.TaskGraphV1 ?? document;
    expect(json.additionalProperties).toBe(false);
    expect(json.required).toEqual(['schemaVersion', 'parentTask', 'subtasks', 'maxConcurrency']);
  });

  it('should describe the seed example graph and refuse unknown keys', () => {
    expect(TaskGraphV1Schema.safeParse(graphInput()).success).toBe(true);
    expect(TaskGraphV1Schema.safeParse({ ...graphInput(), unexpected: true }).success).toBe(false);
    expect(
      IntentMapV1Schema.safeParse({
        schemaVersion: 1,
        parentTaskId: 'task-product-slice',
        subtasks: [{ id: 'backend', writeIntent: ['src/server/**'] }],
      }).success,
    ).toBe(true);
  });

  it('should type function outputs as the documented response shapes', () => {
    expectTypeOf<TaskGraphPlan>().toExtend<z.output<typeof TaskGraphPlanSchema>>();
    expectTypeOf<TaskGraphFrontier>().toExtend<z.output<typeof TaskGraphFrontierSchema>>();
    expectTypeOf<TaskGraphInvalid>().toExtend<z.output<typeof TaskGraphInvalidSchema>>();
    expectTypeOf<TaskGraphSchedulingError>().toExtend<z.output<typeof TaskGraphSchedulingErrorSchema>>();
    // The normalised values are deep-readonly, so check that the schema output satisfies them.
    expectTypeOf<z.output<typeof NormalizedTaskGraphSchema>>().toExtend<NormalizedGraph>();
    expectTypeOf<z.output<typeof NormalizedIntentMapSchema>>().toExtend<NormalizedIntentMap>();
  });
});
