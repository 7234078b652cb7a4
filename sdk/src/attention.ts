/**
 * `client.attention`: what is stuck in the team, why, and the request that resolves it
 * (`GET /v1/attention`, operators only), oldest condition first.
 */
import { collectPages, type Transport } from './transport.js';
import type { AttentionEntry, AttentionPage, AttentionQuery } from './types.js';

export class AttentionApi {
  constructor(private readonly t: Transport) {}

  /**
   * One page, oldest condition first: `expired-claim`, `silent-holder`, `reserved-for-gone`,
   * `manual-block`, `graph-subtask-ended`, `metagit-node-blocked`, `scenario-member-waiting`
   * (filter with `kind`); each entry's `actions` are the
   * requests that resolve it. Pass `nextCursor` back as `cursor`. Errors: `Forbidden` (a session),
   * `ValidationFailed`, `InvalidCursor`.
   */
  async list(query: Partial<AttentionQuery> = {}): Promise<AttentionPage> {
    return this.t.unwrap('GET /v1/attention', this.t.api.GET('/v1/attention', { params: { query: query as AttentionQuery } }));
  }

  /** Every entry matching `query`, following `nextCursor` to the end. */
  async listAll(query: Partial<AttentionQuery> = {}): Promise<AttentionEntry[]> {
    return collectPages(async (cursor) => {
      const page = await this.list({ ...query, cursor });
      return { rows: page.entries, nextCursor: page.nextCursor };
    }, query.cursor);
  }
}
