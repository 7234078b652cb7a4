/**
 * `#/attention` (an operator's first page): what is stuck in the team, why, since when, who holds
 * it and the next step (`GET /v1/attention`), each action as a button. The list spans scopes, so it
 * is re-read every 2 s. Sortable by age, kind and session; the session is shown by name, its id on
 * hover.
 */
import { useState } from 'preact/hooks';
import type { AttentionEntry, Session } from '../../../sdk/src/index.js';
import { errorText, useSignedIn } from '../api.js';
import { ErrorNote, Loading, Section, Time } from '../components/common.js';
import { useLive } from '../live.js';
import { listName, useNames } from '../names.js';
import { href } from '../router.js';

const KIND_LABEL: Record<AttentionEntry['kind'], string> = {
  'expired-claim': 'Claim past its lease',
  'silent-holder': 'Silent session holding work',
  'reserved-for-gone': 'Reserved for a session that is gone',
  'manual-block': 'Blocked by its owner',
  'graph-subtask-ended': 'Graph subtask ended',
  'metagit-node-blocked': 'Metagit node blocked',
  'scenario-member-waiting': 'Scenario member waiting on upstream',
};

type SortKey = 'since' | 'kind' | 'session';

export function AttentionView() {
  const { client, me } = useSignedIn();
  const [sort, setSort] = useState<{ key: SortKey; asc: boolean }>({ key: 'since', asc: true });
  const live = useLive(undefined, () => (me.kind === 'user' ? client.attention.listAll() : Promise.resolve([])), [], { pollMs: 1000 });
  const sessions = useLive(undefined, () => client.sessions.listAll({ status: 'active' }), [], { pollMs: 10_000 });
  const value = (e: AttentionEntry) => (sort.key === 'since' ? e.since : sort.key === 'kind' ? KIND_LABEL[e.kind] : (e.session?.name ?? e.session?.id ?? ''));
  const rows = [...(live.data ?? [])].sort((a, b) => (sort.asc ? 1 : -1) * value(a).localeCompare(value(b)));
  const header = (key: SortKey, label: string) => (
    <th scope="col" aria-sort={sort.key === key ? (sort.asc ? 'ascending' : 'descending') : 'none'}>
      <button type="button" class="sort" onClick={() => setSort((s) => ({ key, asc: s.key === key ? !s.asc : true }))}>
        {label}
        {sort.key === key ? (sort.asc ? ' ▲' : ' ▼') : ''}
      </button>
    </th>
  );
  if (me.kind !== 'user') {
    return (
      <Section title="Attention">
        <p class="muted">The attention list is for operators. Your own claims are on your scope’s page.</p>
      </Section>
    );
  }
  return (
    <Section title="Attention">
      <p class="muted">What is stuck in your team, oldest first. Refreshed every second.</p>
      <ErrorNote error={live.error} />
      {!live.data ? (
        <Loading />
      ) : rows.length === 0 ? (
        <p class="muted">Nothing needs attention.</p>
      ) : (
        <table class="attention">
          <thead>
            <tr>
              {header('since', 'Since')}
              {header('kind', 'What')}
              <th scope="col">Item or session</th>
              {header('session', 'Session')}
              <th scope="col">Detail</th>
              <th scope="col">Next step</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((e) => (
              <AttentionRow key={`${e.kind}/${e.subjectId}`} e={e} sessions={sessions.data ?? []} onChanged={live.reload} />
            ))}
          </tbody>
        </table>
      )}
    </Section>
  );
}

function AttentionRow({ e, sessions, onChanged }: { e: AttentionEntry; sessions: Session[]; onChanged: () => void }) {
  const { client } = useSignedIn();
  const names = useNames();
  const [error, setError] = useState<string>();
  const [assigning, setAssigning] = useState(false);
  const run = async (fn: () => Promise<unknown>) => {
    setError(undefined);
    try {
      await fn();
      setAssigning(false);
      onChanged();
    } catch (err) {
      setError(errorText(err));
    }
  };
  const graphId = e.scope?.startsWith('graph:') ? e.scope.slice('graph:'.length) : undefined;
  const metagitId = e.scope?.startsWith('metagit:') ? e.scope.slice('metagit:'.length) : undefined;
  // Sessions that may take the item: active ones of the same list (its root's scope).
  const candidates = sessions.filter((s) => s.scope === e.scope && s.id !== e.session?.id);
  return (
    <tr data-kind={e.kind} data-subject={e.subjectId}>
      <td>
        <Time at={e.since} relative past />
      </td>
      <td>{KIND_LABEL[e.kind]}</td>
      <td class="col-subject">
        {e.kind === 'silent-holder' ? (
          <span title={e.subjectId}>{e.title}</span>
        ) : graphId ? (
          <a href={href('graph', graphId)} title={e.subjectId}>
            {e.title}
          </a>
        ) : metagitId ? (
          <a href={href('metagit', metagitId)} title={e.subjectId}>
            {e.title}
          </a>
        ) : (
          <a href={href('item', e.subjectId)} title={e.subjectId}>
            {e.title}
          </a>
        )}
        {e.scope && <div class="muted mono">{listName(e.scope, names) ?? e.scope}</div>}
      </td>
      <td>{e.session ? <span title={e.session.id}>{e.session.name ?? e.session.id}</span> : <span class="muted">—</span>}</td>
      <td class="col-detail">
        {e.detail ? (
          <span class="clamp" title={e.detail}>
            {e.detail}
          </span>
        ) : (
          <span class="muted">—</span>
        )}
      </td>
      <td class="col-actions">
        {e.actions.map((a) => {
          switch (a.action) {
            case 'reopen':
              return (
                <button
                  type="button"
                  class="secondary"
                  onClick={() =>
                    run(() =>
                      e.kind === 'metagit-node-blocked' && metagitId
                        ? client.metagit.reopen(metagitId, decodeURIComponent(a.path.split('/').at(-2)!))
                        : client.todos.reopen(e.subjectId),
                    )
                  }
                >
                  Reopen
                </button>
              );
            case 'stop':
              return (
                <button type="button" class="danger" onClick={() => run(() => client.sessions.stop(e.subjectId))}>
                  Stop {e.title}
                </button>
              );
            case 'resume':
              return (
                <button
                  type="button"
                  class="secondary"
                  onClick={() => run(() => client.graphs.resume(graphId!, String((a.body as { subtaskId: string }).subtaskId)))}
                >
                  Resume
                </button>
              );
            case 'assign':
              return assigning ? (
                <label>
                  Reassign to{' '}
                  <select
                    aria-label={`Reassign ${e.title}`}
                    onChange={(ev) => {
                      const v = (ev.target as HTMLSelectElement).value;
                      if (v) void run(() => client.todos.assign(e.subjectId, v === '-' ? null : v));
                    }}
                  >
                    <option value="">choose…</option>
                    <option value="-">nobody (unassigned)</option>
                    {candidates.map((s) => (
                      <option value={s.id}>{s.name}</option>
                    ))}
                  </select>
                </label>
              ) : (
                <button type="button" class="secondary" onClick={() => setAssigning(true)}>
                  Reassign…
                </button>
              );
          }
        })}
        {e.actions.length === 0 && <span class="muted">{e.kind === 'scenario-member-waiting' ? 'see what it waits on' : 'its contract recovers it'}</span>}
        <ErrorNote error={error} />
      </td>
    </tr>
  );
}
