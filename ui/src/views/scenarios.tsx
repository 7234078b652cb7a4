/**
 * Scenarios (seed 000 "In scenarios"): `#/scenarios` lists those the token may read with scope-wide
 * done/total and derived completion; `#/scenario/<name>` shows each member's done/total, WAITING ON
 * (upstream members whose seed is not done), the seed's status and whether a required result is
 * published, live on the scenario's topic, with its event history.
 */
import { useMemo } from 'preact/hooks';
import type { CoordClient } from '../../../sdk/src/index.js';
import { useSignedIn } from '../api.js';
import { ErrorNote, EventList, Loading, Progress, Section, StatusBadge } from '../components/common.js';
import { History, withLive } from '../history.js';
import { useLive } from '../live.js';
import { href } from '../router.js';

export function ScenariosView() {
  const { client } = useSignedIn();
  const live = useLive(undefined, () => client.scenarios.listAll(), [], { pollMs: 5000 });
  return (
    <Section title="Scenarios">
      <p class="muted">Refreshed every 5 s; a scenario’s own page is live.</p>
      <ErrorNote error={live.error} />
      {!live.data ? (
        <Loading />
      ) : live.data.length === 0 ? (
        <p class="muted">No scenarios you may read.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">Scenario</th>
              <th scope="col">Done</th>
              <th scope="col">Complete</th>
              <th scope="col">Members</th>
            </tr>
          </thead>
          <tbody>
            {live.data.map((s) => (
              <tr key={s.id} data-id={s.id}>
                <td>
                  <a href={href('scenario', s.name)}>{s.name}</a>
                  <div class="muted mono">{s.scope}</div>
                </td>
                <td>
                  <Progress done={s.done} total={s.total} />
                </td>
                <td>{s.complete ? 'yes' : 'no'}</td>
                <td>{s.members}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Section>
  );
}

async function loadScenario(client: CoordClient, name: string, hist: History) {
  const [status, past] = await Promise.all([client.scenarios.status(name), hist.read()]);
  return { status, past };
}

export function ScenarioView({ name }: { name: string }) {
  const { client } = useSignedIn();
  // The topic takes the scenario's name as well as its id (`todo:scenario:<name>`), the log too.
  const topic = `todo:scenario:${name}`;
  const hist = useMemo(() => new History(client, topic), [client, topic]);
  const live = useLive(topic, () => loadScenario(client, name, hist), [name]);
  if (!live.data) return live.error ? <ErrorNote error={live.error} /> : <Loading />;
  const { status, past } = live.data;
  const events = withLive(past, live.events);
  return (
    <div class="columns">
      <div>
        <Section title={`Scenario ${status.scenario.name}`} actions={<a href={href('scope', status.scenario.scope)}>its items</a>}>
          <ErrorNote error={live.error} />
          <p>
            <Progress done={status.done} total={status.total} /> {status.complete ? <strong>complete</strong> : <span>not complete</span>} · orchestrator{' '}
            <span class="mono">{status.scenario.orchestratorId}</span>
          </p>
          <table>
            <thead>
              <tr>
                <th scope="col">Member</th>
                <th scope="col">Done</th>
                <th scope="col">Seed</th>
                <th scope="col">Waiting on</th>
                <th scope="col">Result</th>
                <th scope="col">Complete</th>
              </tr>
            </thead>
            <tbody>
              {status.members.map((m) => (
                <tr key={m.name} data-member={m.name}>
                  <td>
                    <strong>{m.name}</strong>
                    <div class="muted mono">{m.sessionId}</div>
                  </td>
                  <td>{m.progress}</td>
                  <td>
                    {m.seedId ? (
                      <a href={href('item', m.seedId)}>
                        <StatusBadge status={m.seedStatus ?? 'todo'} />
                      </a>
                    ) : (
                      <span class="muted">no task</span>
                    )}
                    {m.blockNote && <div class="why member-block-note">blocked: {m.blockNote}</div>}
                  </td>
                  <td class="col-waiting">
                    {m.waitingOn.length ? <span class="why">WAITING ON {m.waitingOn.join(', ')}</span> : <span class="muted">—</span>}
                  </td>
                  <td>
                    {m.requiresResult ? m.resultPublished ? 'published' : <span class="why">required, not published</span> : <span class="muted">—</span>}
                  </td>
                  <td>{m.tracked ? m.complete ? 'yes' : 'no' : <span class="muted">not tracked</span>}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Section>
      </div>
      <aside>
        <Section title="Events">
          <EventList events={events} empty="No retained events for this scenario." />
        </Section>
      </aside>
    </div>
  );
}
