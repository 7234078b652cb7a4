/**
 * `client.tokens`: your bearer tokens (`/v1/tokens`). Every principal manages its own; operators
 * may also list and revoke anyone's. Secrets are returned only by `create` and `rotate`.
 */
import type { Transport } from './transport.js';
import type { Token, TokenList, TokenWithSecret } from './types.js';

export class TokensApi {
  constructor(private readonly t: Transport) {}

  /**
   * Your unrevoked tokens, newest first (`includeRevoked` adds the latest revoked ones). An operator
   * may pass `principal` (a user or session id), or `principalKind: 'user'` for every operator's.
   * Errors: `Forbidden` (a session naming another principal), `ValidationFailed` (both given).
   */
  async list(query: { principal?: string; principalKind?: 'user'; includeRevoked?: boolean } = {}): Promise<Token[]> {
    const q = {
      principal: query.principal,
      principalKind: query.principalKind,
      includeRevoked: query.includeRevoked === undefined ? undefined : (String(query.includeRevoked) as 'true' | 'false'),
    };
    const r: TokenList = await this.t.unwrap('GET /v1/tokens', this.t.api.GET('/v1/tokens', { params: { query: q } }));
    return r.tokens;
  }

  /**
   * A new token for you, named `name` (unique among your unrevoked tokens), optionally expiring
   * `expiresIn` (e.g. `"30d"`, counted by the database clock) from now. The `secret` is in this
   * result only. Errors: `ValidationFailed`, `Conflict` (`token_name_taken`, `token_limit_reached`).
   */
  async create(input: { name: string; expiresIn?: string }): Promise<TokenWithSecret> {
    return this.t.unwrap('POST /v1/tokens', this.t.api.POST('/v1/tokens', { body: input }));
  }

  /**
   * A new secret for one of your own tokens; the old one is refused at once on every replica.
   * `expiresIn` sets a new expiry, `null` removes it, omitted keeps it. Errors: `NotFound`
   * (`token_not_found`), `InvalidTransition` (revoked, or expired with the expiry kept).
   */
  async rotate(id: string, input: { expiresIn?: string | null } = {}): Promise<TokenWithSecret> {
    return this.t.unwrap('POST /v1/tokens/{id}/rotate', this.t.api.POST('/v1/tokens/{id}/rotate', { params: { path: { id } }, body: input }));
  }

  /**
   * Revokes a token (refused at once on every replica; its streams end). Idempotent. Errors:
   * `NotFound` (`token_not_found`), `Conflict` (`last_operator_token`).
   */
  async revoke(id: string): Promise<Token> {
    return this.t.unwrap('DELETE /v1/tokens/{id}', this.t.api.DELETE('/v1/tokens/{id}', { params: { path: { id } } }));
  }
}
