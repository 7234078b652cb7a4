/**
 * Typed errors: each error family the server can produce arrives as its class, chosen by
 * the problem `code` first and the status otherwise, with the problem's members kept.
 */
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AlreadyClaimed,
  ClaimRequiresSession,
  Conflict,
  ConnectionFailed,
  CoordError,
  createClient,
  DependencyBlocked,
  errorFromProblem,
  Forbidden,
  InvalidRequest,
  InvalidTransition,
  LeaseExpired,
  NotFound,
  ReservedForAssignee,
  RevisionMismatch,
  ServerError,
  TaskGraphInvalid,
  TodoReferenced,
  Unauthorized,
  Unavailable,
  ValidationFailed,
  type CoordClient,
} from '@coord/sdk';
import { startTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
let admin: CoordClient;
beforeAll(async () => {
  t = await startTestApp({ todo: { claimLeaseMs: 300 }, config: { maxStreams: 1 } });
  admin = createClient({ baseUrl: t.base, token: t.admin.token });
});
afterAll(async () => t?.close());

async function agent(parentId?: string, by: CoordClient = admin) {
  const { session, token } = await by.sessions.create(parentId ? { parentId } : {});
  return { id: session.id, client: createClient({ baseUrl: t.base, token }) };
}

/** The error a call rejects with (fails the test when it resolves). */
async function caught(p: Promise<unknown>): Promise<CoordError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(CoordError);
    return err as CoordError;
  }
  throw new Error('expected the call to fail');
}

