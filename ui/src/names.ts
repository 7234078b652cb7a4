/**
 * Session names for every view: the sessions the token may list (`GET /v1/sessions`), read once
 * at sign-in and every 10 s, so owners, assignees, actors and session lists show a name (the id
 * on hover) instead of an `s-…` id. An id the token cannot list (an Agent's, a session outside
 * its subtree) stays an id.
 */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import { useLive } from './live.js';
import { useSignedIn } from './api.js';

export const Names = createContext<Map<string, string>>(new Map());

/** Reads the names (for the provider at the top of the signed-in app). */
export function useNameSource(): Map<string, string> {
  const { client } = useSignedIn();
  const live = useLive(undefined, () => client.sessions.listAll(), [], { pollMs: 10_000 });
  return new Map((live.data ?? []).map((s) => [s.id, s.name]));
}

/** The id → name map of the sessions the token may list. */
export function useNames(): Map<string, string> {
  return useContext(Names);
}

/** `session:s-…` as "<root name>’s list" when its root is listed; otherwise undefined. */
export function listName(scope: string, names: Map<string, string>): string | undefined {
  if (!scope.startsWith('session:')) return undefined;
  const name = names.get(scope.slice('session:'.length));
  return name ? `${name}’s list` : undefined;
}
