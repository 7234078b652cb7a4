import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { markdownLine } from '../../src/export/export.service.js';
import { type Client, startTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  // A small list_limit, so both the list endpoint and the export page several times over 5,000 items.
  t = await startTestApp({ todo: { listLimit: 700 } });
});
afterAll(async () => t?.close());

/** Every item of a scope through the list endpoint, following nextCursor. */
async function listAll(c: Client, scope: string): Promise<any[]> {
  const out: any[] = [];
  let cursor: string | null = null;
  do {
    const r: any = await c.get(`/v1/todos?scope=${encodeURIComponent(scope)}${cursor ? `&cursor=${cursor}` : ''}`);
    expect(r.status).toBe(200);
    out.push(...r.body.items);
    cursor = r.body.nextCursor;
  } while (cursor);
  return out;
}

describe('scope export (seed 000 “Remove / export”)', () => {
  it('should render the seed’s markdown: heading, checkboxes, parenthetical, indented sub-items', async () => {
    const a = await t.session();
    const scope = `session:${a.id}`;
    const api = (await a.client.post('/v1/todos', { title: 'Build the API', tags: ['p1', 'backend'] })).body.item;
    const sub = (await a.client.post('/v1/todos', { title: 'Write the handler', parentId: api.id })).body.item;
    const publish = (await a.client.post('/v1/todos', { title: 'Publish', dependsOn: [api.id] })).body.item;
    await a.client.post(`/v1/todos/${sub.id}/claim`);
    await a.client.post(`/v1/todos/${sub.id}/done`);
    await a.client.post(`/v1/todos/${api.id}/claim`);
    const r = await a.client.get(`/v1/scopes/${scope}/export`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toContain('text/markdown');
    expect(r.headers.get('content-disposition')).toBe(`inline; filename="session-${a.id}.md"`);
    expect(r.body).toBe(
      [
        `# Todo export: ${scope}`,
        '',
        `- [ ] Build the API _(in-progress, owner ${a.id}, tags backend,p1)_`,
        `  - [x] Write the handler _(done, owner ${a.id})_`,
        `- [ ] Publish _(blocked, blocked by ${api.id})_`,
        '',
      ].join('\n'),
    );
    expect(publish.status).toBe('blocked');
  });

  it('should say “(no items)” for an empty scope, in markdown, and return [] in JSON', async () => {
    const a = await t.session();
    const md = await a.client.get(`/v1/scopes/session:${a.id}/export?format=markdown`);
    expect(md.body).toBe(`# Todo export: session:${a.id}\n\n_(no items)_\n`);
    const json = await a.client.get(`/v1/scopes/session%3A${a.id}/export?format=json`);
    expect(json.headers.get('content-type')).toContain('application/json');
    expect(json.body).toEqual([]);
  });

  it('should keep one item on one line when its title holds a line break', () => {
    const line = markdownLine({ title: 'two\nlines', status: 'todo', tags: [], blockedBy: [] } as any);
    expect(line).toBe('- [ ] two lines _(todo)_');
  });

  it('should export a 5,000-item scope completely, matching the list endpoint item for item', async () => {
    const a = await t.session();
    const scope = `session:${a.id}`;
    // Fixture rows straight into the table (5,000 HTTP adds would only slow the test down); the
    // scope counter is kept in step, as addTodo does.
    await t.sql`
      insert into todos (id, scope, title, tags, created_by, position, status, owner)
      select 'td-' || lpad(to_hex(g), 16, '0'), ${scope}, 'item ' || g,
             case when g % 7 = 0 then array['seven'] else '{}'::text[] end, ${a.id}, g,
             case when g % 5 = 0 then 'done' else 'todo' end, case when g % 5 = 0 then ${a.id} end
        from generate_series(1, 4990) g`;
    await t.sql`insert into scopes (scope, last_position) values (${scope}, 4990)`;
    const parent = `td-${(1).toString(16).padStart(16, '0')}`;
    for (let i = 0; i < 10; i++) {
      expect(
        (await a.client.post('/v1/todos', { title: `sub ${i}`, parentId: parent, dependsOn: i ? [] : [`td-${(2).toString(16).padStart(16, '0')}`] })).status,
      ).toBe(201);
    }
    const listed = await listAll(a.client, scope);
    expect(listed).toHaveLength(5000);

    const json = await a.client.get(`/v1/scopes/${scope}/export?format=json`);
    expect(json.status).toBe(200);
    expect(json.body).toHaveLength(5000);
    expect(json.body).toEqual(listed);
    // Same key order as the list endpoint's serializer, not just equal objects.
    expect(JSON.stringify(json.body)).toBe(JSON.stringify(listed));

    const md = await a.client.get(`/v1/scopes/${scope}/export`);
    const lines = (md.body as string).split('\n').filter((l) => l.includes('- ['));
    expect(lines).toHaveLength(5000);
    expect(lines).toEqual(listed.map((i) => markdownLine(i)));
    expect(lines.filter((l) => l.startsWith('  - ['))).toHaveLength(10);
    expect(lines.filter((l) => l.startsWith('- [x]'))).toHaveLength(998);
  });

  it('should refuse a caller outside the scope, an unknown scope and a bad format', async () => {
    const a = await t.session();
    const b = await t.session();
    // Another subtree's scope and an unknown one get one answer.
    const out = await b.client.get(`/v1/scopes/session:${a.id}/export`);
    expect([out.status, out.body.code]).toEqual([404, 'scope_not_found']);
    const unknown = await b.client.get('/v1/scopes/session:s-0000000000000000/export');
    expect(unknown.body).toEqual({ ...out.body, detail: out.body.detail.replace(a.id, 's-0000000000000000') });
    expect((await a.client.get('/v1/scopes/nonsense/export')).body.code).toBe('invalid_scope');
    expect((await a.client.get(`/v1/scopes/session:${a.id}/export?format=csv`)).body.code).toBe('validation_failed');
  });

  it('should export a scenario named by its name, for a member', async () => {
    const r = await t.admin.post('/v1/scenarios', { name: 'export-me', members: [{ name: 'a', task: 'Seeded task' }] });
    const member = t.admin.as(r.body.tokens.a);
    const md = await member.get('/v1/scopes/scenario:export-me/export');
    expect(md.status).toBe(200);
    expect(md.body).toBe(`# Todo export: scenario:${r.body.scenario.id}\n\n- [ ] Seeded task _(todo)_\n`);
  });
});
