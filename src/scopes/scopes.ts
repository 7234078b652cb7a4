/**
 * Scopes: every item belongs to exactly one list, named by its scope string (seed 000 "Scoping";
 * docs/architecture.md §D2): `session:<subtree-root-id>`, `scenario:<scenario-id>`, `graph:<parentTaskId>`.
 * This module resolves a requested scope (or the caller's default) and answers the two questions
 * every read and write asks: is the caller in scope, and does it hold override authority there.
 *
 * A scope string names a list within one team (docs/architecture.md "Teams"): two
 * teams may both have `graph:task-release`. A scope is therefore always a {@link TeamScope}, and
 * a principal is in no scope of another team (which reads exactly as a missing one).
 */
import type { Principal } from '../auth/principal.js';
import type { Config } from '../config.js';
import type { Db, Sql } from '../db/client.js';
import { DomainError, fail } from '../http/errors.js';

/** A scope string and the team it belongs to: the key of a list. */
export interface TeamScope {
  teamId: string;
  /** The canonical scope string (a `session:` scope is always its subtree root). */
  scope: string;
}

export interface ScopeAccess extends TeamScope {
  /** Caller may read, add and claim. */
  inScope: boolean;
  /** Caller is the scope's override authority (subtree root, scenario orchestrator) or a user. */
  override: boolean;
}

/**
 * A scope kind other than `session` (scenarios, graphs) registers how it resolves a requested
 * name to its canonical scope and how it decides membership and override authority.
 */
export interface ScopeKind {
  /** `name` is what follows `<kind>:`, in `teamId`; returns undefined when the scope does not exist there. */
  resolve(db: Db, teamId: string, name: string): Promise<{ scope: string; key: string } | undefined>;
  /** Access of a principal to a scope of its own team (`key` as {@link resolve} returned it). */
  access(db: Db, principal: Principal, key: string): Promise<{ inScope: boolean; override: boolean }>;
  /**
   * `next` in this kind's scopes, when the kind claims by rules of its own (graphs: the locked
   * claim of Task Graph v1). Without it, `next` is the engine's.
   */
  next?(
    ctx: { sql: Sql; config: Config; principal: Principal },
    key: string,
  ): Promise<{ claimed: boolean; item?: unknown; dispatch?: unknown; reason?: string }>;
}

const kinds = new Map<string, ScopeKind>();

/** The registered kind of a canonical scope string (undefined for `session:` and unknown kinds). */
export function scopeKindOf(scope: string): ScopeKind | undefined {
  return kinds.get(scope.slice(0, scope.indexOf(':')));
}

/**
 * Registers a scope kind under `kind` (the prefix before `:`). Called by buildApp only
 * (src/modules.ts `wireModules`); the registry is process-wide and registering the same kind
 * again replaces it, so building many apps in one process is harmless.
 */
export function registerScopeKind(kind: string, impl: ScopeKind): void {
  kinds.set(kind, impl);
}

/** The registered kind names (tests read them). */
export function registeredScopeKinds(): string[] {
  return [...kinds.keys()];
}

/** The caller's default scope: its subtree root's list. Users have none. */
export function defaultScope(p: Principal): string | undefined {
  return p.kind === 'session' ? `session:${p.rootId}` : undefined;
}

const NO_ACCESS = { inScope: false, override: false } as const;

/** Access to a `session:` scope needs no database: it is decided by the caller's anchor. */
function sessionAccess(p: Principal, rootId: string): { inScope: boolean; override: boolean } {
  if (p.kind === 'user') return { inScope: true, override: true };
  return { inScope: p.rootId === rootId, override: p.id === rootId };
}

/**
 * The canonical form of a scope string, resolving names (`scenario:strath` → `scenario:sc-…`,
 * `session:<any member>` → `session:<root>`) without any access check. Undefined when unknown.
 */
