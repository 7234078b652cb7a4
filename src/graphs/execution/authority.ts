/**
 * Who may do what to a Task Graph (docs/architecture.md §D2). Seeing a graph
 * is graphs.repo.ts's rule; acting needs more:
 *
 * | act                                        | who                                                         |
 * | ------------------------------------------ | ----------------------------------------------------------- |
 * | run, recover, stop (whole graph), cleanup, integration | a user, or a session of the creating session's subtree (the graph's owners) |
 * | claim one subtask, `next` in the graph scope | the owners, or a session bound to the subtask's implementer Agent |
 * | heartbeat, complete, fail, resume, stop one subtask | the owners, a session bound to the subtask's implementer, or the session that dispatched it |
 *
 * A dispatch's own session (the token handed to one implementer run: `graphId`/`subtaskId` set)
 * is none of these: it sees only its graph and may only heartbeat its own subtask. Reporting the
 * outcome (complete, fail) is its runner's, with the runner's token, so an implementer cannot
 * vouch for its own work; it never runs, claims, reviews, resumes, stops or registers sessions.
 * | review                                     | a user, or a session bound to the parent's reviewer Agent   |
 *
 * A refusal is 403 `forbidden` naming what would be allowed (the caller can already see the graph,
 * so nothing leaks).
 */
import type { Principal } from '../../auth/principal.js';
import { fail } from '../../http/errors.js';
import type { GraphRow, SubtaskRow } from '../graphs.view.js';

/** Whether `p` owns graph `graph`: a user, or a session of the creating session's subtree (never a dispatch's own session). */
export function ownsGraph(p: Principal, graph: GraphRow): boolean {
  if (p.kind === 'user') return true;
  return p.graphId === null && graph.creator_root !== null && graph.creator_root !== undefined && graph.creator_root === p.rootId;
}

/** A dispatch's own session acts on its own subtask only. */
const dispatchSessionOf = (p: Principal, graph: GraphRow, row: SubtaskRow) => p.kind === 'session' && p.graphId === graph.id && p.subtaskId === row.subtask_id;

/** 403 unless `p` owns the graph. */
export function requireOwner(p: Principal, graph: GraphRow, act: string): void {
  if (!ownsGraph(p, graph)) {
    fail('forbidden', `only an operator (user) or a session of the subtree that created Task Graph ${graph.id} may ${act}`);
  }
}

/** Whether `p` may act on one dispatched subtask (heartbeat, complete, fail, resume, stop it). */
export function actsOnSubtask(p: Principal, graph: GraphRow, row: SubtaskRow, act = 'act on'): boolean {
  // The implementer's own token keeps its lease alive; reporting the outcome is its runner's job.
  if (p.kind === 'session' && p.graphId !== null) return act === 'heartbeat' && dispatchSessionOf(p, graph, row);
  if (ownsGraph(p, graph)) return true;
  return p.kind === 'session' && (p.agentId === row.implementer || p.id === row.dispatched_by);
}

/** 403 unless `p` may act on the subtask. */
export function requireActor(p: Principal, graph: GraphRow, row: SubtaskRow, act: string): void {
  if (p.kind === 'session' && p.graphId !== null && !actsOnSubtask(p, graph, row, act)) {
    fail(
      'forbidden',
      `a dispatch's own session (the implementer's token) may only heartbeat its subtask; its runner reports the outcome (${act} ${graph.id}/${row.subtask_id} with the runner's token)`,
    );
  }
  if (!actsOnSubtask(p, graph, row, act)) {
    fail('forbidden', `only a user, a session bound to Agent "${row.implementer}", or the session that dispatched ${graph.id}/${row.subtask_id} may ${act} it`);
  }
}

/** 403 unless `p` may claim the subtask (the graph's owners or a session of its implementer). */
export function requireClaimer(p: Principal, graph: GraphRow, row: SubtaskRow): void {
  if (ownsGraph(p, graph) || (p.kind === 'session' && p.graphId === null && p.agentId === row.implementer)) return;
  fail('forbidden', `only the graph's owners or a session bound to Agent "${row.implementer}" may claim ${graph.id}/${row.subtask_id}`);
}

/** 403 unless `p` may review: a user, or a session bound to the parent's reviewer Agent. */
export function requireReviewer(p: Principal, graph: GraphRow): void {
  if (p.kind === 'user' || (p.graphId === null && p.agentId === graph.parent.reviewer)) return;
  fail('forbidden', `only a user or a session bound to the reviewer Agent "${graph.parent.reviewer}" may review Task Graph ${graph.id}`);
}
