/**
 * `#/scope/<scope>`: a scope's items grouped by status (in progress, ready, waiting on
 * dependencies, blocked by their owner, done) with owner and assignee by name, tags, lease
 * deadline and WHY BLOCKED, filterable, live on `todo:<scope>`.
 *
 * Operator actions follow the API's authority rules (seed 000 "Authority"), so a button is shown
 * only when the request would be allowed: reopen (an owned item: in progress, blocked or done) and
 * block with a note (in progress) for the owner or the override authority; assign for the override
 * authority (the subtree root, the scenario orchestrator, or a user). Items of `graph:` and
 * `metagit:` scopes get none: they change only through their graph's routes. The API still
 * decides; a refusal is shown as it comes.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { TodoItem } from '../../../sdk/src/index.js';
import { errorText, useSignedIn } from '../api.js';
import { ErrorNote, LiveEvents, Loading, Section, StatusBadge, Time } from '../components/common.js';
import { useLive } from '../live.js';
import { listName, useNames } from '../names.js';
import { href } from '../router.js';

type Group = 'in-progress' | 'ready' | 'waiting' | 'blocked' | 'done';
const GROUPS: [Group, string][] = [
  ['in-progress', 'In progress'],
  ['ready', 'Ready'],
  ['waiting', 'Waiting on dependencies'],
  ['blocked', 'Blocked by their owner'],
  ['done', 'Done'],
];

/** The group of an item: a dependency wait and an owner's block are told apart (the effective status reads `blocked` for both). */
function groupOf(t: TodoItem): Group {
  if (t.status === 'done') return 'done';
  if (t.status === 'in-progress') return 'in-progress';
  if (t.blockedBy?.length) return 'waiting';
  if (t.status === 'blocked') return 'blocked';
  return t.ready ? 'ready' : 'waiting';
}

/** Whether a scope's items are Task Graph v1 subtasks or metagit nodes (assertNotGraphManaged in src/todos). */
export function managedByGraph(scope: string): boolean {
  return scope.startsWith('graph:') || scope.startsWith('metagit:');
}

function matches(t: TodoItem, q: string, names: Map<string, string>): boolean {
  if (!q) return true;
  const s = q.toLowerCase();
  const who = [t.owner, t.assignee].flatMap((id) => (id ? [id, names.get(id) ?? ''] : []));
  return [t.id, t.title, ...who, ...(t.tags ?? [])].some((v) => v.toLowerCase().includes(s));
}

type SortKey = 'position' | 'priority' | 'age' | 'owner' | 'status';
const SORTS: [SortKey, string][] = [
  ['position', 'list order'],
  ['priority', 'priority (highest first)'],
  ['age', 'age (oldest change first)'],
  ['owner', 'owner'],
  ['status', 'status'],
];

/** A comparator for `key` (ties in list order); owners compare by name. */
function comparator(key: SortKey, names: Map<string, string>): (a: TodoItem, b: TodoItem) => number {
  const byPosition = (a: TodoItem, b: TodoItem) => a.position - b.position || a.id.localeCompare(b.id);
  const who = (t: TodoItem) => (t.owner ? (names.get(t.owner) ?? t.owner) : '\uffff');
  const first: Record<SortKey, (a: TodoItem, b: TodoItem) => number> = {
    position: () => 0,
    priority: (a, b) => b.priority - a.priority,
    age: (a, b) => a.updatedAt.localeCompare(b.updatedAt),
    owner: (a, b) => who(a).localeCompare(who(b)),
    status: (a, b) => a.status.localeCompare(b.status),
  };
  return (a, b) => first[key](a, b) || byPosition(a, b);
}

/** A session by name, its id on hover (an id the token cannot list, such as an Agent's, as it is). */
function Who({ id, names }: { id: string | null | undefined; names: Map<string, string> }) {
  if (!id) return <span class="muted">—</span>;
  const name = names.get(id);
  return name ? <span title={id}>{name}</span> : <span class="mono">{id}</span>;
}

