/**
 * `#/`: the scopes the token may read, with done/total and the status counts (`GET /v1/scopes`).
 * The counts (`GET /v1/scopes`) tell ready items, items waiting on dependencies, claimed ones,
 * owners' blocks and done ones apart, the groups of the scope page (an expired claim counts as in
 * progress until taken over or reopened).
 * The list spans scopes, and a stream follows one topic, so it is re-read every 5 s (each scope's
 * own view is live from its stream).
 */
import { useState } from 'preact/hooks';
import { useSignedIn } from '../api.js';
import { ErrorNote, Loading, Progress, Section } from '../components/common.js';
import { useLive } from '../live.js';
import { listName, useNames } from '../names.js';
import { href } from '../router.js';

export function ScopesView() {
  const { client, me } = useSignedIn();
  const [filter, setFilter] = useState('');
  const live = useLive(undefined, () => client.scopes.listAll(), [], { pollMs: 5000 });
  // A session list is named for its root session: `session:s-…` reads "worker-1's list".
  const names = useNames();
  const scopes = (live.data ?? []).filter((s) => !filter || s.scope.includes(filter) || s.name.includes(filter));
  return (
    <Section
      title="Scopes"
      actions={
        <label class="filters">
          Filter <input type="search" value={filter} onInput={(e) => setFilter((e.target as HTMLInputElement).value)} aria-label="Filter scopes" />
        </label>
      }
    >
      <p class="muted">
        {me.kind === 'user' ? 'Every scope of your team (you are an operator).' : `Your list (${me.scope}) and the scenario and graph lists you are in.`} Counts
        refresh every 5 s; a scope’s own page is live.
      </p>
      <ErrorNote error={live.error} />
      {!live.data ? (
        <Loading />
      ) : scopes.length === 0 ? (
        <p class="muted">No scopes.</p>
      ) : (
        <ul class="cards" aria-label="scopes" style={{ listStyle: 'none', padding: 0 }}>
          {scopes.map((s) => (
            <li class="card" key={s.scope} data-scope={s.scope}>
              <h3>
                <a href={href('scope', s.scope)}>{s.kind === 'scenario' ? `scenario ${s.name}` : (listName(s.scope, names) ?? s.scope)}</a>
              </h3>
              {(s.kind === 'scenario' || listName(s.scope, names)) && <div class="muted mono">{s.scope}</div>}
              <Progress done={s.done} total={s.total} />
              <div class="counts">
                {s.todo - s.waiting} ready · {s.waiting} waiting on dependencies · {s.inProgress} in progress · {s.blocked} blocked by their owner · {s.done}{' '}
                done
                {s.override ? ' · you hold override authority' : ''}
              </div>
              {s.kind === 'graph' && <a href={href('graph', s.name)}>graph view</a>}
              {s.kind === 'metagit' && <a href={href('metagit', s.name)}>graph view</a>}
              {s.kind === 'scenario' && <a href={href('scenario', s.name)}>scenario status</a>}
            </li>
          ))}
        </ul>
      )}
    </Section>
  );
}
