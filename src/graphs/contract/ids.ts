/**
 * Identifier formats of Task Graph v1 (seed 002 "Input"; docs/seeds/task-graph-v1.md §1).
 * Identities are never trimmed: " codex" is malformed, not "codex".
 */

/** Parent Task id: `task-` + one alphanumeric + 1–127 of `[A-Za-z0-9_-]`. */
export const TASK_ID_PATTERN = /^task-[A-Za-z0-9][A-Za-z0-9_-]{1,127}$/;

/** Subtask and Agent ids: 1–64 lowercase alphanumeric, `_` or `-`, starting with a letter. */
export const SUBTASK_ID_PATTERN = /^[a-z][a-z0-9_-]{0,63}$/;
export const AGENT_ID_PATTERN = SUBTASK_ID_PATTERN;

/**
 * Windows device names, refused as subtask and Agent ids because ids become
 * worktree directory and branch path segments on agent machines (docs/seeds/task-graph-v1.md §1).
 */
export const RESERVED_DEVICE_NAMES: ReadonlySet<string> = new Set([
  'con',
  'prn',
  'aux',
  'nul',
  'com1',
  'com2',
  'com3',
  'com4',
  'com5',
  'com6',
  'com7',
  'com8',
  'com9',
  'lpt1',
  'lpt2',
  'lpt3',
  'lpt4',
  'lpt5',
  'lpt6',
  'lpt7',
  'lpt8',
  'lpt9',
]);

/** A well-formed parent Task id (`task-*`, 6–133 characters). */
export function isTaskId(value: unknown): value is string {
  return typeof value === 'string' && TASK_ID_PATTERN.test(value);
}

/** A well-formed subtask id that is not a reserved device name. */
export function isSubtaskId(value: unknown): value is string {
  return typeof value === 'string' && SUBTASK_ID_PATTERN.test(value) && !RESERVED_DEVICE_NAMES.has(value);
}

/** A well-formed Agent id that is not a reserved device name. */
export function isAgentId(value: unknown): value is string {
  return typeof value === 'string' && AGENT_ID_PATTERN.test(value) && !RESERVED_DEVICE_NAMES.has(value);
}
