/**
 * `client.audit`: who did what (`GET /v1/audit`, operators only). Every change Coord writes an event for, newest
 * first, with the principal that made it and the name of its token.
 */
import { collectPages, type Transport } from './transport.js';
import type { AuditEntry, AuditPage, AuditQuery } from './types.js';

export class AuditApi {
  constructor(private readonly t: Transport) {}

  /**
   * One page, newest first; filters combine with AND (`actorKind`, `actorId`, `actorToken`,
   * `subjectId`, `topic`, `since` inclusive and `until` exclusive, ISO 8601). Pass `nextCursor`
   * back as `cursor`. Errors: `Forbidden` (a session), `ValidationFailed`, `InvalidCursor`.
   */
  async list(query: Partial<AuditQuery> = {}): Promise<AuditPage> {
    return this.t.unwrap('GET /v1/audit', this.t.api.GET('/v1/audit', { params: { query: query as AuditQuery } }));
  }

  /** Every entry matching `query`, newest first, following `nextCursor` to the end. */
  async listAll(query: Partial<AuditQuery> = {}): Promise<AuditEntry[]> {
    return collectPages(async (cursor) => {
      const page = await this.list({ ...query, cursor });
      return { rows: page.entries, nextCursor: page.nextCursor };
    }, query.cursor);
  }
}
