/**
 * Safe retries with `Idempotency-Key` (IETF draft-ietf-httpapi-idempotency-key-header):
 * real HTTP against a real Postgres. A repeat replays the first answer and writes nothing; another
 * body under the key is 409 `idempotency_key_reused`; a repeat while the first runs is 409
 * `idempotency_key_in_progress`; 503/429 are not remembered; keys are per principal and expire on
 * the database clock; the table holds neither the keys nor the answers in the clear.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { canonicalJson, parseIdempotencyKey, requestFingerprint } from '../../src/idempotency/idempotency.fingerprint.js';
import { answerKey, keyHash, openAnswer, sealAnswer } from '../../src/idempotency/idempotency.seal.js';
import { runSweep } from '../../src/sweeps/sweeps.js';
import { addItem, startTestApp, type Client, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  // A short busy_timeout so a held row lock turns into a 503 `busy` quickly.
  t = await startTestApp({ config: { dbPoolMax: 40 }, todo: { busyTimeoutMs: 200 } });
});
afterAll(async () => t?.close());

let n = 0;
const key = () => `test-key-${Date.now()}-${n++}`;
const K = (k: string) => ({ 'idempotency-key': k });

async function scopeItems(c: Client) {
  const r = await c.get('/v1/todos');
  expect(r.status).toBe(200);
  return r.body.items as { id: string; title: string; status: string; revision: number }[];
}

async function keyRows(): Promise<number> {
  const [{ n: count }] = await t.sql<{ n: number }[]>`select count(*)::int as n from idempotency_keys`;
  return count;
}

describe('replay', () => {
  it('should create once and replay the same status, body and ETag, marked replayed', async () => {
    const s = await t.session();
    const k = key();
    const a = await s.client.post('/v1/todos', { title: 'once' }, K(k));
    expect(a.status).toBe(201);
    expect(a.headers.get('idempotent-replayed')).toBeNull();
    const b = await s.client.post('/v1/todos', { title: 'once' }, K(k));
    expect(b.status).toBe(201);
    expect(b.headers.get('idempotent-replayed')).toBe('true');
    expect(b.body).toEqual(a.body);
    expect(b.headers.get('etag')).toBe(a.headers.get('etag'));
    expect(b.headers.get('content-type')).toBe(a.headers.get('content-type'));
    expect((await scopeItems(s.client)).filter((i) => i.title === 'once')).toHaveLength(1);
  });

  it('should take the key order and spacing of the body as the same request, and the quoted form of the key as the same key', async () => {
    const s = await t.session();
    const k = key();
    const a = await s.client.post('/v1/todos', '{"title":"same","tags":["x"]}', K(k));
    const b = await s.client.post('/v1/todos', '{ "tags": ["x"],  "title": "same" }', K(`"${k}"`));
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.headers.get('idempotent-replayed')).toBe('true');
    expect(b.body.item.id).toBe(a.body.item.id);
    expect(await scopeItems(s.client)).toHaveLength(1);
  });

  it('should replay a claim and a done without running them again', async () => {
    const s = await t.session();
    const item = await addItem(s.client, 'state');
    const kc = key();
    const c1 = await s.client.post(`/v1/todos/${item.id}/claim`, undefined, K(kc));
    expect(c1.status).toBe(200);
    const c2 = await s.client.post(`/v1/todos/${item.id}/claim`, undefined, K(kc));
    expect(c2.status).toBe(200);
    expect(c2.headers.get('idempotent-replayed')).toBe('true');
    expect(c2.body).toEqual(c1.body);
    expect(c2.headers.get('etag')).toBe(c1.headers.get('etag'));
    expect((await s.client.get(`/v1/todos/${item.id}`)).body.item.revision).toBe(c1.body.item.revision);

    const kd = key();
    const d1 = await s.client.post(`/v1/todos/${item.id}/done`, {}, K(kd));
    expect(d1.status).toBe(200);
    const d2 = await s.client.post(`/v1/todos/${item.id}/done`, {}, K(kd));
    expect(d2.status).toBe(200);
    expect(d2.headers.get('idempotent-replayed')).toBe('true');
    expect(d2.body).toEqual(d1.body);
    // Done again without a key runs the handler: done → done is not a transition.
    const d3 = await s.client.post(`/v1/todos/${item.id}/done`, {});
    expect(d3.status).toBe(409);
    expect(d3.body.code).toBe('invalid_transition');
    const events = await s.client.get(`/v1/events/log?topic=${encodeURIComponent(`todo:session:${s.id}`)}&after=0`);
    expect(events.status).toBe(200);
    const names = (events.body.events as { event: string; data: { id: string } }[]).filter((e) => e.data.id === item.id).map((e) => e.event);
    expect(names.filter((e) => e === 'claimed')).toHaveLength(1);
    expect(names.filter((e) => e === 'done')).toHaveLength(1);
  });

  it('should replay a refusal (422, 409) as final, even after the state changed', async () => {
    const s = await t.session();
    const k = key();
    const a = await s.client.post('/v1/todos', { title: 'child', parentId: 'td-nope' }, K(k));
    expect(a.status).toBe(422);
    expect(a.body.code).toBe('parent_not_found');
    const b = await s.client.post('/v1/todos', { title: 'child', parentId: 'td-nope' }, K(k));
    expect(b.status).toBe(422);
    expect(b.headers.get('idempotent-replayed')).toBe('true');
    expect(b.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(b.body).toEqual(a.body);

    const other = await t.session({ parentId: s.id, by: s.client });
    const item = await addItem(s.client, 'taken');
    expect((await other.client.post(`/v1/todos/${item.id}/claim`)).status).toBe(200);
    const kc = key();
    const lost = await s.client.post(`/v1/todos/${item.id}/claim`, undefined, K(kc));
    expect(lost.body.code).toBe('already_claimed');
    expect((await other.client.post(`/v1/todos/${item.id}/reopen`, {})).status).toBe(200);
    const again = await s.client.post(`/v1/todos/${item.id}/claim`, undefined, K(kc));
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('already_claimed');
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect((await s.client.get(`/v1/todos/${item.id}`)).body.item.status).toBe('todo');
  });
});

describe('conflicts', () => {
  it('should answer 409 idempotency_key_reused for another body, path or method under the key, and write nothing', async () => {
    const s = await t.session();
    const k = key();
    expect((await s.client.post('/v1/todos', { title: 'first' }, K(k))).status).toBe(201);
    const other = await s.client.post('/v1/todos', { title: 'second' }, K(k));
    expect(other.status).toBe(409);
    expect(other.body).toMatchObject({ code: 'idempotency_key_reused', firstRequest: 'POST /v1/todos' });
    expect(other.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const item = (await scopeItems(s.client))[0];
    const path = await s.client.post(`/v1/todos/${item.id}/claim`, undefined, K(k));
    expect(path.status).toBe(409);
    expect(path.body.code).toBe('idempotency_key_reused');
    const titles = (await scopeItems(s.client)).map((i) => i.title);
    expect(titles).toEqual(['first']);
    expect((await s.client.get(`/v1/todos/${item.id}`)).body.item.status).toBe('todo');
  });

  it('should keep the keys of different principals apart', async () => {
    const a = await t.session();
    const b = await t.session();
    const k = key();
    const ra = await a.client.post('/v1/todos', { title: 'mine' }, K(k));
    const rb = await b.client.post('/v1/todos', { title: 'mine' }, K(k));
    expect(ra.status).toBe(201);
    expect(rb.status).toBe(201);
    expect(rb.headers.get('idempotent-replayed')).toBeNull();
    expect(rb.body.item.id).not.toBe(ra.body.item.id);
    // And a different body from the other principal is not "reused" either.
    const rc = await b.client.post('/v1/todos', { title: 'theirs' }, K(key()));
    expect(rc.status).toBe(201);
  });

  it('should refuse a malformed key with 400 invalid_idempotency_key, before anything runs', async () => {
    const s = await t.session();
    for (const bad of ['', 'a'.repeat(256), ' ', 'tab\there', 'caf\u00e9', '"unterminated\\"']) {
      const r = await s.client.post('/v1/todos', { title: 'never' }, K(bad));
      expect(r.status, JSON.stringify(bad)).toBe(400);
      expect(r.body.code).toBe('invalid_idempotency_key');
    }
    expect(await scopeItems(s.client)).toHaveLength(0);
    const ok = await s.client.post('/v1/todos', { title: 'long key' }, K('k'.repeat(255)));
    expect(ok.status).toBe(201);
  });

  it('should answer 409 idempotency_key_in_progress with Retry-After for a pending key, and run nothing', async () => {
    // A pending row is what a request still running leaves, or a replica that died between its
    // commit and recording the answer (docs/reference/http-api.md "Safe retries").
    const s = await t.session();
    const k = key();
    const fp = requestFingerprint('POST', '/v1/todos', { title: 'pending' });
    await t.sql`insert into idempotency_keys (principal, key_hash, request, fingerprint, expires_at)
                values (${`session:${s.id}`}, ${keyHash(`session:${s.id}`, k)}, 'POST /v1/todos', ${fp}, now() + interval '1 hour')`;
    const r = await s.client.post('/v1/todos', { title: 'pending' }, K(k));
    expect(r.status).toBe(409);
    expect(r.body.code).toBe('idempotency_key_in_progress');
    expect(r.headers.get('retry-after')).toBe('1');
    expect(Date.parse(r.body.expiresAt)).toBeGreaterThan(Date.now());
    const other = await s.client.post('/v1/todos', { title: 'something else' }, K(k));
    expect(other.body.code).toBe('idempotency_key_reused');
    expect(await scopeItems(s.client)).toHaveLength(0);
  });

  it('should ignore the key on a read-only POST (graph validation) and leave requests without a key alone', async () => {
    const s = await t.session();
    const before = await keyRows();
    const k = key();
    const v1 = await s.client.post('/v1/graphs/validate', {}, K(k));
    const v2 = await s.client.post('/v1/graphs/validate', { other: true }, K(k));
    expect(v2.status).toBe(v1.status);
    expect(v2.headers.get('idempotent-replayed')).toBeNull();
    expect((await s.client.post('/v1/todos', { title: 'plain' })).status).toBe(201);
    expect((await s.client.post('/v1/todos', { title: 'plain' })).status).toBe(201);
    expect(await keyRows()).toBe(before);
  });
});

describe('races', () => {
  it('should write once when 16 identical requests race with one key; the rest replay or are in progress', async () => {
    for (let round = 0; round < 5; round++) {
      const s = await t.session();
      const k = key();
      const rs = await Promise.all(Array.from({ length: 16 }, () => s.client.post('/v1/todos', { title: 'race' }, K(k))));
      const created = rs.filter((r) => r.status === 201);
      expect(created.length).toBeGreaterThanOrEqual(1);
      expect(new Set(created.map((r) => r.body.item.id)).size).toBe(1);
      expect(created.filter((r) => r.headers.get('idempotent-replayed') !== 'true')).toHaveLength(1);
      for (const r of rs.filter((x) => x.status !== 201)) expect([r.status, r.body.code]).toEqual([409, 'idempotency_key_in_progress']);
      expect(await scopeItems(s.client)).toHaveLength(1);
    }
  });

  it('should write exactly one of 16 conflicting bodies racing with one key', async () => {
    for (let round = 0; round < 5; round++) {
      const s = await t.session();
      const k = key();
      const rs = await Promise.all(Array.from({ length: 16 }, (_, i) => s.client.post('/v1/todos', { title: `body ${i}` }, K(k))));
      const created = rs.filter((r) => r.status === 201);
      expect(created).toHaveLength(1);
      for (const r of rs.filter((x) => x.status !== 201)) {
        expect(r.status).toBe(409);
        expect(['idempotency_key_reused', 'idempotency_key_in_progress']).toContain(r.body.code);
      }
      const items = await scopeItems(s.client);
      expect(items.map((i) => i.title)).toEqual([created[0].body.item.title]);
    }
  });
});

describe('what is not remembered', () => {
  it('should not store a 503: the retry with the same key runs again', async () => {
    const s = await t.session();
    const item = await addItem(s.client, 'locked');
    const k = key();
    // Hold the item's row lock: the claim waits busy_timeout (200 ms) and answers 503 busy.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    const tx = t.sql.begin(async (q) => {
      await q`select id from todos where id = ${item.id} for update`;
      locked();
      await held;
    });
    await isLocked;
    const first = await s.client.post(`/v1/todos/${item.id}/claim`, undefined, K(k));
    release();
    await tx;
    expect(first.status).toBe(503);
    expect(first.body.code).toBe('busy');
    const [{ n: rows }] = await t.sql<{ n: number }[]>`select count(*)::int as n from idempotency_keys where key_hash = ${keyHash(`session:${s.id}`, k)}`;
    expect(rows).toBe(0);
    const second = await s.client.post(`/v1/todos/${item.id}/claim`, undefined, K(k));
    expect(second.status).toBe(200);
    expect(second.headers.get('idempotent-replayed')).toBeNull();
    expect(second.body.item.status).toBe('in-progress');
  });

  it('should not store a 429 (the limiter answers before the key is read)', async () => {
    const limited = await startTestApp({ config: { rateLimit: 2, rateLimitWindowMs: 600_000 } });
    try {
      const s = await limited.session(); // 1 request of the operator's budget
      const k = key();
      const rs = [];
      for (let i = 0; i < 4; i++) rs.push(await s.client.post('/v1/todos', { title: 'limited' }, K(k)));
      expect(rs.map((r) => r.status)).toEqual([201, 201, 429, 429]);
      expect(rs[1].headers.get('idempotent-replayed')).toBe('true');
      const [{ n: rows }] = await limited.sql<{ n: number }[]>`select count(*)::int as n from idempotency_keys`;
      expect(rows).toBe(1);
    } finally {
      await limited.close();
    }
  });
});

describe('expiry', () => {
  it('should forget a key once its TTL has passed on the database clock, and the sweep purges it', async () => {
    const short = await startTestApp({ config: { idempotencyTtlMs: 1000 } });
    try {
      const s = await short.session();
      const k = key();
      const a = await s.client.post('/v1/todos', { title: 'ttl' }, K(k));
      expect(a.status).toBe(201);
      const [{ ttl }] = await short.sql<
        { ttl: number }[]
      >`select extract(epoch from expires_at - created_at)::float8 as ttl from idempotency_keys where key_hash = ${keyHash(`session:${s.id}`, k)}`;
      expect(ttl).toBeCloseTo(1, 3);
      // Wait for the database clock, not ours, to pass expires_at.
      for (;;) {
        const [{ expired }] = await short.sql<
          { expired: boolean }[]
        >`select expires_at <= now() as expired from idempotency_keys where key_hash = ${keyHash(`session:${s.id}`, k)}`;
        if (expired) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      const b = await s.client.post('/v1/todos', { title: 'ttl' }, K(k));
      expect(b.status).toBe(201);
      expect(b.headers.get('idempotent-replayed')).toBeNull();
      expect(b.body.item.id).not.toBe(a.body.item.id);
      expect(await scopeItems(s.client)).toHaveLength(2);
      // The taken-over row is live again; make it expire, then the sweep step deletes it.
      for (;;) {
        const [{ expired }] = await short.sql<{ expired: boolean }[]>`select bool_and(expires_at <= now()) as expired from idempotency_keys`;
        if (expired) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      const result = await runSweep(short.sql, short.config);
      expect(result.steps.find((x) => x.sweep === 'idempotency-keys')).toMatchObject({ ok: true, changed: 1 });
      const [{ n: rows }] = await short.sql<{ n: number }[]>`select count(*)::int as n from idempotency_keys`;
      expect(rows).toBe(0);
      const [run] = await short.sql`select changed from sweep_runs where sweep = 'idempotency-keys'`;
      expect(run.changed).toBe(1);
    } finally {
      await short.close();
    }
  });
});

describe('what the table holds', () => {
  /** Every row of idempotency_keys as text (bytea as hex), for searching. */
  async function rowsAsText(): Promise<string[]> {
    const rows = await t.sql<{ row: string }[]>`select k::text as row from idempotency_keys k`;
    return rows.map((r) => r.row);
  }
  /** The forms a secret could take in a row's text: as is, hex (bytea), base64. */
  const forms = (secret: string) => [secret, Buffer.from(secret).toString('hex'), Buffer.from(secret).toString('base64')];

  it('should store neither the key nor the one-time session token of POST /v1/sessions, and still replay the token', async () => {
    const k = `${crypto.randomUUID()}-session`;
    const a = await t.admin.post('/v1/sessions', { name: 'sealed' }, K(k));
    expect(a.status).toBe(201);
    const token: string = a.body.token;
    expect(token.length).toBeGreaterThan(16);
    const rows = await rowsAsText();
    expect(rows.some((r) => r.includes('POST /v1/sessions'))).toBe(true);
    for (const row of rows) {
      for (const secret of [...forms(k), ...forms(token)]) expect(row.includes(secret), `${secret} in ${row}`).toBe(false);
    }
    const b = await t.admin.post('/v1/sessions', { name: 'sealed' }, K(k));
    expect(b.status).toBe(201);
    expect(b.headers.get('idempotent-replayed')).toBe('true');
    expect(b.body.token).toBe(token);
    expect(b.body).toEqual(a.body);
    expect(b.headers.get('location')).toBe(a.headers.get('location'));
    // The replayed token works: it authenticates as the session.
    expect((await t.admin.as(token).get('/v1/todos')).status).toBe(200);
  });

  it('should answer 409 idempotency_key_reused, not a 500 or a second run, when a stored answer does not open', async () => {
    const s = await t.session();
    const k = key();
    const a = await s.client.post('/v1/todos', { title: 'sealed once' }, K(k));
    expect(a.status).toBe(201);
    const hash = keyHash(`session:${s.id}`, k);
    // Flip one byte of the ciphertext (past the 12-byte iv and 16-byte tag): the tag no longer matches.
    await t.sql`update idempotency_keys set answer = overlay(answer placing decode(lpad(to_hex(get_byte(answer, 28) # 1), 2, '0'), 'hex') from 29 for 1) where key_hash = ${hash}`;
    const b = await s.client.post('/v1/todos', { title: 'sealed once' }, K(k));
    expect(b.status).toBe(409);
    expect(b.body).toMatchObject({ code: 'idempotency_key_reused', firstRequest: 'POST /v1/todos' });
    expect(b.body.detail).toMatch(/could not be decrypted/);
    // The status is bound to the sealed answer too: an edited status does not open either.
    const k2 = key();
    expect((await s.client.post('/v1/todos', { title: 'status bound' }, K(k2))).status).toBe(201);
    await t.sql`update idempotency_keys set status = 200 where key_hash = ${keyHash(`session:${s.id}`, k2)}`;
    expect((await s.client.post('/v1/todos', { title: 'status bound' }, K(k2))).body.code).toBe('idempotency_key_reused');
    expect((await scopeItems(s.client)).map((i) => i.title).sort()).toEqual(['sealed once', 'status bound']);
  });

  it('should derive a lookup hash and an encryption key that differ per principal and key, and open only with the right one', () => {
    const h = keyHash('session:a', 'k');
    expect(h).toMatch(/^[0-9a-f]{64}$/);
    expect(keyHash('session:b', 'k')).not.toBe(h);
    expect(keyHash('session:a', 'k2')).not.toBe(h);
    const secret = answerKey('session:a', 'k');
    expect(secret).toHaveLength(32);
    expect(secret.toString('hex')).not.toBe(h);
    expect(answerKey('session:b', 'k').equals(secret)).toBe(false);
    const ctx = { keyHash: h, status: 201, fingerprint: 'f', request: 'POST /v1/x' };
    const sealed = sealAnswer(secret, ctx, { etag: '"1"' }, Buffer.from('{"token":"s3cret"}'));
    expect(sealed.includes(Buffer.from('s3cret'))).toBe(false);
    expect(openAnswer(secret, ctx, sealed)).toEqual({ headers: { etag: '"1"' }, body: Buffer.from('{"token":"s3cret"}') });
    expect(openAnswer(answerKey('session:a', 'other'), ctx, sealed)).toBeNull();
    expect(openAnswer(secret, { ...ctx, fingerprint: 'g' }, sealed)).toBeNull();
    expect(openAnswer(secret, ctx, sealed.subarray(0, 20))).toBeNull();
    // A fresh iv each time: the same answer never seals to the same bytes.
    expect(sealAnswer(secret, ctx, {}, Buffer.alloc(0)).equals(sealAnswer(secret, ctx, {}, Buffer.alloc(0)))).toBe(false);
  });
});

