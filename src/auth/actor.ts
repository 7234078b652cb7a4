/**
 * Who made a change, as the audit records it on the change's events
 * (migrations/0016): an operator (`user`), a `session`, or Coord itself (`system`: a sweep or job,
 * named by `id`), and the name of the token the request authenticated with (null for `system`).
 */
import type { Principal } from './principal.js';

export type ActorKind = 'user' | 'session' | 'system';

export interface Actor {
  kind: ActorKind;
  /** The user's or session's id, or the system job's name (`sweep:lease`, …). */
  id: string;
  /** The name of the token the request used (`default`, `ci`, …); null for a system actor. */
  token: string | null;
}

/** The actor of a request made by `p`. */
export function actorOf(p: Principal): Actor {
  if (p.kind === 'user' && p.system) return systemActor(p.system);
  return { kind: p.kind, id: p.id, token: p.token?.name ?? null };
}

/** Coord acting on its own: a sweep step (`sweep:lease`, `sweep:retention`, …) or a job (`on-session-stopped`). */
export function systemActor(job: string): Actor {
  return { kind: 'system', id: job, token: null };
}
