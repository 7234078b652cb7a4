/**
 * A session's subtree (itself and every descendant over `parent_id`, whatever their status), for
 * stopping it in one transaction. Parents never change, so the walk cannot loop.
 */
import type { Db } from '../db/client.js';

/** The ids of `id`'s subtree, `id` included, unlocked. */
export async function subtreeIds(db: Db, id: string): Promise<string[]> {
  const rows = await db<{ id: string }[]>`
    with recursive down(id) as (
      select id from sessions where id = ${id}
      union select s.id from sessions s join down on s.parent_id = down.id)
    select id from down`;
  return rows.map((r) => r.id);
}

/**
 * Locks `id`'s subtree `FOR UPDATE` in id order and returns its ids (sorted). Every writer of
 * several session rows locks them in id order (the last-seen flush, the group commit's `FOR
 * SHARE`, `markStopped`), so concurrent stops of overlapping subtrees (a parent and its child)
 * queue instead of deadlocking: the later one waits for the earlier one's commit and then finds
 * the shared part stopped and its claims already reopened.
 *
 * The walk runs before the locks, so it re-walks after locking: a child whose registration
 * committed meanwhile (registration holds its parent `FOR KEY SHARE`, which the lock waits for) is
 * locked too. Such a newcomer is locked out of id order; the rare deadlock that could cause is
 * retried by `withTx`.
 */
export async function lockSubtree(tx: Db, id: string): Promise<string[]> {
  const locked = new Set<string>();
  for (;;) {
    const fresh = (await subtreeIds(tx, id)).filter((x) => !locked.has(x));
    if (fresh.length === 0) return [...locked].sort();
    await tx`select id from sessions where id = any(${fresh}::text[]) order by id for update`;
    for (const x of fresh) locked.add(x);
  }
}
