/**
 * @coord/sdk: a TypeScript client for Coord.
 *
 * ```ts
 * import { createClient, AlreadyClaimed } from '@coord/sdk';
 * const coord = createClient({ baseUrl: 'http://127.0.0.1:3000', token: process.env.COORD_TOKEN });
 * const { claimed, item } = await coord.todos.next();
 * ```
 */
export { createClient, CoordClient } from './client.js';
export type { ClientOptions } from './transport.js';
export { retryingFetch, RETRY_DEFAULTS, type RetryOptions } from './retry.js';
export { TodosApi, type IfMatch, type TryClaimResult } from './todos.js';
export type { ClaimContext, ClaimLoopOptions, WithClaimOptions, WithClaimResult, WorkSummary } from './work.js';
export { SessionsApi } from './sessions.js';
export { ScenariosApi } from './scenarios.js';
export { ScopesApi } from './scopes.js';
export { TokensApi } from './tokens.js';
export { TeamsApi } from './teams.js';
export { AttentionApi } from './attention.js';
export { AuditApi } from './audit.js';
export * from './graphs.js';
export * from './metagit.js';
export { EventsApi, normalizeTopic, type CoordEvent, type EventStream, type FollowOptions } from './events.js';
export { AdminApi } from './admin.js';
export * from './errors.js';
export type * from './types.js';
export type { paths, components } from './generated/openapi.js';
