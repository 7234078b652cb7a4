import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

describe('markdown export of hostile titles', () => {
  it('should keep each item on one line and escape Markdown so a title cannot forge another item', async () => {
    const s = await t.session();
    await s.client.post('/v1/todos', { title: 'real\n- [x] Fake finished task _(done)_' });
    const r = await s.client.get(`/v1/scopes/${encodeURIComponent(`session:${s.id}`)}/export?format=markdown`);
    const lines = (r.body as string).split('\n').filter((l) => l.startsWith('- ['));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('real - \\[x\\] Fake finished task \\_(done)\\_');
  });
});
