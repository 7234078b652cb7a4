/**
 * `#/metagit/<graphId>`: a metagit graph (seed 001) drawn as a DAG with its nodes' statuses, and a
 * table of the same facts: status, what a pending node waits on, the blocker's reason, the owner
 * by name (the id on hover), project and repository. Live on the graph's topic
 * (`todo:metagit:<graphId>`). Read-only: a node changes through the metagit routes (`coord task …`).
 */
import type { MetagitNode } from '../../../sdk/src/index.js';
import { useSignedIn } from '../api.js';
import { ErrorNote, LiveEvents, Loading, Section, StatusBadge } from '../components/common.js';
import { useLive } from '../live.js';
import { useNames } from '../names.js';
import { href } from '../router.js';
import { Dag } from './graph-dag.js';

export function MetagitView({ id }: { id: string }) {
  const { client } = useSignedIn();
  const live = useLive(`todo:metagit:${id}`, () => client.metagit.get(id), [id]);
  const g = live.data;
  const names = useNames();
  const who = (owner: string | null) => (owner ? <span title={owner}>{names.get(owner) ?? owner}</span> : <span class="muted">—</span>);
  return (
    <div class="columns">
      <div>
        <Section title={`Metagit graph ${id}`} actions={<a href={href('scopes')}>all scopes</a>}>
          <ErrorNote error={live.error} />
          {!g ? (
            live.error ? null : (
              <Loading />
            )
          ) : (
            <>
              <p>
                <strong>{g.title}</strong> <StatusBadge status={g.status} />{' '}
                <span class="muted">
                  {Object.entries(g.counts)
                    .filter(([, n]) => n > 0)
                    .map(([k, n]) => `${n} ${k}`)
                    .join(' · ')}
                </span>{' '}
                <a href={href('scope', g.scope)}>its items</a>
              </p>
              <div class="graph-scroll">
                <Dag
                  label={`metagit graph ${id}`}
                  nodes={g.nodes.map((n) => ({ id: n.nodeId, title: n.title, state: n.status, dependsOn: n.dependsOn, link: href('item', n.todoId) }))}
                />
              </div>
              <table class="metagit-nodes">
                <thead>
                  <tr>
                    <th scope="col">Node</th>
                    <th scope="col">Status</th>
                    <th scope="col">Waiting on / reason</th>
                    <th scope="col">Owner</th>
                    <th scope="col">Project / repository</th>
                  </tr>
                </thead>
                <tbody>
                  {g.nodes.map((n: MetagitNode) => (
                    <tr key={n.nodeId} data-node={n.nodeId}>
                      <td>
                        <a href={href('item', n.todoId)}>{n.title}</a>
                        <div class="muted mono">{n.nodeId}</div>
                      </td>
                      <td>
                        <StatusBadge status={n.status} />
                      </td>
                      <td>
                        {n.waitingOn.length ? `waiting on ${n.waitingOn.map((w) => `${w.nodeId} (${w.status})`).join(', ')}` : ''}
                        {n.blockerReason ? <div>{n.blockerReason}</div> : null}
                        {!n.waitingOn.length && !n.blockerReason ? <span class="muted">—</span> : null}
                      </td>
                      <td class="nowrap">{who(n.owner)}</td>
                      <td>{[n.project, n.repository].filter(Boolean).join(' / ') || <span class="muted">—</span>}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </>
          )}
        </Section>
      </div>
      <LiveEvents events={live.events} />
    </div>
  );
}
