/**
 * Domain modules beyond the core (scenarios, graphs, …) register their routes here, one line each,
 * so adding a module does not touch app.ts.
 */
import type { FastifyInstance } from 'fastify';
import type { Config } from './config.js';
import type { Sql } from './db/client.js';
import { attentionRoutes } from './attention/attention.routes.js';
import { auditRoutes } from './audit/audit.routes.js';
import { exportRoutes } from './export/export.routes.js';
import { executionRoutes } from './graphs/execution/execution.routes.js';
import { graphsRoutes } from './graphs/graphs.routes.js';
import { mcpRoutes } from './mcp/mcp.routes.js';
import { metagitRoutes } from './metagit/metagit.routes.js';
import { scenariosRoutes } from './scenarios/scenarios.routes.js';
import { scopesRoutes } from './scopes/scopes.routes.js';
import { teamsRoutes } from './teams/teams.routes.js';
import { graphScopeKind } from './graphs/graphs.scope.js';
import { graphStopHook } from './graphs/execution/locked.js';
import { metagitScopeKind } from './metagit/metagit.scope.js';
import { metagitStopHook } from './metagit/metagit.locked.js';
import { scenarioScopeKind } from './scenarios/scenarios.scope.js';
import { registerScopeKind } from './scopes/scopes.js';
import { onSessionStopped } from './sessions/sessions.service.js';
import { tokensRoutes } from './tokens/tokens.routes.js';

export type ModuleRegistration = (app: FastifyInstance, deps: { sql: Sql; config: Config }) => void | Promise<void>;

export const extraModules: ModuleRegistration[] = [
  scenariosRoutes,
  exportRoutes,
  scopesRoutes,
  graphsRoutes,
  executionRoutes,
  metagitRoutes,
  mcpRoutes,
  tokensRoutes,
  auditRoutes,
  attentionRoutes,
  teamsRoutes,
];

/**
 * Everything the modules contribute to process-wide registries, in one place; buildApp calls it
 * before adding any route. Nothing registers itself on import.
 * - scope kinds (src/scopes/scopes.ts): `scenario:`, `graph:`, `metagit:`;
 * - session-stop hooks (src/sessions/sessions.service.ts): a stopped session's RUNNING graph
 *   dispatches and started metagit nodes are recorded at once.
 * The registries are module-level and idempotent (a kind is replaced, a hook is kept once), so a
 * process that builds many apps (the tests) registers each once.
 */
export function wireModules(): void {
  registerScopeKind('scenario', scenarioScopeKind);
  registerScopeKind('graph', graphScopeKind);
  registerScopeKind('metagit', metagitScopeKind);
  onSessionStopped(graphStopHook);
  onSessionStopped(metagitStopHook);
}
