/**
 * What a session holds: its in-progress items whose claim is still its own, for `GET /v1/sessions`
 * and `GET /v1/sessions/{id}`. A free claim (its lease expired in a scope whose expired claims are
 * taken over: `freeClaimSql`) is not held: every read shows it `todo` without an owner, and the
 * next `claim`/`next` takes it, so counting it would say a session holds what it no longer does. Bounded so a session holding thousands stays cheap to list: the exact
 * count plus the {@link HOLDING_SHOWN} longest-held items (oldest claim first), each with the time
 * its claim began (`since` = `todos.claimed_at`, kept by a trigger, migration 0012). Two
 * statements per page of sessions, both on the owner index: a grouped count, and a lateral
 * top-N per session.
 */
import type { Db } from '../db/client.js';
import { heldSql } from '../todos/todos.view.js';

/** How many held items each session lists (the count is always exact). */
export const HOLDING_SHOWN = 5;

export interface HeldItem {
  id: string;
  scope: string;
  title: string;
  /** When this claim began (ISO 8601, database clock). */
  since: string;
}

export interface Holding {
  /** In-progress items the session owns, all of them. */
  count: number;
  /** The first {@link HOLDING_SHOWN} of them, longest held first. */
  items: HeldItem[];
}

/**
 * Per session id: its holding (`{count: 0, items: []}` for a session holding nothing). `leaseMs`
 * is `claim_lease` in ms (0: no lease, every claim is held until released).
 */
export async function holdingFor(db: Db, ids: readonly string[], leaseMs: number): Promise<Map<string, Holding>> {
  const out = new Map<string, Holding>(ids.map((id) => [id, { count: 0, items: [] }]));
  if (ids.length === 0) return out;
  const [counts, items] = await Promise.all([
    db<{ owner: string; n: number }[]>`
      select t.owner, count(*)::int as n from todos t
       where t.owner = any(${[...ids]}::text[]) and ${heldSql(db, leaseMs)} group by t.owner`,
    db<{ owner: string; id: string; scope: string; title: string; since: Date | null }[]>`
      select o.id as owner, h.id, h.scope, h.title, h.since
        from unnest(${[...ids]}::text[]) as o(id)
        cross join lateral (
          select t.id, t.scope, t.title, coalesce(t.claimed_at, t.progress_at, t.updated_at) as since from todos t
           where t.owner = o.id and ${heldSql(db, leaseMs)}
           order by since, t.id limit ${HOLDING_SHOWN}) h
       order by o.id, h.since, h.id`,
  ]);
  for (const c of counts) out.get(c.owner)!.count = c.n;
  for (const r of items) out.get(r.owner)!.items.push({ id: r.id, scope: r.scope, title: r.title, since: (r.since ?? new Date(0)).toISOString() });
  return out;
}
