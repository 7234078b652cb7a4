/**
 * What `graph run` and `graph dispatch` name as the next commands (`next`): read from the whole
 * graph after the wave, so a subtask that failed in an earlier run is resumed before the next run.
 */
import { describe, expect, it } from 'vitest';
import { nextAfterRun } from '../../cli/runner/runner.js';

const graph = (states: Record<string, string>) => ({ subtasks: Object.entries(states).map(([subtaskId, state]) => ({ subtaskId, state })) });

describe('next after run', () => {
  it('resumes a FAILED or STOPPED subtask from any earlier run before running again', () => {
    expect(nextAfterRun('task-x', graph({ bad: 'FAILED', ok1: 'SUCCEEDED', ok2: 'READY' }))).toEqual([
      'coord graph inspect task-x',
      'coord graph resume task-x bad',
      'coord graph run task-x',
    ]);
    expect(nextAfterRun('task-x', graph({ halted: 'STOPPED', later: 'BLOCKED' }))).toEqual([
      'coord graph inspect task-x',
      'coord graph resume task-x halted',
      'coord graph run task-x',
    ]);
  });

  it('looks at running work, runs the next wave, integrates when everything SUCCEEDED, and inspects when nothing can move', () => {
    expect(nextAfterRun('task-x', graph({ a: 'RUNNING', b: 'READY' }))).toEqual(['coord graph status task-x', 'coord graph recover task-x']);
    expect(nextAfterRun('task-x', graph({ a: 'SUCCEEDED', b: 'READY' }))).toEqual(['coord graph run task-x']);
    expect(nextAfterRun('task-x', graph({ a: 'SUCCEEDED', b: 'SUCCEEDED' }))).toEqual(['coord graph integrate task-x']);
    expect(nextAfterRun('task-x', graph({ a: 'SUCCEEDED', b: 'BLOCKED' }))).toEqual(['coord graph inspect task-x']);
  });
});
