/**
 * Hash routes (`#/scope/<scope>`): the server serves one page, and a route is a bookmarkable
 * place with no token in it.
 *
 *   (no hash)                an operator's Attention, a session's scopes
 *   #/attention              what is stuck in the team and the next step (operators)
 *   #/                       scopes the token can read, with progress
 *   #/scope/<scope>          a scope's items by status
 *   #/item/<id>              one item and its event history
 *   #/sessions               sessions with liveness and holdings
 *   #/scenarios              scenarios with done/total
 *   #/scenario/<name>        one scenario: members, WAITING ON
 *   #/graphs                 Task Graph v1 graphs
 *   #/graph/<id>             one graph drawn as a DAG, with its plan and history
 *   #/metagit/<id>           one metagit graph drawn as a DAG, with its nodes
 */
import { useEffect, useState } from 'preact/hooks';

export interface Route {
  /** `invalid`: a link whose argument is not valid percent-encoding (`arg` is the raw hash). */
  view: 'home' | 'attention' | 'scopes' | 'scope' | 'item' | 'sessions' | 'scenarios' | 'scenario' | 'graphs' | 'graph' | 'metagit' | 'invalid';
  arg?: string;
}

export function parseRoute(hash: string): Route {
  // No hash at all: the signed-in landing page (an operator's Attention, a session's scopes).
  if (hash === '' || hash === '#') return { view: 'home' };
  const parts = hash.replace(/^#\/?/, '').split('/');
  const view = parts[0] || 'scopes';
  let arg: string | undefined;
  try {
    arg = parts.length > 1 ? decodeURIComponent(parts.slice(1).join('/')) : undefined;
  } catch {
    // A hand-edited or truncated link (`%E0%A4%A`): say so rather than fail to render.
    return { view: 'invalid', arg: hash };
  }
  const known: Route['view'][] = ['attention', 'scopes', 'scope', 'item', 'sessions', 'scenarios', 'scenario', 'graphs', 'graph', 'metagit'];
  // A view that names one object needs its id: `#/scope/` is a broken link, not a request to read "".
  const needsArg: Route['view'][] = ['scope', 'item', 'scenario', 'graph', 'metagit'];
  if (!known.includes(view as Route['view']) || (needsArg.includes(view as Route['view']) && !arg)) return { view: 'invalid', arg: hash };
  return { view: view as Route['view'], arg };
}

/** The href of a route. */
export function href(view: Route['view'], arg?: string): string {
  return arg === undefined ? `#/${view}` : `#/${view}/${encodeURIComponent(arg)}`;
}

export function useRoute(): Route {
  const [r, set] = useState(parseRoute(location.hash));
  useEffect(() => {
    const on = () =>
      set((prev) => {
        const next = parseRoute(location.hash);
        return JSON.stringify(next) === JSON.stringify(prev) ? prev : next;
      });
    addEventListener('hashchange', on);
    // Effects run after the first paint: a hash changed between that render and this subscription
    // (a link followed at once, e.g. right after sign-in) fired no event we heard, so read it now.
    on();
    return () => removeEventListener('hashchange', on);
  }, []);
  return r;
}