export function ScopeView({ scope }: { scope: string }) {
  const { client, me } = useSignedIn();
  const [q, setQ] = useState('');
  const [sort, setSort] = useState<SortKey>('position');
  const [shown, setShown] = useState<Record<Group, boolean>>({ 'in-progress': true, ready: true, waiting: true, blocked: true, done: true });
  const names = useNames();
  const title = listName(scope, names);
  const live = useLive(`todo:${scope}`, async () => {
    const [items, scopes] = await Promise.all([client.todos.listAll({ scope }), me.kind === 'user' ? Promise.resolve([]) : client.scopes.listAll()]);
    const canonical = items[0]?.scope ?? scope;
    const override = me.kind === 'user' || !!scopes.find((s) => s.scope === canonical)?.override;
    return { items, override };
  }, [scope]);
  const items = live.data?.items ?? [];
  const visible = items.filter((t) => matches(t, q, names)).sort(comparator(sort, names));
  const byId = new Map(items.map((t) => [t.id, t]));
  return (
    <div class="columns">
      <div>
        <Section
          title={
            scope.startsWith('session:') && names.has(scope.slice('session:'.length)) ? `${names.get(scope.slice('session:'.length))}’s list` : `Scope ${scope}`
          }
          actions={<a href={href('scopes')}>all scopes</a>}
        >
          {title && <p class="muted mono">{scope}</p>}
          <div class="filters" role="group" aria-label="Filters">
            <label>
              Filter <input type="search" value={q} placeholder="title, tag, owner, id" onInput={(e) => setQ((e.target as HTMLInputElement).value)} />
            </label>
            <label>
              Sort by{' '}
              <select value={sort} onChange={(e) => setSort((e.target as HTMLSelectElement).value as SortKey)}>
                {SORTS.map(([k, label]) => (
                  <option value={k}>{label}</option>
                ))}
              </select>
            </label>
            {GROUPS.map(([g, label]) => (
              <label key={g}>
                <input type="checkbox" checked={shown[g]} onChange={(e) => setShown({ ...shown, [g]: (e.target as HTMLInputElement).checked })} /> {label}
              </label>
            ))}
          </div>
          <ErrorNote error={live.error} />
          {!live.data ? (
            live.error ? null : (
              <Loading />
            )
          ) : items.length === 0 ? (
            <p class="muted">No items in this scope.</p>
          ) : (
            GROUPS.filter(([g]) => shown[g]).map(([g, plain]) => {
              // A graph contract's blocked rows are its subtasks' or nodes' outcomes, not an owner's block.
              const label = g === 'blocked' && managedByGraph(scope) ? 'Blocked, failed or stopped (see the graph)' : plain;
              const rows = visible.filter((t) => groupOf(t) === g);
              if (rows.length === 0)
                return (
                  <p key={g} class={`items items-${g} muted`}>
                    <strong>{label}</strong>: none{q ? ' matching the filter' : ''}.
                  </p>
                );
              return (
                <table key={g} class={`items items-${g}`}>
                  <caption>
                    {label} ({rows.length})
                  </caption>
                  <thead>
                    <tr>
                      <th scope="col">Item</th>
                      <th scope="col">Status</th>
                      <th scope="col">Owner</th>
                      <th scope="col">Assignee</th>
                      <th scope="col">Tags</th>
                      <th scope="col">Lease</th>
                      <th scope="col">Why blocked</th>
                      <th scope="col">Actions</th>
                    </tr>
                  </thead>
                  <tbody>
                    {rows.map((t) => (
                      <ItemRow key={t.id} t={t} byId={byId} names={names} override={live.data!.override} onChanged={live.reload} />
                    ))}
                  </tbody>
                </table>
              );
            })
          )}
        </Section>
      </div>
      <LiveEvents events={live.events} />
    </div>
  );
}

