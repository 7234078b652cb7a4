/**
 * Internal control flow for the validators: a check fails by throwing a
 * `ContractFailure`, and the public entry point turns it into a plain
 * `{ ok: false, error }` result. It never escapes the module.
 */
import type { TaskGraphInvalid, TaskGraphInvalidDetails, ValidationStage } from './types.js';
import { boundMessage, boundText, MAX_ECHO_CHARS } from './text.js';

export class ContractFailure extends Error {
  readonly error: TaskGraphInvalid;

  constructor(error: TaskGraphInvalid) {
    super(error.message);
    this.name = 'ContractFailure';
    this.error = error;
  }
}

export interface FailureOptions {
  parentTaskId?: string | null;
  subtaskId?: unknown;
  agent?: unknown;
}

/** Build a bounded TASK_GRAPH_INVALID error (docs/seeds/task-graph-v1.md §2, §5). */
export function taskGraphInvalid(stage: ValidationStage, message: string, options: FailureOptions = {}): TaskGraphInvalid {
  const parentTaskId = options.parentTaskId ?? null;
  const details: TaskGraphInvalidDetails = {
    parentTaskId,
    subtaskId: typeof options.subtaskId === 'string' && options.subtaskId !== '' ? boundText(options.subtaskId, MAX_ECHO_CHARS) : null,
  };
  if (typeof options.agent === 'string') details.agent = boundText(options.agent, MAX_ECHO_CHARS);
  return {
    code: 'TASK_GRAPH_INVALID',
    stage,
    message: boundMessage(message),
    recoverable: false,
    taskId: parentTaskId,
    details,
  };
}

export function fail(stage: ValidationStage, message: string, options: FailureOptions = {}): never {
  throw new ContractFailure(taskGraphInvalid(stage, message, options));
}
