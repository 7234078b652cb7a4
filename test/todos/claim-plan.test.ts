/**
 * The claim cycle's cost does not grow with the backlog, guarded by what the plans touch rather than by a
 * timing. It grows one scope from 1,000 to 20,000 ready items and reads, from `EXPLAIN (ANALYZE,
 * BUFFERS)` of every statement the claim cycle runs (auto_explain, nested statements included, so
 * the statements inside `coord_next_many` and `coord_done_many` count), how many buffers a claim
 * and a completion touch. A plan that stops using the ready index, or a head of dead index entries
 * that keeps growing, shows as buffers that grow with the backlog, and fails here instead of
 * waiting for a bench run. docs/architecture.md "Readiness and the claim" says why it stays flat.
 */
import type postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { principalForToken } from '../../src/auth/principals.repo.js';
import { listTodos } from '../../src/todos/todos.read.js';
import { claimNextAlone, claimNextMany, completeMany, type NextRequest } from '../../src/todos/todos.repo.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { buffersOf, explaining, type Explaining, type Plan } from '../helpers/plans.js';

let t: TestApp;
let probe: postgres.Sql;
let explained: Explaining;

beforeAll(async () => {
  t = await startTestApp();
  explained = await explaining(t.dbUrl);
  probe = explained.sql;
});

afterAll(async () => {
  await explained?.end();
  await t?.close();
});

const buffers = buffersOf;

/** Every index a plan reads. */
function indexes(p: Plan): string[] {
  return [...(p['Index Name'] ? [p['Index Name']] : []), ...(p.Plans ?? []).flatMap(indexes)];
}

/** The statements run since the last call, the outermost last (it ran the others). */
const take = () => explained.take();

/** Adds `n` ready items at positions `from + 1 …` to `scope` of the default team, in one statement. */
async function backlog(scope: string, n: number, from: number): Promise<string> {
  const [team] = await t.sql<{ id: string }[]>`select id from teams order by created_at limit 1`;
  await t.sql`
    insert into todos (id, team_id, scope, title, created_by, position)
    select 'td-' || lpad(to_hex(g), 16, '0'), ${team.id}, ${scope}, 'item ' || g, 'bench', g
      from generate_series(${from + 1}::int, ${from + n}::int) g`;
  await t.sql`analyze todos`;
  return team.id;
}

/** What one claim cycle touched: a lone `next`, its `done`, a batch of 8 `next`s, their `done`s. */
interface Cycle {
  /** The lone claim statement (src/todos/todos.repo.ts `claimNextAlone`). */
  lone: Plan;
  /** The pick of coord_next_many: its statement that locks the candidates. */
  pick: Plan;
  /** coord_next_many whole. */
  batch: Plan;
  /** coord_done_many of one item, whole. */
  done: Plan;
}

describe('the claim cycle touches as many buffers at 20,000 ready items as at 1,000', () => {
  it('reads the head of the ready index, not the backlog, for a lone next, a batch and a done', async () => {
    const s = await t.session({ name: 'prober' });
    const scope = 'session:probe';
    const team = await backlog(scope, 1_000, 0);
    const by = { kind: 'session' as const, id: s.id, token: 'default' };
    const req = (): NextRequest => ({ scope: { teamId: team, scope }, actor: s.id, by, emit: true, leaseMs: 0 });
    const finish = (ids: string[]) =>
      completeMany(
        probe,
        ids.map((id) => ({ id, actor: s.id, by, leaseMs: 0, emitEvents: t.config.todo.emitEvents })),
      );
    const cycle = async (): Promise<Cycle> => {
      take();
      const one = await claimNextAlone(probe, req());
      const lone = take().at(-1)!.plan;
      await finish([one!.id]);
      const done = take().at(-1)!.plan;
      const many = await claimNextMany(
        probe,
        Array.from({ length: 8 }, () => req()),
      );
      const ran = take();
      const pick = ran.find((r) => r.text.includes('ORDER BY c.priority DESC'))!.plan;
      await finish(many.map((r) => r.id));
      take();
      return { lone, pick, batch: ran.at(-1)!.plan, done };
    };
    // Warm: the first statements of a connection also read the catalogs.
    for (let i = 0; i < 3; i++) await cycle();
    const small = await cycle();
    await backlog(scope, 19_000, 1_000);
    for (let i = 0; i < 3; i++) await cycle();
    const big = await cycle();
    const report = (c: Cycle) => ({ lone: buffers(c.lone), pick: buffers(c.pick), batch: buffers(c.batch), done: buffers(c.done) });
    const flat = (a: number, b: number) => b <= a * 1.5 + 8;
    const at1k = report(small);
    const at20k = report(big);
    // Both picks are probes of the ready index in the claim order (no scan and sort of the backlog).
    expect(indexes(big.lone)).toContain('todos_team_ready_idx');
    expect(indexes(big.pick)).toContain('todos_team_ready_idx');
    for (const k of ['lone', 'pick', 'batch', 'done'] as const) {
      expect(flat(at1k[k], at20k[k]), `${k}: ${at1k[k]} buffers at 1,000 ready items, ${at20k[k]} at 20,000`).toBe(true);
    }
  });
});

describe('the first page of status=todo reads as much behind 19,000 done items as behind 950', () => {
  it('reads the ready-by-position index, not the done items before the ready ones', async () => {
    const s = await t.session({ name: 'lister' });
    const principal = (await principalForToken(t.sql, s.token))!;
    const scope = `session:${s.id}`;
    const [team] = await t.sql<{ id: string }[]>`select id from teams order by created_at limit 1`;
    // `done` items first in position order, then ready ones: what a scope looks like after a while.
    const fill = async (from: number, done: number, ready: number) => {
      await t.sql`
        insert into todos (id, team_id, scope, title, created_by, position, status, owner)
        select 'td-' || lpad(to_hex(g + 1048576), 16, '0'), ${team.id}, ${scope}, 'item ' || g, 'bench', g,
               case when g <= ${from + done} then 'done' else 'todo' end, case when g <= ${from + done} then ${s.id} end
          from generate_series(${from + 1}::int, ${from + done + ready}::int) g`;
      await t.sql`analyze todos`;
    };
    const page = async () => {
      take();
      const r = await listTodos({ sql: probe, config: t.config, principal }, { status: 'todo', limit: 50 });
      const outer = take().at(-1)!.plan;
      return { ids: r.items.map((i) => i.id), buffers: buffers(outer), indexes: indexes(outer) };
    };
    await fill(19_000, 950, 50);
    await page();
    const small = await page();
    // 19,000 more done items before the same 50 ready ones.
    await fill(0, 19_000, 0);
    await page();
    const big = await page();
    expect(big.ids).toEqual(small.ids);
    expect(big.indexes).toContain('todos_team_ready_position_idx');
    expect(big.buffers, `${small.buffers} buffers behind 950 done items, ${big.buffers} behind 19,000`).toBeLessThanOrEqual(small.buffers * 1.5 + 8);
  });
});
