/**
 * `#/item/<id>`: one item, its readiness and dependencies, and its whole event history: every
 * retained event of its scope's topic about it (`GET /v1/events/log?subjectId=<id>`), then live ones.
 */
import { useEffect, useMemo, useState } from 'preact/hooks';
import type { CoordEvent, TodoItem } from '../../../sdk/src/index.js';
import { useSignedIn } from '../api.js';
import { History, withLive } from '../history.js';
import { ErrorNote, EventList, Loading, Section, StatusBadge, Time } from '../components/common.js';
import { useLive } from '../live.js';
import { href } from '../router.js';

export function ItemView({ id }: { id: string }) {
  const { client } = useSignedIn();
  const [scope, setScope] = useState<string>();
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    setScope(undefined);
    setError(undefined);
    client.todos.get(id).then((t) => setScope(t.scope), setError);
  }, [id]);
  if (error) return <ErrorNote error={error} />;
  if (!scope) return <Loading />;
  return <ItemLive id={id} scope={scope} />;
}

function ItemLive({ id, scope }: { id: string; scope: string }) {
  const { client } = useSignedIn();
  const topic = `todo:${scope}`;
  const about = (e: CoordEvent) => e.data.id === id || e.data.subjectId === id;
  const hist = useMemo(() => new History(client, topic, id), [client, topic, id]);
  const live = useLive(topic, async () => {
    const [item, readiness, deps, past] = await Promise.all([
      client.todos.get(id),
      client.todos.readiness(id),
      client.todos.dependencyResults(id),
      hist.read(),
    ]);
    return { item, readiness, deps, past };
  }, [id]);
  if (!live.data) return live.error ? <ErrorNote error={live.error} /> : <Loading />;
  const { item, readiness, deps, past } = live.data;
  const events = withLive(past, live.events.filter(about));
  return (
    <div class="columns">
      <div>
        <Section title={item.title} actions={<a href={href('scope', item.scope)}>scope {item.scope}</a>}>
          <ErrorNote error={live.error} />
          <Facts item={item} />
          {item.note && (
            <>
              <h3>Note</h3>
              <p>{item.note}</p>
            </>
          )}
          <h3>Readiness</h3>
          <p>{readiness.ready ? 'Ready to claim.' : <span class="why">{readinessText(readiness)}</span>}</p>
          {deps.dependencies.length > 0 && (
            <table>
              <caption>Dependencies</caption>
              <thead>
                <tr>
                  <th scope="col">Item</th>
                  <th scope="col">Status</th>
                  <th scope="col">Result</th>
                </tr>
              </thead>
              <tbody>
                {deps.dependencies.map((d) => (
                  <tr key={d.id}>
                    <td>
                      <a href={href('item', d.id)}>{d.title ?? d.id}</a>
                    </td>
                    <td>
                      <StatusBadge status={d.status} />
                    </td>
                    <td class="mono">
                      {d.result === undefined || d.result === null ? '—' : typeof d.result === 'string' ? d.result : JSON.stringify(d.result)}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </Section>
      </div>
      <aside>
        <Section title="History">
          <EventList events={events} empty="No retained events about this item." />
        </Section>
      </aside>
    </div>
  );
}

function readinessText(r: { ready: boolean; reason?: string; blockedBy?: string[] } & Record<string, unknown>): string {
  const parts = [r.reason ? String(r.reason) : 'Not ready'];
  if (r.blockedBy?.length) parts.push(`waiting on ${r.blockedBy.join(', ')}`);
  return parts.join(': ');
}

function Facts({ item }: { item: TodoItem }) {
  return (
    <dl class="facts">
      <dt>Status</dt>
      <dd>
        <StatusBadge status={item.status} />
      </dd>
      <dt>Id</dt>
      <dd class="mono">{item.id}</dd>
      <dt>Owner</dt>
      <dd class="mono">{item.owner ?? '—'}</dd>
      <dt>Assignee</dt>
      <dd class="mono">{item.assignee ?? '—'}</dd>
      <dt>Priority</dt>
      <dd>{item.priority}</dd>
      <dt>Tags</dt>
      <dd>{item.tags?.length ? item.tags.join(', ') : '—'}</dd>
      <dt>Lease</dt>
      <dd>{item.leaseExpiresAt ? <Time at={item.leaseExpiresAt} relative /> : '—'}</dd>
      <dt>Why blocked</dt>
      <dd class={item.whyBlocked ? 'why' : ''}>{item.whyBlocked ?? '—'}</dd>
      <dt>Created</dt>
      <dd>
        <Time at={item.createdAt} /> by <span class="mono">{item.createdBy}</span>
      </dd>
      <dt>Updated</dt>
      <dd>
        <Time at={item.updatedAt} />
      </dd>
      {item.result !== undefined && item.result !== null && (
        <>
          <dt>Result</dt>
          <dd class="mono">{typeof item.result === 'string' ? item.result : JSON.stringify(item.result)}</dd>
        </>
      )}
    </dl>
  );
}
