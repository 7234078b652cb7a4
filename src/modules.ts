/**
 * Domain modules beyond the core (scenarios, graphs, …) register their routes here, one line each,
 * so adding a module does not touch app.ts.
 */
import type { FastifyInstance } from 'fastify';
import type { Config } from './config.js';
import type { Sql } from './db/client.js';
import { auditRoutes } from './audit/audit.routes.js';
import { exportRoutes } from './export/export.routes.js';
import { executionRoutes } from './graphs/execution/execution.routes.js';
import { graphsRoutes } from './graphs/graphs.routes.js';
import { mcpRoutes } from './mcp/mcp.routes.js';
import { metagitRoutes } from './metagit/metagit.routes.js';
import { scenariosRoutes } from './scenarios/scenarios.routes.js';
import { scopesRoutes } from './scopes/scopes.routes.js';
import { teamsRoutes } from './teams/teams.routes.js';
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
  teamsRoutes,
];
