/** Small pieces every view shares: status badges, times, errors, event histories. */
import type { ComponentChildren } from 'preact';
import type { CoordEvent } from '../../../sdk/src/index.js';
import { errorText } from '../api.js';
import { useNames } from '../names.js';

/** A status as a labelled badge (colour is never the only signal: the text is always there). */
export function StatusBadge({ status }: { status: string }) {
  return <span class={`badge status-${status.replace(/[^a-zA-Z0-9_-]/g, '')}`}>{status}</span>;
}

/**
 * An ISO time as a local time with the full value in a tooltip; `relative` adds "in 3m" / "5s ago"
 * ("just now" within a second). `past`: a time that cannot be in the future (last seen, held
 * since), so one a little ahead of this browser's clock (skew) reads "just now", not "in 2s".
 */
export function Time({ at, relative, past }: { at?: string | null; relative?: boolean; past?: boolean }) {
  if (!at) return <span class="muted">—</span>;
  const d = new Date(at);
  const text = relative ? relativeTime(past ? new Date(Math.min(d.getTime(), Date.now())) : d) : d.toLocaleTimeString();
  return (
    <time dateTime={at} title={d.toLocaleString()}>
      {text}
    </time>
  );
}

export function relativeTime(d: Date, now = Date.now()): string {
  const s = Math.round((d.getTime() - now) / 1000);
  const a = Math.abs(s);
  if (a < 1) return 'just now';
  const v = a < 60 ? `${a}s` : a < 3600 ? `${Math.round(a / 60)}m` : a < 86400 ? `${Math.round(a / 3600)}h` : `${Math.round(a / 86400)}d`;
  return s >= 0 ? `in ${v}` : `${v} ago`;
}

export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  return (
    <p class="error" role="alert">
      {errorText(error)}
    </p>
  );
}

export function Loading() {
  return (
    <p class="muted" aria-busy="true">
      Loading…
    </p>
  );
}

/** A page section with a heading. */
export function Section({ title, children, actions }: { title: string; children: ComponentChildren; actions?: ComponentChildren }) {
  return (
    <section aria-label={title}>
      <div class="section-head">
        <h2>{title}</h2>
        {actions}
      </div>
      {children}
    </section>
  );
}

/** done/total as a bar with the numbers in text. */
export function Progress({ done, total }: { done: number; total: number }) {
  const pct = total === 0 ? 0 : Math.round((done / total) * 100);
  return (
    <span class="progress">
      <span class="bar" role="progressbar" aria-valuemin={0} aria-valuemax={total} aria-valuenow={done} aria-label={`${done} of ${total} done`}>
        <span style={{ width: `${pct}%` }} />
      </span>
      <span class="num">
        {done}/{total}
      </span>
    </span>
  );
}

/** A short line describing an event's payload (what changed, by whom, why). */
export function eventSummary(e: CoordEvent, names: Map<string, string> = new Map()): string {
  const d = e.data as Record<string, unknown>;
  const bits: string[] = [];
  for (const k of ['id', 'subtaskId', 'nodeId', 'status', 'owner', 'assignee', 'reason', 'formerOwner', 'note', 'member', 'wave']) {
    const v = d[k];
    if (v === undefined || v === null || v === '' || typeof v === 'object') continue;
    // Sessions by name (owner, assignee, former owner), when the token may list them.
    const who = (k === 'owner' || k === 'assignee' || k === 'formerOwner') && names.get(String(v));
    bits.push(`${k} ${who || String(v)}`);
  }
  return bits.join(' · ');
}

/** Who made the change an event records (the audit): `<id>` and the token's name when not `default`. */
function actorOf(e: CoordEvent, names: Map<string, string>): string | undefined {
  const a = e.data.actor as { id?: string; token?: string | null } | null | undefined;
  if (!a?.id) return undefined;
  const who = names.get(a.id) ?? a.id;
  return a.token && a.token !== 'default' ? `${who} (${a.token})` : who;
}

/** An event history, newest first. */
export function EventList({ events, empty }: { events: CoordEvent[]; empty?: string }) {
  const names = useNames();
  if (events.length === 0) return <p class="muted">{empty ?? 'No events yet.'}</p>;
  return (
    <ol class="events" aria-label="events">
      {events.map((e) => (
        <li key={`${e.seq}-${e.event}`} data-seq={e.seq}>
          <span class="seq">#{e.seq}</span> <Time at={typeof e.data.at === 'string' ? e.data.at : undefined} /> <strong class="ev">{e.event}</strong>{' '}
          <span class="muted">{eventSummary(e, names)}</span>
          {actorOf(e, names) ? <span class="muted"> · by {actorOf(e, names)}</span> : null}
        </li>
      ))}
    </ol>
  );
}

/** The aside of a live view: the events received on its stream since the page opened. */
export function LiveEvents({ events }: { events: CoordEvent[] }) {
  return (
    <aside>
      <Section title="Live events">
        <EventList events={events} empty="No events since this page opened." />
      </Section>
    </aside>
  );
}