describe('configuration and fingerprint', () => {
  const env = (extra: Record<string, string>) => ({ COORD_DATA_DIR: '/tmp/coord-idempotency-test', ...extra });
  it('should default COORD_IDEMPOTENCY_TTL to 24 h, read a duration, and refuse one under 1 s or over 30 d', () => {
    expect(loadConfig(env({})).idempotencyTtlMs).toBe(86_400_000);
    expect(loadConfig(env({ COORD_IDEMPOTENCY_TTL: '10m' })).idempotencyTtlMs).toBe(600_000);
    expect(() => loadConfig(env({ COORD_IDEMPOTENCY_TTL: '10ms' }))).toThrow(/COORD_IDEMPOTENCY_TTL must be at least 1000 ms/);
    expect(() => loadConfig(env({ COORD_IDEMPOTENCY_TTL: '31d' }))).toThrow(/COORD_IDEMPOTENCY_TTL must be at most/);
    expect(() => loadConfig(env({ COORD_IDEMPOTENCY_TTL: 'soon' }))).toThrow(/COORD_IDEMPOTENCY_TTL/);
  });

  it('should canonicalise bodies (sorted keys, any depth) and parse bare and quoted keys', () => {
    expect(canonicalJson({ b: [1, { d: null, c: 'x' }], a: true })).toBe('{"a":true,"b":[1,{"c":"x","d":null}]}');
    expect(canonicalJson(undefined)).toBe('');
    let deep: unknown = 0;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(canonicalJson(deep)).toHaveLength(200_001);
    expect(requestFingerprint('POST', '/v1/x?b=2&a=1', { y: 1, x: 2 })).toBe(requestFingerprint('POST', '/v1/x?a=1&b=2', { x: 2, y: 1 }));
    expect(requestFingerprint('POST', '/v1/x', {})).not.toBe(requestFingerprint('POST', '/v1/y', {}));
    expect(parseIdempotencyKey('abc')).toBe('abc');
    expect(parseIdempotencyKey('"abc"')).toBe('abc');
    expect(parseIdempotencyKey('"a\\"b"')).toBe('a"b');
    expect(parseIdempotencyKey('"a"b"')).toBeNull();
    expect(parseIdempotencyKey('')).toBeNull();
  });
});
