/**
 * `client.admin`: the running `[todo]` configuration and its reload (the server administrator only; docs/architecture.md §D6,
 * seed 000 "Configuration").
 */
import type { Transport } from './transport.js';
import type { ReloadResult, TodoConfigView } from './types.js';

export class AdminApi {
  constructor(private readonly t: Transport) {}

  /** The running `[todo]` keys, durations formatted (`GET /v1/admin/config`). Errors: `Forbidden` (not the server administrator). */
  async config(): Promise<TodoConfigView> {
    return this.t.unwrap('GET /v1/admin/config', this.t.api.GET('/v1/admin/config'));
  }

  /**
   * Re-reads the config file and `COORD_TODO_*` like SIGHUP (`POST /v1/admin/reload`): applies
   * claim_lease, retention, max_title, max_note and max_result; restart-only keys that changed are listed in
   * `restartRequired`. Errors: `Forbidden`, `ValidationFailed` (a bad value; nothing applied).
   */
  async reload(): Promise<ReloadResult> {
    return this.t.unwrap('POST /v1/admin/reload', this.t.api.POST('/v1/admin/reload'));
  }
}
