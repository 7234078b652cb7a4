/**
 * Task Graph v1 + Intent Map v1 contract: pure validation, frontier, wave and
 * Graph Preflight (seed 002; docs/seeds/task-graph-v1.md). No database, no I/O.
 */
export {
  validateTaskGraph,
  formatCyclePath,
  TASK_GRAPH_SCHEMA_VERSION,
  TASK_GRAPH_MIN_SUBTASKS,
  TASK_GRAPH_MAX_SUBTASKS,
  TASK_GRAPH_MIN_CONCURRENCY,
  TASK_GRAPH_MAX_CONCURRENCY,
  TASK_GRAPH_MAX_SPEC_BYTES,
  TASK_GRAPH_MAX_TITLE_CHARS,
  TASK_GRAPH_MAX_AGENT_ID_CHARS,
  TASK_GRAPH_MAX_INPUT_BYTES,
} from './validate.js';
export {
  validateIntentMap,
  normalizeWriteIntentPattern,
  intentCoverageFacts,
  writeIntentPatternsMayOverlap,
  writeIntentConflictBetween,
  INTENT_MAP_SCHEMA_VERSION,
  INTENT_MAP_SCOPE_POLICIES,
  INTENT_MAP_DEFAULT_SCOPE_POLICY,
  INTENT_MAP_MAX_INPUT_BYTES,
  INTENT_MAP_MAX_PATTERNS,
  INTENT_MAP_MAX_PATTERN_BYTES,
} from './intent-map.js';
export {
  deriveSubtaskStates,
  buildFrontier,
  deriveFrontier,
  deriveParentState,
  SUBTASK_STATES,
  TASK_GRAPH_STATES,
} from './frontier.js';
export { planGraph, deriveWave, checkSubtaskClaim } from './plan.js';
export { matchesWriteIntentPattern, pathCoveredByWriteIntent } from './glob.js';
export { auditScope, SCOPE_AUDIT_LIST_LIMIT, SCOPE_AUDIT_MAX_CHANGES, SCOPE_AUDIT_MAX_PATH_BYTES } from './scope-audit.js';
export { checkScopeEvidence, driftReason } from './evidence-check.js';
export type {
  ReportedChange,
  ScopeAuditError,
  ScopeAuditInput,
  ScopeDriftEvidence,
  ScopeEvidence,
  ScopeEvidenceChange,
} from './scope-audit.js';
export { isTaskId, isSubtaskId, isAgentId, RESERVED_DEVICE_NAMES } from './ids.js';
export { compareByteOrder } from './text.js';
export * from './schemas.js';
export type * from './types.js';
