/**
 * `client.scopes`: the lists the caller may read, with their progress (`GET /v1/scopes`; seed 000
 * "In gr list"). Users see every scope; a session its own subtree's list and the scenario, graph
 * and metagit lists it is in.
 */
import { collectPages, type Transport } from './transport.js';
import type { ScopeList, ScopeSummary } from './types.js';

export class ScopesApi {
  constructor(private readonly t: Transport) {}

  /**
   * One page in scope order (`limit` ≤ list_limit, also the default); continue with `nextCursor`.
   * Each scope has `total`, `done`, `inProgress`, `blocked`, `todo` and `override` (whether the
   * caller may reopen, assign and block others' items there). Errors: `InvalidRequest` (invalid_cursor).
   */
  async list(query: { limit?: number; cursor?: string } = {}): Promise<ScopeList> {
    return this.t.unwrap('GET /v1/scopes', this.t.api.GET('/v1/scopes', { params: { query } }));
  }

  /** Every page of `list`, concatenated. */
  async listAll(): Promise<ScopeSummary[]> {
    return collectPages(async (cursor) => {
      const page = await this.list(cursor ? { cursor } : {});
      return { rows: page.scopes, nextCursor: page.nextCursor };
    });
  }
}
