/** Bad input gets a clear problem and loses nothing (docs/architecture.md §D5). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

const count = async () => (await t.sql`select count(*)::int as n from todos`)[0].n as number;

describe('bad input', () => {
  it('should refuse unknown fields and wrong types with validation_failed naming the field', async () => {
    const s = await t.session();
    const before = await count();
    const unknown = await s.client.post('/v1/todos', { title: 'x', colour: 'red' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.code).toBe('validation_failed');
    expect(unknown.body.detail).toContain('colour');
    const wrong = await s.client.post('/v1/todos', { title: 42 });
    expect(wrong.status).toBe(400);
    expect(wrong.body.errors[0].path).toBe('body.title');
    const tags = await s.client.post('/v1/todos', { title: 'x', tags: 'a' });
    expect(tags.body.errors[0].path).toBe('body.tags');
    expect(await count()).toBe(before);
  });

  it('should refuse a 600-byte title and a 3,000-byte note and accept multi-byte text at the byte limit', async () => {
    const s = await t.session();
    const before = await count();
    const long = await s.client.post('/v1/todos', { title: 'x'.repeat(600) });
    expect(long.status).toBe(422);
    expect(long.body).toMatchObject({ code: 'title_too_long', limit: 500 });
    const note = await s.client.post('/v1/todos', { title: 'x', note: 'n'.repeat(3000) });
    expect(note.body.code).toBe('note_too_long');
    // 166 × "€" (3 bytes) = 498 bytes + "ab" = 500 bytes exactly: accepted; one more byte is not.
    const exact = `ab${'€'.repeat(166)}`;
    expect(Buffer.byteLength(exact)).toBe(500);
    expect((await s.client.post('/v1/todos', { title: exact })).status).toBe(201);
    expect((await s.client.post('/v1/todos', { title: `${exact}c` })).body.code).toBe('title_too_long');
    const noteExact = 'é'.repeat(1000);
    expect((await s.client.post('/v1/todos', { title: 'n', note: noteExact })).status).toBe(201);
    expect((await s.client.post('/v1/todos', { title: 'n', note: `${noteExact}x` })).body.code).toBe('note_too_long');
    expect(await count()).toBe(before + 2);
  });

  it('should answer a missing or invalid token with 401 and a WWW-Authenticate challenge', async () => {
    const anon = await t.admin.as('').post('/v1/todos', { title: 'x' });
    expect(anon.status).toBe(401);
    expect(anon.body.code).toBe('unauthorized');
    expect(anon.headers.get('www-authenticate')).toContain('Bearer');
    const bad = await t.admin.as('coord_nope').get('/v1/todos');
    expect(bad.status).toBe(401);
  });

  it('should refuse malformed JSON, an oversized body and a non-JSON content type', async () => {
    const s = await t.session();
    const before = await count();
    const broken = await s.client.req('POST', '/v1/todos', '{"title": ', { 'content-type': 'application/json' });
    expect(broken.status).toBe(400);
    expect(broken.body.code).toBe('malformed_json');
    const huge = await s.client.post('/v1/todos', { title: 'x', note: 'y'.repeat(2 * 1024 * 1024) });
    expect(huge.status).toBe(413);
    expect(huge.body.code).toBe('payload_too_large');
    const text = await s.client.req('POST', '/v1/todos', 'title=x', { 'content-type': 'text/plain' });
    expect(text.status).toBe(415);
    expect(text.headers.get('content-type')).toContain('application/problem+json');
    expect(await count()).toBe(before);
  });

  it('should answer an unknown route with a not_found problem', async () => {
    const r = await t.admin.get('/v1/nothing-here');
    expect(r.status).toBe(404);
    expect(r.body.code).toBe('not_found');
  });

  it('should refuse a stale If-Match with 412 and leave the item unchanged', async () => {
    const s = await t.session();
    const item = (await s.client.post('/v1/todos', { title: 'x' })).body.item;
    const r = await s.client.patch(`/v1/todos/${item.id}`, { title: 'y' }, { 'if-match': '"7"' });
    expect(r.status).toBe(412);
    expect(r.body).toMatchObject({ code: 'revision_mismatch', revision: 1 });
    expect((await s.client.get(`/v1/todos/${item.id}`)).body.item.title).toBe('x');
    expect((await s.client.patch(`/v1/todos/${item.id}`, { title: 'y' }, { 'if-match': 'bogus' })).status).toBe(400);
  });

  it('should refuse a user listing without a scope with no_session_context', async () => {
    const r = await t.admin.get('/v1/todos');
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('no_session_context');
    const nonsense = await t.admin.get('/v1/todos?scope=nonsense');
    expect(nonsense.body.code).toBe('invalid_scope');
    expect(nonsense.body.detail).toContain('metagit:<id>');
    const form = await t.admin.post('/v1/todos', 'title=x', { 'content-type': 'application/x-www-form-urlencoded' });
    expect([form.status, form.body.code]).toEqual([415, 'unsupported_media_type']);
    expect(form.body.detail).toContain('content-type: application/json');
    expect((await t.admin.get('/v1/todos?scope=session:s-unknown')).status).toBe(404);
  });
});