function ItemRow({
  t,
  byId,
  names,
  override,
  onChanged,
}: {
  t: TodoItem;
  byId: Map<string, TodoItem>;
  names: Map<string, string>;
  override: boolean;
  onChanged: () => void;
}) {
  const { client, me } = useSignedIn();
  const [error, setError] = useState<string>();
  const [mode, setMode] = useState<'none' | 'block' | 'assign'>('none');
  const [text, setText] = useState('');
  // Keyboard users: an opened form's field takes focus; Escape (or Cancel) closes it and gives
  // focus back to the button that opened it.
  const field = useRef<HTMLInputElement>(null);
  const opener = { block: useRef<HTMLButtonElement>(null), assign: useRef<HTMLButtonElement>(null) };
  const reopenFocus = useRef<'block' | 'assign' | null>(null);
  useEffect(() => {
    if (mode !== 'none') field.current?.focus();
    else if (reopenFocus.current) opener[reopenFocus.current].current?.focus();
    reopenFocus.current = null;
  }, [mode]);
  const cancel = () => {
    reopenFocus.current = mode === 'none' ? null : mode;
    setMode('none');
    setText('');
  };
  const onFormKey = (e: KeyboardEvent) => {
    if (e.key === 'Escape') {
      e.preventDefault();
      cancel();
    }
  };
  const mine = !!t.owner && t.owner === me.id;
  // Items of graph: and metagit: scopes move only through their graph's routes: the todo routes
  // refuse reopen, block and assign there (409 managed_by_graph), so none is offered.
  const may = !managedByGraph(t.scope) && (override || mine);
  const canReopen = may && !!t.owner && t.status !== 'todo';
  const canBlock = may && t.status === 'in-progress';
  const canAssign = may && override && t.status !== 'done';
  const act = async (f: () => Promise<unknown>) => {
    setError(undefined);
    try {
      await f();
      setMode('none');
      setText('');
      onChanged();
    } catch (err) {
      setError(errorText(err));
    }
  };
  // Waiting on dependencies: name them by title; an owner's block: the API's reason (its note).
  const why = t.blockedBy?.length ? `waiting on ${t.blockedBy.map((id) => byId.get(id)?.title ?? id).join(', ')}` : (t.whyBlocked ?? null);
  return (
    <tr data-id={t.id}>
      <td class="col-title">
        <a class="clamp" href={href('item', t.id)} title={t.title}>
          {t.title}
        </a>
        <div class="muted mono">
          {t.id}
          {t.parentId ? ` · sub-item of ${t.parentId}` : ''}
          {t.priority ? ` · priority ${t.priority}` : ''}
        </div>
      </td>
      <td class="col-status">
        <StatusBadge status={t.status} />
      </td>
      <td class="col-owner">
        <Who id={t.owner} names={names} />
      </td>
      <td class="col-assignee">
        <Who id={t.assignee} names={names} />
      </td>
      <td class="col-tags">
        {(t.tags ?? []).map((g) => (
          <span class="tag" key={g} title={g}>
            {g}
          </span>
        ))}
      </td>
      <td class="col-lease">
        {t.leaseExpiresAt ? <Time at={t.leaseExpiresAt} relative /> : <span class="muted">—</span>}
        {t.leaseExpired ? <span class="why"> expired</span> : null}
      </td>
      <td class="col-why">
        {why ? (
          <span class="why clamp" title={why}>
            {why}
          </span>
        ) : t.status === 'blocked' && t.note ? (
          <span class="why clamp" title={t.note}>
            {t.note}
          </span>
        ) : (
          <span class="muted">—</span>
        )}
      </td>
      <td class="col-actions">
        <div class="actions">
          {canReopen && (
            <button type="button" class="secondary" onClick={() => void act(() => client.todos.reopen(t.id))} aria-label={`Reopen ${t.title}`}>
              Reopen
            </button>
          )}
          {canBlock && mode !== 'block' && (
            <button type="button" class="secondary" ref={opener.block} onClick={() => setMode('block')} aria-label={`Block ${t.title}`}>
              Block…
            </button>
          )}
          {canAssign && mode !== 'assign' && (
            <button type="button" class="secondary" ref={opener.assign} onClick={() => setMode('assign')} aria-label={`Assign ${t.title}`}>
              Assign…
            </button>
          )}
        </div>
        {mode === 'block' && (
          <form
            class="actions"
            onKeyDown={onFormKey}
            onSubmit={(e) => {
              e.preventDefault();
              void act(() => client.todos.block(t.id, text || undefined));
            }}
          >
            <label>
              Note <input ref={field} value={text} onInput={(e) => setText((e.target as HTMLInputElement).value)} aria-label={`Block note for ${t.title}`} />
            </label>
            <button type="submit">Block</button>
            <button type="button" class="secondary" onClick={cancel}>
              Cancel
            </button>
          </form>
        )}
        {mode === 'assign' && (
          <form
            class="actions"
            onKeyDown={onFormKey}
            onSubmit={(e) => {
              e.preventDefault();
              void act(() => client.todos.assign(t.id, text.trim() || null));
            }}
          >
            <label>
              Session{' '}
              <input
                ref={field}
                value={text}
                placeholder="s-… (empty: unassign)"
                onInput={(e) => setText((e.target as HTMLInputElement).value)}
                aria-label={`Assignee for ${t.title}`}
              />
            </label>
            <button type="submit">{text.trim() ? 'Assign' : 'Unassign'}</button>
            <button type="button" class="secondary" onClick={cancel}>
              Cancel
            </button>
          </form>
        )}
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
      </td>
    </tr>
  );
}
