/**
 * Who is calling. Users are operators ("the human" of the todo seed): in every scope of their team, override
 * authority everywhere, no session identity (cannot claim). Sessions are agents with a parent
 * chain; `rootId` anchors their default scope `session:<rootId>` (docs/architecture.md §D2).
 */
/** The token a request authenticated with: its id and its owner-chosen name. */
export interface TokenRef {
  id: string;
  name: string;
  /**
   * When the token expires by the database clock, as a `performance.now()` deadline of this
   * replica (the remaining time the database reported at lookup, added to the local monotonic
   * clock); undefined when it never expires. Event streams end at it.
   */
  expiresAtMono?: number;
}

export type Principal =
  | {
      kind: 'user';
      id: string;
      name: string;
      /** The operator's team (docs/architecture.md "Teams"). */
      teamId: string;
      /** `admin`: the server administrator (the bootstrap operator); `operator` otherwise. */
      role: 'operator' | 'admin';
      token?: TokenRef;
      /** Set only on {@link systemPrincipal}: the job acting as the human; the audit records it as a `system` actor. */
      system?: string;
    }
  | {
      kind: 'session';
      id: string;
      name: string;
      /** The session's team: its creator's. */
      teamId: string;
      rootId: string;
      parentId: string | null;
      systemKind: string | null;
      /** The configured Agent this session acts as (Task Graph v1), or null. */
      agentId: string | null;
      /** A dispatch's own session: the graph and subtask it may act on (and nothing else), or null. */
      graphId: string | null;
      subtaskId: string | null;
      token?: TokenRef;
    };

export type SessionPrincipal = Extract<Principal, { kind: 'session' }>;

/** Whether `p` is a server administrator: an operator with role `admin` (never a session, never Coord's own jobs). */
export function isServerAdmin(p: Principal): boolean {
  return p.kind === 'user' && !p.system && p.role === 'admin';
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the auth hook on every `/v1` route. */
    principal: Principal;
  }
}

/**
 * The principal Coord's own jobs act with where they run a user-facing operation (the human's
 * override authority in every scope): `job` names it (`sweep:graph-interruptions`, …), and the
 * audit records it as that `system` actor (src/auth/actor.ts). A job acts in the team of what it
 * acts on (`teamId`), with an operator's authority there and nowhere else.
 */
export function systemPrincipal(job: string, teamId: string): Principal {
  return { kind: 'user', id: 'system:sweep', name: 'sweep', teamId, role: 'operator', system: job };
}
