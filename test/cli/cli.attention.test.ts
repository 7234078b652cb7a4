/**
 * `coord attention`, in process against a real app: an operator sees a manual block with its note
 * and the request that resolves it, in the table and in JSON; a session is refused (operators only).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addItem, startTestApp, type TestApp } from '../helpers/app.js';
import { ATTENTION_KINDS } from '../../src/attention/attention.schemas.js';
import { KINDS } from '../../cli/commands/attention.js';
import { runInProcess } from './helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

describe('coord attention', () => {
  it('should list what is stuck with its next step for an operator, and refuse a session', async () => {
    const s = await t.session({ name: 'blocker' });
    const item = await addItem(s.client, 'migrate the schema');
    expect((await s.client.post(`/v1/todos/${item.id}/claim`)).status).toBe(200);
    expect((await s.client.post(`/v1/todos/${item.id}/block`, { note: 'which database?' })).status).toBe(200);
    const operator = { COORD_URL: t.base, COORD_TOKEN: t.admin.token! };

    const human = await runInProcess(['attention', '--human'], operator);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/manual-block/);
    expect(human.stdout).toContain('which database?');
    expect(human.stdout).toContain(`reopen: POST /v1/todos/${item.id}/reopen`);
    expect(human.stdout).toContain('blocker');

    const json = JSON.parse((await runInProcess(['attention', '--kind', 'manual-block', '--all'], operator)).stdout);
    expect(json.entries).toEqual([expect.objectContaining({ kind: 'manual-block', subjectId: item.id, session: { id: s.id, name: 'blocker' } })]);

    const none = await runInProcess(['attention', '--kind', 'silent-holder', '--human'], operator);
    expect(none.stdout).toContain('Nothing needs attention.');

    const refused = await runInProcess(['attention'], { COORD_URL: t.base, COORD_TOKEN: s.token });
    expect(refused.code).not.toBe(0);
    expect(refused.stdout + refused.stderr).toMatch(/forbidden|operators/);
  });

  it('offers exactly the kinds the route knows for --kind', () => {
    expect([...KINDS]).toEqual([...ATTENTION_KINDS]);
  });
});
