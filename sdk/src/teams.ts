/**
 * `client.teams`: teams and their operators (`/v1/teams`). The server administrator
 * (an operator with role `admin`) creates teams and reads any; an operator reads its own team and
 * adds operators to it. Sessions manage no team (`Forbidden`). Secrets are returned only by
 * `create` and `addOperator`, once.
 */
import type { Transport } from './transport.js';
import type { CreatedTeam, OperatorWithSecret, Team, TeamDetail, TeamList } from './types.js';

export class TeamsApi {
  constructor(private readonly t: Transport) {}

  /**
   * Creates team `name` with its first operator (`operator.name`) and that operator's `default`
   * token, in one transaction; `secret` is in this result only. The server administrator only.
   * Errors: `Forbidden` (not the administrator), `ValidationFailed`, `Conflict` (`team_name_taken`).
   */
  async create(input: { name: string; operator: { name: string } }): Promise<CreatedTeam> {
    return this.t.unwrap('POST /v1/teams', this.t.api.POST('/v1/teams', { body: input }));
  }

  /** The teams you may see, oldest first: every team for the administrator, your own otherwise. Errors: `Forbidden` (a session). */
  async list(): Promise<Team[]> {
    const r: TeamList = await this.t.unwrap('GET /v1/teams', this.t.api.GET('/v1/teams'));
    return r.teams;
  }

  /**
   * One team with its operators. Errors: `NotFound` (`not_found`: no such team, or another team
   * than yours unless you are the administrator), `Forbidden` (a session).
   */
  async get(id: string): Promise<TeamDetail> {
    return this.t.unwrap('GET /v1/teams/{id}', this.t.api.GET('/v1/teams/{id}', { params: { path: { id } } }));
  }

  /**
   * Adds an operator named `name` to team `teamId` (yours, or any for the administrator), with its
   * `default` token; `secret` is in this result only. Errors: `NotFound`, `Forbidden` (a session),
   * `ValidationFailed`.
   */
  async addOperator(teamId: string, input: { name: string }): Promise<OperatorWithSecret> {
    return this.t.unwrap('POST /v1/teams/{id}/operators', this.t.api.POST('/v1/teams/{id}/operators', { params: { path: { id: teamId } }, body: input }));
  }
}