export async function canonicalScope(db: Db, teamId: string, scope: string): Promise<string | undefined> {
  const i = scope.indexOf(':');
  if (i <= 0) return undefined;
  const kind = scope.slice(0, i);
  const name = scope.slice(i + 1);
  if (kind === 'session') {
    const [row] = await db<{ root_id: string }[]>`select root_id from sessions where id = ${name} and team_id = ${teamId}`;
    return row ? `session:${row.root_id}` : undefined;
  }
  return (await kinds.get(kind)?.resolve(db, teamId, name))?.scope;
}

/**
 * Access to a canonical team scope, for reads and writes of an existing item. Never throws for
 * an unknown kind (returns no access, so the item reads as not found). Another team's scope is
 * never in scope, not even for an operator.
 */
export async function accessToScope(db: Db, p: Principal, { teamId, scope }: TeamScope): Promise<{ inScope: boolean; override: boolean }> {
  if (teamId !== p.teamId) return NO_ACCESS;
  const i = scope.indexOf(':');
  const kind = scope.slice(0, i);
  const key = scope.slice(i + 1);
  if (kind === 'session') return sessionAccess(p, key);
  const impl = kinds.get(kind);
  if (!impl) return p.kind === 'user' ? { inScope: true, override: true } : NO_ACCESS;
  return impl.access(db, p, key);
}

/**
 * The refusal of a scope that does not exist *or* that the caller is not in: one answer for both,
 * word for word, so an outsider cannot tell another subtree's list (or a scenario it is not a
 * member of) from a missing one (docs/architecture.md §D2). The todo seed names the
 * outsider's refusal ("not authorized for that session's task list", "… for scenario "x"'s todo
 * list"; docs/seeds/todo-list.md §2) for a local daemon, where existence is no secret; over the network the
 * brief's rule wins and the seed's wording survives in the message.
 */
export function scopeNotFound(kind: string, name: string): never {
  throw new DomainError('scope_not_found', `${kind} "${name}" not found, or not authorized for its todo list; check the scope (GET /v1/me names your own)`);
}

/**
 * Resolves a requested scope (or the default) in the caller's team and checks the caller is in it.
 * - no scope and a user caller → 400 `no_session_context` (seed: "specify --session or --scenario");
 * - `session:<id>` resolves that session's subtree root; a session caller must anchor to the same
 *   root (seed 000, docs/seeds/todo-list.md §2);
 * - `scenario:<name|id>` / `graph:<id>` / `metagit:<id>` are resolved by their registered kind;
 * - a scope that does not exist and one the caller is not in are the same 404 `scope_not_found`
 *   ({@link scopeNotFound}).
 */
export async function resolveScope(db: Db, p: Principal, requested?: string): Promise<ScopeAccess> {
  if (!requested) {
    const scope = defaultScope(p);
    if (!scope) fail('no_session_context', 'no session context: pass scope=session:<id>, scenario:<name> or graph:<id>');
    return { teamId: p.teamId, scope, inScope: true, override: p.kind === 'session' && p.id === p.rootId };
  }
  const i = requested.indexOf(':');
  if (i <= 0 || i === requested.length - 1) {
    fail('invalid_scope', `scope "${requested}" is not of the form session:<id>, scenario:<name>, graph:<id> or metagit:<id>`);
  }
  const kind = requested.slice(0, i);
  const name = requested.slice(i + 1);
  if (kind === 'session') {
    const [row] = await db<{ root_id: string }[]>`select root_id from sessions where id = ${name} and team_id = ${p.teamId}`;
    const a = row ? sessionAccess(p, row.root_id) : undefined;
    if (!row || !a?.inScope) scopeNotFound(kind, name);
    return { teamId: p.teamId, scope: `session:${row.root_id}`, ...a };
  }
  const impl = kinds.get(kind);
  if (!impl) fail('invalid_scope', `unknown scope kind "${kind}" (use session:, scenario: or graph:)`);
  const found = await impl.resolve(db, p.teamId, name);
  const a = found ? await impl.access(db, p, found.key) : undefined;
  if (!found || !a?.inScope) scopeNotFound(kind, name);
  return { teamId: p.teamId, scope: found.scope, ...a };
}