describe('typed errors from the server', () => {
  it('should raise ValidationFailed with field errors for a schema violation', async () => {
    const a = await agent();
    const err = await caught(a.client.todos.list({ limit: 0 }));
    expect(err).toBeInstanceOf(ValidationFailed);
    expect(err).toBeInstanceOf(InvalidRequest);
    expect(err.status).toBe(400);
    expect((err as ValidationFailed).fieldErrors[0].path).toBe('querystring.limit');
  });

  it('should raise InvalidRequest for a 422 content problem', async () => {
    const a = await agent();
    const err = await caught(a.client.todos.add({ title: '   ' }));
    expect(err).toBeInstanceOf(InvalidRequest);
    expect(err).toMatchObject({ status: 422, code: 'title_required' });
  });

  it('should raise Unauthorized for an unknown token', async () => {
    const err = await caught(createClient({ baseUrl: t.base, token: 'coord_nope' }).me());
    expect(err).toBeInstanceOf(Unauthorized);
    expect(err.request).toBe('GET /v1/me');
  });

  it('should raise Forbidden, ClaimRequiresSession and ReservedForAssignee for authority refusals', async () => {
    const a = await agent();
    expect(await caught(a.client.admin.config())).toBeInstanceOf(Forbidden);
    const item = await a.client.todos.add({ title: 'x' });
    const userClaim = await caught(admin.todos.claim(item.id));
    expect(userClaim).toBeInstanceOf(ClaimRequiresSession);
    expect(userClaim).toBeInstanceOf(Forbidden);
    const child = await agent(a.id, a.client);
    const reserved = await a.client.todos.add({ title: 'for the root', assignee: a.id });
    expect(await caught(child.client.todos.claim(reserved.id))).toBeInstanceOf(ReservedForAssignee);
  });

  it('should raise NotFound for an unknown item and for a topic outside the caller’s scopes', async () => {
    const a = await agent();
    const b = await agent();
    const err = await caught(a.client.todos.get('td-doesnotexist'));
    expect(err).toBeInstanceOf(NotFound);
    expect(err.code).toBe('todo_not_found');
    expect(await caught(a.client.events.log(`session:${b.id}`))).toBeInstanceOf(NotFound);
  });

  it('should raise the Conflict classes: AlreadyClaimed, DependencyBlocked, InvalidTransition, TodoReferenced', async () => {
    const root = await agent();
    const other = await agent(root.id, root.client);
    const dep = await root.client.todos.add({ title: 'dep' });
    const item = await root.client.todos.add({ title: 'item', dependsOn: [dep.id] });
    await other.client.todos.claim(dep.id);
    const lost = await caught(root.client.todos.claim(dep.id));
    expect(lost).toBeInstanceOf(AlreadyClaimed);
    expect(lost).toBeInstanceOf(Conflict);
    const blocked = await caught(root.client.todos.claim(item.id));
    expect(blocked).toBeInstanceOf(DependencyBlocked);
    expect((blocked as DependencyBlocked).blockedBy).toEqual([dep.id]);
    expect(await caught(root.client.todos.done(item.id))).toBeInstanceOf(InvalidTransition);
    expect(await caught(root.client.todos.remove(dep.id))).toBeInstanceOf(TodoReferenced);
  });

  it('should raise LeaseExpired when the owner acts after its claim lease lapsed', async () => {
    const a = await agent();
    const item = await a.client.todos.add({ title: 'slow' });
    await a.client.todos.claim(item.id);
    await new Promise((r) => setTimeout(r, 450));
    const err = await caught(a.client.todos.done(item.id));
    expect(err).toBeInstanceOf(LeaseExpired);
    expect(err.status).toBe(409);
  });

  it('should raise RevisionMismatch for a stale If-Match', async () => {
    const a = await agent();
    const item = await a.client.todos.add({ title: 'v1' });
    await a.client.todos.edit(item.id, { title: 'v2' });
    const err = await caught(a.client.todos.edit(item.id, { title: 'v3' }, { ifMatch: item.revision }));
    expect(err).toBeInstanceOf(RevisionMismatch);
    expect(err.status).toBe(412);
  });

  it('should raise Unavailable with retryAfterMs when the server refuses a stream over its cap, and wait that long', async () => {
    const a = await agent();
    const first = a.client.events.follow(`session:${a.id}`);
    const pending = first[Symbol.asyncIterator]().next();
    // Wait until the first stream holds the only slot, then follow again: 503 too_many_streams.
    for (let i = 0; i < 50 && t.app.coord.openStreams() < 1; i++) await new Promise((r) => setTimeout(r, 20));
    const refused = new Promise<{ cause: unknown; delayMs: number }>((resolve) => {
      const second = a.client.events.follow(`session:${a.id}`, {
        onReconnect: (info) => {
          second.close();
          resolve(info);
        },
      });
      void second[Symbol.asyncIterator]().next();
    });
    const { cause, delayMs } = await refused;
    expect(cause).toBeInstanceOf(Unavailable);
    expect(cause).toMatchObject({ code: 'too_many_streams', status: 503, retryAfterMs: 5000 });
    expect(delayMs).toBeGreaterThanOrEqual(5000);
    first.close();
    await pending;
  });

  it('should raise ConnectionFailed with status 0 when nothing listens', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const err = await caught(createClient({ baseUrl: `http://127.0.0.1:${port}`, token: 'x' }).me());
    expect(err).toBeInstanceOf(ConnectionFailed);
    expect(err.status).toBe(0);
    expect(err.detail).toContain('ECONNREFUSED');
  });
});

describe('typed errors from problem documents', () => {
  it('should map TASK_GRAPH_INVALID to TaskGraphInvalid with its stage', () => {
    const err = errorFromProblem(422, { code: 'TASK_GRAPH_INVALID', title: 'Task graph invalid', detail: 'x', stage: 'graph-validation' });
    expect(err).toBeInstanceOf(TaskGraphInvalid);
    expect(err).toBeInstanceOf(InvalidRequest);
    expect((err as TaskGraphInvalid).stage).toBe('graph-validation');
  });

  it('should fall back to the status family for a code the SDK does not know', () => {
    expect(errorFromProblem(409, { code: 'some_future_conflict' })).toBeInstanceOf(Conflict);
    expect(errorFromProblem(502, 'Bad gateway')).toBeInstanceOf(ServerError);
    expect(errorFromProblem(502, 'Bad gateway').code).toBe('http_502');
  });
});
