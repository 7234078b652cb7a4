/**
 * `#/sessions`: the sessions the token may read (`GET /v1/sessions`) with liveness (alive, last
 * seen, heartbeat interval, stop reason) and what each holds (the exact count and the longest-held
 * claims). Sessions span scopes, so the list is re-read every 3 s.
 *
 * Stop is offered where the API allows it: a user, the session itself, or an ancestor (the
 * `POST /v1/sessions/{id}/stop` rule); it asks for confirmation, since a stop reopens the
 * session's claims and its descendants'.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { Session } from '../../../sdk/src/index.js';
import { errorText, useSignedIn } from '../api.js';
import { ErrorNote, Loading, Section, StatusBadge, Time } from '../components/common.js';
import { useLive } from '../live.js';
import { href } from '../router.js';

type Show = 'alive' | 'active' | 'stopped' | 'all';

/** Whether `me` is `s` or one of its ancestors (walking the listed parents). */
function isSelfOrAncestor(meId: string, s: Session, byId: Map<string, Session>): boolean {
  for (let cur: Session | undefined = s, n = 0; cur && n < 1000; cur = cur.parentId ? byId.get(cur.parentId) : undefined, n++) {
    if (cur.id === meId) return true;
    if (!cur.parentId || cur.parentId === cur.id) break;
  }
  return false;
}

export function SessionsView() {
  const { client, me } = useSignedIn();
  const [show, setShow] = useState<Show>('active');
  const live = useLive(undefined, () => client.sessions.listAll(), [], { pollMs: 3000 });
  const all = live.data ?? [];
  const byId = new Map(all.map((s) => [s.id, s]));
  const rows = all.filter((s) => (show === 'all' ? true : show === 'stopped' ? s.status !== 'active' : show === 'alive' ? s.alive : s.status === 'active'));
  return (
    <Section
      title="Sessions"
      actions={
        <label class="filters">
          Show{' '}
          <select value={show} onChange={(e) => setShow((e.target as HTMLSelectElement).value as Show)}>
            <option value="active">active</option>
            <option value="alive">alive</option>
            <option value="stopped">stopped</option>
            <option value="all">all</option>
          </select>
        </label>
      }
    >
      <p class="muted">Refreshed every 3 s. “Alive” means seen within its heartbeat interval (or active without one).</p>
      <ErrorNote error={live.error} />
      {!live.data ? (
        <Loading />
      ) : rows.length === 0 ? (
        <p class="muted">No sessions to show.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">Session</th>
              <th scope="col">Status</th>
              <th scope="col">Alive</th>
              <th scope="col">Last seen</th>
              <th scope="col">Heartbeat</th>
              <th scope="col">Holds</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((s) => (
              <SessionRow
                key={s.id}
                s={s}
                canStop={s.status === 'active' && (me.kind === 'user' || isSelfOrAncestor(me.id, s, byId))}
                onChanged={live.reload}
              />
            ))}
          </tbody>
        </table>
      )}
    </Section>
  );
}

function SessionRow({ s, canStop, onChanged }: { s: Session; canStop: boolean; onChanged: () => void }) {
  const { client } = useSignedIn();
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState<string>();
  // Keyboard users: the confirmation's Cancel takes focus (so Enter twice never stops a session);
  // Escape (or Cancel) gives it back to Stop….
  const cancelRef = useRef<HTMLButtonElement>(null);
  const stopRef = useRef<HTMLButtonElement>(null);
  const wasConfirming = useRef(false);
  useEffect(() => {
    if (confirming) cancelRef.current?.focus();
    else if (wasConfirming.current) stopRef.current?.focus();
    wasConfirming.current = confirming;
  }, [confirming]);
  const holding = s.holding;
  return (
    <tr data-id={s.id}>
      <td>
        <strong>{s.name}</strong>
        <div class="muted mono">
          {s.id}
          {s.parentId && s.parentId !== s.id ? ` · child of ${s.parentId}` : ''}
          {s.graphId ? ` · graph ${s.graphId}${s.subtaskId ? `/${s.subtaskId}` : ''}` : ''}
        </div>
        <a href={href('scope', s.scope)}>{s.scope}</a>
      </td>
      <td>
        <StatusBadge status={s.status} />
        {s.stopReason ? <div class="muted">{s.stopReason}</div> : null}
      </td>
      <td>{s.alive ? 'yes' : <span class="why">no</span>}</td>
      <td>
        <Time at={s.lastSeenAt} relative past />
      </td>
      <td>{s.heartbeatIntervalMs ? `${Math.round(s.heartbeatIntervalMs / 1000)} s` : <span class="muted">—</span>}</td>
      <td>
        {holding && holding.count > 0 ? (
          <>
            {holding.count} claim{holding.count === 1 ? '' : 's'}
            <ul class="holding">
              {holding.items.map((i) => (
                <li key={i.id}>
                  <a href={href('item', i.id)}>{i.title}</a> <span class="muted">since</span> <Time at={i.since} relative past />
                </li>
              ))}
            </ul>
          </>
        ) : (
          <span class="muted">nothing</span>
        )}
      </td>
      <td>
        {canStop &&
          (confirming ? (
            <div
              class="actions"
              onKeyDown={(e) => {
                if (e.key === 'Escape') {
                  e.preventDefault();
                  setConfirming(false);
                }
              }}
            >
              <button
                type="button"
                class="danger"
                onClick={async () => {
                  setError(undefined);
                  try {
                    await client.sessions.stop(s.id);
                    setConfirming(false);
                    onChanged();
                  } catch (err) {
                    setError(errorText(err));
                  }
                }}
              >
                Stop {s.name} and its descendants
              </button>
              <button type="button" class="secondary" ref={cancelRef} onClick={() => setConfirming(false)}>
                Cancel
              </button>
            </div>
          ) : (
            <button type="button" class="secondary" ref={stopRef} onClick={() => setConfirming(true)} aria-label={`Stop session ${s.name}`}>
              Stop…
            </button>
          ))}
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
      </td>
    </tr>
  );
}
