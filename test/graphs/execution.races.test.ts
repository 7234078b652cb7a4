/**
 * Task Graph v1 execution under real concurrency (docs/architecture.md §D3: cross-row invariants at READ
 * COMMITTED, proven by racing real clients over HTTP against real Postgres). Each race runs 50
 * rounds on a fresh graph; every round checks the invariant from the database, not from the
 * answers alone.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sweepGraphInterruptions } from '../../src/sweeps/sweeps.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { agentSession, commit, evidence, graphOf, implementer, intentMapOf, lifecycle, registerExecutionAgents, type Dispatch } from './execution.helpers.js';
import { scaled } from '../helpers/scale.js';

const ROUNDS = scaled(50);
let t: TestApp;
let seq = 0;
const base = commit();

beforeAll(async () => {
  t = await startTestApp();
  await registerExecutionAgents(t);
});
afterAll(async () => t?.close());

async function createGraph(
  subtasks: Record<string, string[]>,
  maxConcurrency: number,
  intentMap?: (id: string) => unknown,
  implementers: Record<string, string> = {},
) {
  const id = `task-race-${++seq}`;
  const graph = graphOf(id, subtasks, maxConcurrency, implementers);
  const r = await t.admin.post('/v1/graphs', intentMap ? { graph, intentMap: intentMap(id) } : graph);
  if (r.status !== 201) throw new Error(`create: ${r.status} ${JSON.stringify(r.body)}`);
  return id;
}

/** Per subtask: how many dispatches it has had, and the state rows say now. */
async function facts(id: string) {
  return t.sql<{ subtask_id: string; attempt: number; status: string; outcome: string | null }[]>`
    select gs.subtask_id, gs.attempt, t.status, gs.outcome from graph_subtasks gs join todos t on t.id = gs.todo_id
     where gs.graph_id = ${id} order by gs.subtask_id`;
}

const ten = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`s${i}`, [] as string[]]));

