/**
 * Correctness under concurrency, proven by racing real HTTP clients against a listening server on
 * a real Postgres at READ COMMITTED (docs/architecture.md §D3; docs/seeds/README.md §3).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addItem as add, startTestApp, type Client, type TestApp } from '../helpers/app.js';
import { scaled } from '../helpers/scale.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ config: { dbPoolMax: 40 } });
});
afterAll(async () => t?.close());

async function sessions(n: number, root: { id: string; client: Client }) {
  return Promise.all(Array.from({ length: n }, () => t.session({ parentId: root.id, by: root.client })));
}

describe('claim races', () => {
  it(`should give exactly one winner when 32 sessions claim one item, ${scaled(20)} rounds`, async () => {
    const root = await t.session();
    const agents = await sessions(32, root);
    for (let round = 0; round < scaled(20); round++) {
      const item = await add(root.client, `r${round}`);
      const results = await Promise.all(agents.map((a) => a.client.post(`/v1/todos/${item.id}/claim`)));
      const winners = results.filter((r) => r.status === 200);
      expect(winners).toHaveLength(1);
      expect(results.filter((r) => r.status === 409 && r.body.code === 'already_claimed')).toHaveLength(31);
      const row = (await root.client.get(`/v1/todos/${item.id}`)).body.item;
      expect(row).toMatchObject({ status: 'in-progress', owner: winners[0].body.item.owner, revision: 2 });
    }
  });

  it(`should claim every one of 24 items exactly once with 24 concurrent next calls, ${scaled(20)} rounds`, async () => {
    const root = await t.session();
    const agents = await sessions(25, root);
    for (let round = 0; round < scaled(20); round++) {
      const ids = [];
      for (let i = 0; i < 24; i++) ids.push((await add(root.client, `n${round}-${i}`)).id);
      const results = await Promise.all(agents.slice(0, 24).map((a) => a.client.post('/v1/todos/next')));
      expect(results.every((r) => r.status === 200 && r.body.claimed)).toBe(true);
      expect(results.map((r) => r.body.item.id).sort()).toEqual(ids.sort());
      const extra = await agents[24].client.post('/v1/todos/next');
      expect(extra.body).toEqual({ claimed: false });
      // Finish the round so the next round starts with an empty ready set.
      await Promise.all(results.map((r, i) => agents[i].client.post(`/v1/todos/${r.body.item.id}/done`)));
    }
  });
});

describe(`dependency races (${scaled(50)} rounds each)`, () => {
  it('should unblock exactly once when two owners finish the last two dependencies at the same moment', async () => {
    const root = await t.session();
    const [o1, o2] = await sessions(2, root);
    for (let round = 0; round < scaled(50); round++) {
      const a = await add(root.client, 'a');
      const b = await add(root.client, 'b');
      const x = await add(root.client, 'x', { dependsOn: [a.id, b.id] });
      await o1.client.post(`/v1/todos/${a.id}/claim`);
      await o2.client.post(`/v1/todos/${b.id}/claim`);
      const [ra, rb] = await Promise.all([o1.client.post(`/v1/todos/${a.id}/done`), o2.client.post(`/v1/todos/${b.id}/done`)]);
      expect([ra.status, rb.status]).toEqual([200, 200]);
      const after = (await root.client.get(`/v1/todos/${x.id}`)).body.item;
      expect(after).toMatchObject({ status: 'todo', ready: true, revision: 2 });
      const unblocks = await t.sql`select count(*)::int as n from events where subject_id = ${x.id} and event = 'unblocked'`;
      expect(unblocks[0].n).toBe(1);
    }
  });

  it('should never store both a→b and b→a written at the same moment: the loser gets dependency_cycle', async () => {
    const root = await t.session();
    for (let round = 0; round < scaled(50); round++) {
      const a = await add(root.client, 'a');
      const b = await add(root.client, 'b');
      const [r1, r2] = await Promise.all([
        root.client.put(`/v1/todos/${a.id}/dependencies`, { dependsOn: [b.id] }),
        t.admin.put(`/v1/todos/${b.id}/dependencies`, { dependsOn: [a.id] }),
      ]);
      const codes = [r1, r2].map((r) => (r.status === 200 ? 'ok' : r.body.code)).sort();
      expect(codes).toEqual(['dependency_cycle', 'ok']);
      const edges = await t.sql`select count(*)::int as n from todo_dependencies where todo_id in (${a.id}, ${b.id})`;
      expect(edges[0].n).toBe(1);
    }
  });

  it('should count an edge added while its dependency is being completed, so the dependent is never stranded', async () => {
    const root = await t.session();
    const [owner] = await sessions(1, root);
    for (let round = 0; round < scaled(50); round++) {
      const d = await add(root.client, 'dependency');
      const x = await add(root.client, 'dependent');
      await owner.client.post(`/v1/todos/${d.id}/claim`);
      const [done, edge] = await Promise.all([
        owner.client.post(`/v1/todos/${d.id}/done`),
        root.client.put(`/v1/todos/${x.id}/dependencies`, { dependsOn: [d.id] }),
      ]);
      expect([done.status, edge.status]).toEqual([200, 200]);
      const after = (await root.client.get(`/v1/todos/${x.id}`)).body.item;
      expect(after).toMatchObject({ status: 'todo', ready: true, blockedBy: [], dependsOn: [d.id] });
      const [row] = await t.sql`select unfinished_deps from todos where id = ${x.id}`;
      expect(row.unfinished_deps).toBe(0);
    }
  });

  it('should never leave a claim standing on a dependency that was unfinished at the moment of claim', async () => {
    const root = await t.session();
    const [worker, finisher] = await sessions(2, root);
    for (let round = 0; round < scaled(50); round++) {
      const dep = await add(root.client, 'dep');
      await finisher.client.post(`/v1/todos/${dep.id}/claim`);
      await finisher.client.post(`/v1/todos/${dep.id}/done`);
      const x = await add(root.client, 'x', { dependsOn: [dep.id] });
      const [claim, reopen] = await Promise.all([worker.client.post(`/v1/todos/${x.id}/claim`), root.client.post(`/v1/todos/${dep.id}/reopen`)]);
      expect(reopen.status).toBe(200);
      const reblocked = await t.sql`select count(*)::int as n from events where subject_id = ${x.id} and event = 'dependency-blocked'`;
      if (claim.status === 200) {
        // The claim serialised before the reopen: the claim saw the dependency done, and the reopen
        // then found x in progress and did not re-block it.
        expect(claim.body.item.blockedBy).toEqual([]);
        expect(reblocked[0].n).toBe(0);
      } else {
        expect(claim.body.code).toBe('dependency_blocked');
        expect(reblocked[0].n).toBe(1);
      }
      const [row] = await t.sql`select unfinished_deps from todos where id = ${x.id}`;
      expect(row.unfinished_deps).toBe(1);
    }
  });

  it('should drain a 200-item diamond DAG with 16 sessions, each item once and only after its dependencies', async () => {
    const root = await t.session();
    const agents = await sessions(16, root);
    // Layers of 20: every item of layer k depends on two items of layer k-1 (a lattice of diamonds).
    const layers: string[][] = [];
    const depsOf = new Map<string, string[]>();
    for (let k = 0; k < 10; k++) {
      const layer: string[] = [];
      for (let i = 0; i < 20; i++) {
        const deps = k === 0 ? [] : [layers[k - 1][i], layers[k - 1][(i + 1) % 20]];
        const item = await add(root.client, `L${k}-${i}`, { dependsOn: deps });
        depsOf.set(item.id, deps);
        layer.push(item.id);
      }
      layers.push(layer);
    }
    const done = new Set<string>();
    const claimed: string[] = [];
    const violations: string[] = [];
    await Promise.all(
      agents.map(async (a) => {
        let idle = 0;
        while (done.size < 200 && idle < 200) {
          const r = await a.client.post('/v1/todos/next');
          if (!r.body.claimed) {
            idle++;
            await new Promise((res) => setTimeout(res, 5));
            continue;
          }
          idle = 0;
          const id = r.body.item.id;
          claimed.push(id);
          // The claim's own snapshot saw every dependency done.
          if (r.body.item.blockedBy.length) violations.push(`${id} claimed with blockedBy`);
          const fin = await a.client.post(`/v1/todos/${id}/done`);
          expect(fin.status).toBe(200);
          done.add(id);
        }
      }),
    );
    // And in commit order: a dependency's `done` transaction started writing before the claim's
    // (its xid is smaller), which holds only if it had committed when the claim ran.
    const rows = await t.sql<{ subject_id: string; event: string; tx: string }[]>`
      select subject_id, event, tx::text as tx from events
       where topic = ${`todo:session:${root.id}`} and event in ('claimed', 'done')`;
    const txOf = (id: string, event: string) => BigInt(rows.find((r) => r.subject_id === id && r.event === event)!.tx);
    for (const [id, deps] of depsOf) {
      for (const d of deps) if (!(txOf(d, 'done') < txOf(id, 'claimed'))) violations.push(`${id} claimed before ${d} was done`);
    }
    expect(violations).toEqual([]);
    expect(claimed).toHaveLength(200);
    expect(new Set(claimed).size).toBe(200);
  });
});

describe('stop racing claims', () => {
  it('should never leave a stopped session owning work: next and claim calls in flight when it stops land before the reopen or not at all', async () => {
    for (let trial = 0; trial < 12; trial++) {
      const root = await t.session();
      const workers = await sessions(6, root);
      const victim = await t.session({ parentId: root.id, by: root.client });
      const ids: string[] = [];
      for (let i = 0; i < 120; i++) ids.push((await add(root.client, `s${trial}-${i}`)).id);
      let stopped = false;
      const statuses: number[] = [];
      const worker = async (c: Client) => {
        while (!stopped) {
          const r = await c.post('/v1/todos/next');
          if (!r.body.claimed) return;
          await c.post(`/v1/todos/${r.body.item.id}/done`);
        }
      };
      const victimLoop = async () => {
        for (;;) {
          const r = await victim.client.post('/v1/todos/next');
          statuses.push(r.status);
          if (r.status !== 200 || !r.body.claimed) return;
        }
      };
      // Claims by id, from the back of the list (where the workers are not yet).
      const victimClaims = async (from: number) => {
        for (let i = ids.length - 1 - from; i >= 0; i -= 2) {
          const r = await victim.client.post(`/v1/todos/${ids[i]}/claim`);
          if (r.status === 409) continue;
          statuses.push(r.status);
          if (r.status !== 200) return;
        }
      };
      const running = [...workers.map((w) => worker(w.client)), ...Array.from({ length: 4 }, victimLoop), victimClaims(0), victimClaims(1)];
      await new Promise((r) => setTimeout(r, 5 + trial * 4));
      const stop = await root.client.post(`/v1/sessions/${victim.id}/stop`);
      expect(stop.status).toBe(200);
      await Promise.all(running.slice(workers.length));
      stopped = true;
      await Promise.all(running);
      expect(statuses.filter((s) => s !== 200 && s !== 401)).toEqual([]);
      const [stuck] = await t.sql<{ n: number }[]>`select count(*)::int as n from todos where owner = ${victim.id} and status = 'in-progress'`;
      expect(stuck.n, `trial ${trial}: items left in progress for the stopped session`).toBe(0);
    }
  });
});
