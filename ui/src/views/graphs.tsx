/**
 * Task Graph v1 (seed 002): `#/graphs` lists the graphs the token may read; `#/graph/<id>` draws
 * one as a DAG (subtasks coloured by state, the planned wave marked) with Graph Preflight's plan:
 * the wave, capacity-deferred subtasks, write-intent conflicts with the pattern pair named, each
 * subtask's decision and reason; then recovery classifications, integration and review state and
 * the graph's events. Live on the graph's topic `todo:graph:<id>`.
 */
import { useMemo } from 'preact/hooks';
import type { CoordClient } from '../../../sdk/src/index.js';
import { useSignedIn } from '../api.js';
import { ErrorNote, EventList, Loading, Progress, Section, StatusBadge, Time } from '../components/common.js';
import { History, withLive } from '../history.js';
import { useLive } from '../live.js';
import { href } from '../router.js';
import { Dag, type DagNode } from './graph-dag.js';

export function GraphsView() {
  const { client } = useSignedIn();
  const live = useLive(undefined, () => client.graphs.listAll(), [], { pollMs: 5000 });
  return (
    <Section title="Task graphs">
      <p class="muted">Refreshed every 5 s; a graph’s own page is live.</p>
      <ErrorNote error={live.error} />
      {!live.data ? (
        <Loading />
      ) : live.data.length === 0 ? (
        <p class="muted">No task graphs you may read.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">Graph</th>
              <th scope="col">State</th>
              <th scope="col">Subtasks succeeded</th>
              <th scope="col">Max concurrency</th>
              <th scope="col">Updated</th>
            </tr>
          </thead>
          <tbody>
            {live.data.map((g) => {
              return (
                <tr key={g.id} data-id={g.id}>
                  <td>
                    <a class="clamp" href={href('graph', g.parentTaskId)} title={g.title}>
                      {g.title}
                    </a>
                    <div class="muted mono">{g.parentTaskId}</div>
                  </td>
                  <td>
                    <StatusBadge status={g.state} />
                  </td>
                  <td>
                    <Progress done={g.counts.succeeded} total={g.subtaskCount} />
                  </td>
                  <td>{g.maxConcurrency}</td>
                  <td>
                    <Time at={g.updatedAt} />
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </Section>
  );
}

async function loadGraph(client: CoordClient, id: string, hist: History) {
  const [graph, plan, past] = await Promise.all([client.graphs.get(id), client.graphs.plan(id), hist.read()]);
  return { graph, plan, past };
}

export function GraphView({ id }: { id: string }) {
  const { client } = useSignedIn();
  // The topic needs the graph's scope, which is `graph:<parentTaskId>`: the id in the route. Every
  // event of the topic is the graph's; each re-read fetches only the new ones.
  const topic = `todo:graph:${id}`;
  const hist = useMemo(() => new History(client, topic), [client, topic]);
  const live = useLive(topic, () => loadGraph(client, id, hist), [id]);
  if (!live.data) return live.error ? <ErrorNote error={live.error} /> : <Loading />;
  const { graph, plan, past } = live.data;
  const wave = new Set(plan.wave.selected);
  const conflictDeferred = new Set(plan.wave.conflictDeferred);
  const capacityLimited = new Set(plan.wave.capacityLimited);
  const nodes: DagNode[] = graph.subtasks.map((s) => ({
    id: s.subtaskId,
    title: s.title ?? s.subtaskId,
    state: s.state,
    dependsOn: s.dependsOn,
    plan: wave.has(s.subtaskId) ? 'wave' : conflictDeferred.has(s.subtaskId) ? 'conflict' : capacityLimited.has(s.subtaskId) ? 'capacity' : undefined,
    link: href('item', s.todoId),
  }));
  const decisions = new Map(plan.decisions.map((d) => [d.subtaskId, d]));
  const events = withLive(past, live.events);
  const integration = graph.integration as Record<string, unknown> | null | undefined;
  const review = graph.review as Record<string, unknown> | null | undefined;
  return (
    <div class="columns">
      <div>
        <Section title={`Task graph ${graph.parentTaskId}`} actions={<a href={href('scope', graph.scope)}>its items</a>}>
          <p class="graph-title clamp" title={graph.parentTask.title}>
            {graph.parentTask.title}
          </p>
          <ErrorNote error={live.error} />
          <p>
            <StatusBadge status={graph.state} /> {graph.reason ? <span class="why">{graph.reason}</span> : null} · max concurrency {graph.maxConcurrency} ·{' '}
            {plan.runningCount} running · {plan.availableSlots} free slot{plan.availableSlots === 1 ? '' : 's'}
            {graph.baseCommit ? (
              <>
                {' '}
                · base <code>{graph.baseCommit.slice(0, 12)}</code>
              </>
            ) : null}
          </p>
          <div class="graph-legend muted">Outline: thick = in the planned wave, dashed = deferred. Each node names its state.</div>
          <div class="graph-scroll">
            <Dag nodes={nodes} label={`Subtasks of ${graph.parentTaskId} and their dependencies`} />
          </div>
        </Section>
        <Section title="Plan (Graph Preflight)">
          <p>Wave: {plan.wave.selected.length ? plan.wave.selected.map((s) => <code key={s}>{s} </code>) : <span class="muted">nothing to run now</span>}</p>
          {plan.wave.capacityLimited.length > 0 && (
            <p>
              Deferred by capacity (maxConcurrency {graph.maxConcurrency}):{' '}
              {plan.wave.capacityLimited.map((s) => (
                <code key={s}>{s} </code>
              ))}
            </p>
          )}
          {plan.conflicts.length > 0 && (
            <>
              <h3>Write-intent conflicts</h3>
              <ul class="graph-conflicts">
                {plan.conflicts.map((c) => (
                  <li key={`${c.subtasks[0]}-${c.subtasks[1]}-${c.patterns[0].pattern}-${c.patterns[1].pattern}`}>
                    <code>{c.patterns[0].subtaskId}</code>: <code>{c.patterns[0].pattern}</code> overlaps <code>{c.patterns[1].subtaskId}</code>:{' '}
                    <code>{c.patterns[1].pattern}</code>
                    {c.conservative ? <span class="muted"> (conservative: cannot prove disjoint)</span> : null}
                    {conflictDeferred.has(c.subtasks[1]) ? (
                      <>
                        {' '}
                        — <strong>{c.subtasks[1]}</strong> deferred
                      </>
                    ) : conflictDeferred.has(c.subtasks[0]) ? (
                      <>
                        {' '}
                        — <strong>{c.subtasks[0]}</strong> deferred
                      </>
                    ) : null}
                  </li>
                ))}
              </ul>
            </>
          )}
          <table>
            <caption>Subtasks</caption>
            <thead>
              <tr>
                <th scope="col">Subtask</th>
                <th scope="col">State</th>
                <th scope="col">Implementer</th>
                <th scope="col">Depends on</th>
                <th scope="col">Decision</th>
                <th scope="col">Reason</th>
              </tr>
            </thead>
            <tbody>
              {graph.subtasks.map((s) => {
                const d = decisions.get(s.subtaskId);
                return (
                  <tr key={s.subtaskId} data-subtask={s.subtaskId}>
                    <td>
                      <a href={href('item', s.todoId)}>{s.subtaskId}</a>
                      <div class="muted clamp" title={s.title}>
                        {s.title}
                      </div>
                    </td>
                    <td>
                      <StatusBadge status={s.state} />
                      {s.reason ? <div class={s.state === 'FAILED' || s.state === 'BLOCKED' ? 'why' : 'muted'}>{s.reason}</div> : null}
                    </td>
                    <td class="mono">{s.implementer}</td>
                    <td class="mono">{s.dependsOn.join(', ') || '—'}</td>
                    <td>{d?.decision ?? '—'}</td>
                    <td>{d?.reason ?? '—'}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </Section>
        {graph.recovery.length > 0 && (
          <Section title="Recovery">
            <table>
              <thead>
                <tr>
                  <th scope="col">Subtask</th>
                  <th scope="col">State</th>
                  <th scope="col">Classification</th>
                  <th scope="col">Recoverable</th>
                  <th scope="col">Action</th>
                  <th scope="col">Reason</th>
                </tr>
              </thead>
              <tbody>
                {graph.recovery.map((r) => (
                  <tr key={r.subtaskId}>
                    <td class="mono">{r.subtaskId}</td>
                    <td>
                      <StatusBadge status={r.state} />
                    </td>
                    <td>{r.classification}</td>
                    <td>{r.recoverable ? 'yes' : 'no'}</td>
                    <td>{r.action ?? '—'}</td>
                    <td>{r.reason ?? '—'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </Section>
        )}
        <Section title="Integration and review">
          <dl class="facts">
            <dt>Integration</dt>
            <dd>{integration ? <code>{summarise(integration)}</code> : <span class="muted">not recorded</span>}</dd>
            <dt>Review</dt>
            <dd>{review ? <code>{summarise(review)}</code> : <span class="muted">no decision</span>}</dd>
          </dl>
        </Section>
      </div>
      <aside>
        <Section title="Events">
          <EventList events={events} empty="No retained events for this graph." />
        </Section>
      </aside>
    </div>
  );
}

/** The scalar fields of a record, as `key value · key value`. */
function summarise(o: Record<string, unknown>): string {
  return Object.entries(o)
    .filter(([, v]) => v !== null && v !== undefined && typeof v !== 'object')
    .map(([k, v]) => `${k} ${String(v)}`)
    .join(' · ');
}