describe('locked wave claim', () => {
  it(`8 concurrent runs on 10 READY subtasks with maxConcurrency 3 dispatch exactly 3, none twice (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const id = await createGraph(ten, 3);
      const results = await Promise.all(Array.from({ length: 8 }, () => t.admin.post(`/v1/graphs/${id}/run`, { baseCommit: base })));
      for (const r of results) expect(r.status, JSON.stringify(r.body)).toBe(200);
      const selected = results.flatMap((r) => r.body.selected as string[]);
      expect(selected.length).toBe(3);
      expect(new Set(selected).size).toBe(3);
      const rows = await facts(id);
      expect(
        rows
          .filter((r) => r.status === 'in-progress')
          .map((r) => r.subtask_id)
          .sort(),
      ).toEqual([...selected].sort());
      expect(rows.every((r) => r.attempt <= 1)).toBe(true);
      const running = (await lifecycle(t.admin, id)).filter((e) => e.event === 'TASK_GRAPH_SUBTASK_STATE_CHANGED' && e.data.to === 'RUNNING');
      expect(running.length).toBe(3);
    }
  });

  it(`a run racing a fleet claim of the same subtask gives one dispatch (${ROUNDS} rounds)`, async () => {
    const worker = await agentSession(t, 'agent-a');
    for (let round = 0; round < ROUNDS; round++) {
      const id = await createGraph({ only: [] }, 2, undefined, { only: 'agent-a' });
      const [run, claim] = await Promise.all([
        t.admin.post(`/v1/graphs/${id}/run`, { baseCommit: base }),
        worker.client.post(`/v1/graphs/${id}/subtasks/only/claim`, { baseCommit: base }),
      ]);
      const dispatched = (run.status === 200 ? run.body.selected.length : 0) + (claim.status === 200 ? 1 : 0);
      expect(dispatched, `${run.status} ${claim.status} ${JSON.stringify(claim.body)}`).toBe(1);
      if (claim.status !== 200) expect(claim.body.code).toBe('TASK_ALREADY_RUNNING');
      const [row] = await facts(id);
      expect([row.attempt, row.status]).toEqual([1, 'in-progress']);
    }
  });
});

describe('completion', () => {
  it(`two completes of one subtask make one SUCCEEDED transition and one event (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const id = await createGraph({ one: [], two: ['one'] }, 1);
      const _d: Dispatch = (await t.admin.post(`/v1/graphs/${id}/run`, { baseCommit: base })).body.dispatches[0];
      const c = t.admin;
      void implementer;
      const [x, y] = await Promise.all([
        c.post(`/v1/graphs/${id}/subtasks/one/complete`, evidence(base, ['a.ts'])),
        t.admin.post(`/v1/graphs/${id}/subtasks/one/complete`, evidence(base, ['b.ts'])),
      ]);
      // The loser is refused: 409 (no longer RUNNING).
      expect([x.status, y.status].filter((s) => s === 200).length, `${x.status} ${y.status}`).toBe(1);
      const events = (await lifecycle(t.admin, id)).filter((e) => e.event === 'TASK_GRAPH_SUBTASK_STATE_CHANGED');
      expect(events.filter((e) => e.data.subtaskId === 'one' && e.data.to === 'SUCCEEDED').length).toBe(1);
      expect(events.filter((e) => e.data.subtaskId === 'two' && e.data.to === 'READY').length).toBe(1);
    }
  });

  it(`complete racing lease expiry ends SUCCEEDED or FAILED interrupted, never both (${ROUNDS} rounds)`, async () => {
    const outcomes = new Set<string>();
    for (let round = 0; round < ROUNDS; round++) {
      const id = await createGraph({ solo: [] }, 1);
      const _d: Dispatch = (await t.admin.post(`/v1/graphs/${id}/run`, { baseCommit: base })).body.dispatches[0];
      const expire = async () => {
        await t.sql`update todos set progress_at = now() - interval '2 hours' where id = (select todo_id from graph_subtasks where graph_id = ${id})`;
        await sweepGraphInterruptions(t.sql, t.config);
      };
      const [done] = await Promise.all([t.admin.post(`/v1/graphs/${id}/subtasks/solo/complete`, evidence(base, ['x.ts'])), expire()]);
      const events = (await lifecycle(t.admin, id)).filter((e) => e.event === 'TASK_GRAPH_SUBTASK_STATE_CHANGED' && e.data.from === 'RUNNING');
      expect(events.length, JSON.stringify(events)).toBe(1);
      const [row] = await facts(id);
      if (events[0].data.to === 'SUCCEEDED') {
        expect(done.status).toBe(200);
        expect([row.status, row.outcome]).toEqual(['done', null]);
      } else {
        expect(events[0].data.to).toBe('FAILED');
        expect(done.status).toBe(409);
        expect([row.status, row.outcome]).toEqual(['blocked', 'FAILED']);
        const graph = (await t.admin.get(`/v1/graphs/${id}`)).body.graph;
        expect(graph.recovery[0].classification).toBe('interrupted');
      }
      outcomes.add(events[0].data.to);
    }
    // Not an assertion on timing: both orders are legal. Recorded so a reader sees the race was real.
    expect([...outcomes].every((o) => o === 'SUCCEEDED' || o === 'FAILED')).toBe(true);
  });
});

describe('write intent', () => {
  it(`a subtask whose write intent overlaps a RUNNING one is never dispatched beside it (${ROUNDS} rounds)`, async () => {
    const worker = await agentSession(t, 'agent-b');
    const subtasks = { alpha: [], beta: [], gamma: [], delta: [] };
    const intents = { alpha: ['src/shared/**'], beta: ['src/shared/file.ts'], gamma: ['docs/**'], delta: ['src/shared/*.ts'] };
    for (let round = 0; round < ROUNDS; round++) {
      const id = await createGraph(subtasks, 4, (gid) => intentMapOf(gid, Object.keys(subtasks), 'warn', intents), { beta: 'agent-b', delta: 'agent-b' });
      await Promise.all([
        t.admin.post(`/v1/graphs/${id}/run`, { baseCommit: base }),
        worker.client.post(`/v1/graphs/${id}/subtasks/beta/claim`, { baseCommit: base }),
        worker.client.post(`/v1/graphs/${id}/subtasks/delta/claim`, { baseCommit: base }),
        t.admin.post(`/v1/graphs/${id}/run`, { baseCommit: base }),
        worker.client.post('/v1/todos/next', { scope: `graph:${id}` }),
      ]);
      const running = (await facts(id)).filter((r) => r.status === 'in-progress').map((r) => r.subtask_id);
      // alpha, beta and delta all overlap one another; gamma overlaps none.
      expect(running.filter((s) => s !== 'gamma').length, running.join(',')).toBeLessThanOrEqual(1);
      expect(running).toContain('gamma');
    }
  });
});
