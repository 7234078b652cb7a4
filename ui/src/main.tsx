/**
 * The Coord dashboard: sign in with a token, then live views of what the token may read. A client
 * of the public API only (see api.ts); every view is a snapshot kept current by SSE (live.ts).
 */
import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { CoordClient, Me } from '../../sdk/src/index.js';
import { clientFor, errorText, Session, storedToken, storeToken, type SignedIn } from './api.js';
import { useConnection } from './live.js';
import { Names, useNameSource } from './names.js';
import { href, useRoute, type Route } from './router.js';
import { AttentionView } from './views/attention.js';
import { GraphsView, GraphView } from './views/graphs.js';
import { ItemView } from './views/item.js';
import { MetagitView } from './views/metagit.js';
import { ScenariosView, ScenarioView } from './views/scenarios.js';
import { ScopesView } from './views/scopes.js';
import { ScopeView } from './views/scope.js';
import { SessionsView } from './views/sessions.js';
import './style.css';

function SignIn({ onSignedIn, error }: { onSignedIn: (token: string) => void; error?: string }) {
  const [token, setToken] = useState('');
  const field = useRef<HTMLInputElement>(null);
  useEffect(() => field.current?.focus(), []);
  return (
    <main class="signin">
      <h1>Coord</h1>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (token.trim()) onSignedIn(token.trim());
        }}
      >
        <label for="token">Token</label>
        <input
          ref={field}
          id="token"
          name="token"
          type="password"
          autocomplete="off"
          required
          value={token}
          onInput={(e) => setToken((e.target as HTMLInputElement).value)}
        />
        <p class="muted">An operator token, or an agent session’s token. It is kept in this tab only (session storage) and sent as the Authorization header.</p>
        <button type="submit">Sign in</button>
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
      </form>
    </main>
  );
}

function ConnectionBadge() {
  const s = useConnection();
  const text = {
    live: 'Live',
    pending: 'Refresh pending — what is shown may be out of date',
    paused: 'Paused (tab hidden)',
    connecting: 'Connecting…',
    reconnecting: 'Disconnected — reconnecting…',
    failed: 'Not live: the stream was refused',
    off: 'Refreshing (this view spans scopes)',
  }[s];
  return (
    <span class={`link link-${s}`} role="status" aria-live="polite" data-state={s}>
      {text}
    </span>
  );
}

const NAV: [Route['view'], string][] = [
  ['attention', 'Attention'],
  ['scopes', 'Scopes'],
  ['sessions', 'Sessions'],
  ['scenarios', 'Scenarios'],
  ['graphs', 'Task graphs'],
];

function Shell({ s }: { s: SignedIn }) {
  const raw = useRoute();
  // The landing page: an operator's is Attention (what is stuck), a session's its scopes.
  const route: Route = raw.view === 'home' ? { view: s.me.kind === 'user' ? 'attention' : 'scopes' } : raw;
  const current = { scope: 'scopes', item: 'scopes', scenario: 'scenarios', graph: 'graphs', metagit: 'scopes' }[route.view as string] ?? route.view;
  const nav = NAV.filter(([v]) => v !== 'attention' || s.me.kind === 'user');
  return (
    <Session.Provider value={s}>
      <header>
        <a class="brand" href={href('scopes')}>
          Coord
        </a>
        <nav aria-label="views">
          {nav.map(([v, label]) => (
            <a href={href(v)} aria-current={current === v ? 'page' : undefined}>
              {label}
            </a>
          ))}
        </nav>
        <ConnectionBadge />
        <span class="who" title={`${s.me.id}, team ${s.me.teamId}`}>
          {s.me.kind === 'user' ? 'operator' : 'session'} <strong>{s.me.name}</strong>
          {s.me.kind === 'user' && s.me.role === 'admin' ? ' (server administrator)' : ''}
        </span>
        <button type="button" class="secondary" onClick={s.signOut}>
          Sign out
        </button>
      </header>
      <main id="main">
        <NamedView route={route} />
      </main>
    </Session.Provider>
  );
}

/** The view with the session names provided (read inside the signed-in context). */
function NamedView({ route }: { route: Route }) {
  return (
    <Names.Provider value={useNameSource()}>
      <View route={route} />
    </Names.Provider>
  );
}

function View({ route }: { route: Route }) {
  switch (route.view) {
    case 'scope':
      return <ScopeView scope={route.arg ?? ''} />;
    case 'item':
      return <ItemView id={route.arg ?? ''} />;
    case 'attention':
      return <AttentionView />;
    case 'sessions':
      return <SessionsView />;
    case 'scenarios':
      return <ScenariosView />;
    case 'scenario':
      return <ScenarioView name={route.arg ?? ''} />;
    case 'graphs':
      return <GraphsView />;
    case 'graph':
      return <GraphView id={route.arg ?? ''} />;
    case 'metagit':
      return <MetagitView id={route.arg ?? ''} />;
    case 'invalid':
      return (
        <section aria-label="Not a valid link">
          <h2>Not a valid link</h2>
          <p class="error" role="alert">
            The address <code>{route.arg}</code> is not a valid dashboard link (its encoding is broken: was it cut or edited?).
          </p>
          <p>
            Go to the <a href={href('scopes')}>scopes</a>, <a href={href('sessions')}>sessions</a>, <a href={href('scenarios')}>scenarios</a> or{' '}
            <a href={href('graphs')}>task graphs</a>.
          </p>
        </section>
      );
    default:
      return <ScopesView />;
  }
}

function App() {
  const [state, setState] = useState<{ client: CoordClient; me: Me } | null>(null);
  const [error, setError] = useState<string | undefined>();
  const [checking, setChecking] = useState(!!storedToken());

  // The client signed in now: a 401 on any of its calls signs out (the token died meanwhile).
  const current = useRef<CoordClient | null>(null);
  const signIn = async (token: string) => {
    const client: CoordClient = clientFor(token, () => {
      if (current.current !== client) return;
      current.current = null;
      storeToken(null);
      setState(null);
      setError('Signed out: this token is no longer valid (revoked or expired, or its session was stopped). Sign in with a live token.');
    });
    try {
      const me = await client.me();
      storeToken(token);
      setError(undefined);
      current.current = client;
      setState({ client, me });
    } catch (err) {
      storeToken(null);
      setError(`Sign-in failed: ${errorText(err)}`);
    } finally {
      setChecking(false);
    }
  };
  useEffect(() => {
    const t = storedToken();
    if (t) void signIn(t);
  }, []);
  if (checking) return <p class="muted">Signing in…</p>;
  if (!state) return <SignIn onSignedIn={(t) => void signIn(t)} error={error} />;
  return (
    <Shell
      s={{
        ...state,
        signOut: () => {
          current.current = null;
          storeToken(null);
          setState(null);
        },
      }}
    />
  );
}

render(<App />, document.getElementById('app')!);
