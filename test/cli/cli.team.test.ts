/**
 * `coord team create|list|show|add-operator`, in process against a real app: the
 * administrator creates a team and its operator's secret is printed once and works; that operator
 * sees only its own team, adds an operator, and is refused creating teams; exit codes and output
 * follow `coord token`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { runInProcess } from './helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

describe('coord team', () => {
  it('should create a team as the administrator, print its operator’s secret once, and let that operator see and grow only its own team', async () => {
    const admin = { COORD_URL: t.base, COORD_TOKEN: t.admin.token! };
    const created = await runInProcess(['team', 'create', 'gamma', '--operator', 'gil', '--human'], admin);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toMatch(/^Created team tm-[0-9a-f]{16} \(gamma\) with its first operator u-[0-9a-f]{16} \(gil\)$/m);
    const secret = /Secret \(shown once\): (\S+)/.exec(created.stdout)![1];
    expect(secret).toMatch(/^coord_/);
    expect(created.stdout).toContain(`coord login --url ${t.base} --token <secret>`);
    const gil = { COORD_URL: t.base, COORD_TOKEN: secret };
    const me = (await t.admin.as(secret).get('/v1/me')).body;
    expect(me).toMatchObject({ kind: 'user', name: 'gil', role: 'operator' });
    const gamma = me.teamId as string;

    // -q prints only the secret; --json (the default with COORD_TOKEN) the whole answer.
    const quiet = await runInProcess(['team', 'create', 'delta', '--operator', 'dan', '-q'], admin);
    expect(quiet.code, quiet.stderr).toBe(0);
    expect(quiet.stdout).toMatch(/^coord_\S+\n$/);
    const json = JSON.parse((await runInProcess(['team', 'new', 'epsilon', '--operator', 'eve'], admin)).stdout);
    expect(json).toMatchObject({
      team: { name: 'epsilon', operatorCount: 1 },
      operator: { name: 'eve', role: 'operator' },
      token: { name: 'default' },
      secret: expect.stringMatching(/^coord_/),
    });

    // The administrator lists every team; the operator only its own.
    const all = JSON.parse((await runInProcess(['team', 'list'], admin)).stdout).teams;
    expect(all.map((x: { name: string }) => x.name)).toEqual(['default', 'gamma', 'delta', 'epsilon']);
    const mine = await runInProcess(['team', 'ls', '--human'], gil);
    expect(mine.code, mine.stderr).toBe(0);
    const lines = mine.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ID +NAME +OPERATORS +CREATED +CREATED BY$/);
    expect(lines.slice(1)).toHaveLength(1);
    expect(lines[1]).toMatch(new RegExp(`^${gamma} +gamma +1 `));

    // show: the own team by default (from /v1/me); another team is not_found, as a missing one.
    const shown = await runInProcess(['team', 'show', '--human'], gil);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout.split('\n')[0]).toBe(`${gamma}  gamma`);
    expect(shown.stdout).toMatch(/^ {2}ID +NAME +ROLE +CREATED$/m);
    expect(shown.stdout).toMatch(new RegExp(`^  ${me.id} +gil +operator `, 'm'));
    const delta = all.find((x: { name: string }) => x.name === 'delta').id;
    for (const id of [delta, 'tm-0000000000000000']) {
      const other = await runInProcess(['team', 'show', id, '--human'], gil);
      expect(other.code).toBe(1);
      expect(other.stderr).toBe(`error: no team "${id}"; GET /v1/teams lists the teams you may see (not_found)\n`);
    }
    expect(JSON.parse((await runInProcess(['team', 'show', delta], admin)).stdout)).toMatchObject({ id: delta, operators: [{ name: 'dan' }] });

    // add-operator: to its own team; the new secret works.
    const added = await runInProcess(['team', 'add-operator', gamma, 'Gail Two', '--human'], gil);
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toMatch(new RegExp(`^Added operator u-[0-9a-f]{16} \\(Gail Two\\) to team ${gamma}$`, 'm'));
    const gail = /Secret \(shown once\): (\S+)/.exec(added.stdout)![1];
    expect((await t.admin.as(gail).get('/v1/me')).body).toMatchObject({ name: 'Gail Two', teamId: gamma });
    expect(JSON.parse((await runInProcess(['team', 'show'], gil)).stdout).operators.map((o: { name: string }) => o.name)).toEqual(['gil', 'Gail Two']);
    const foreign = await runInProcess(['team', 'add-operator', delta, 'x'], gil);
    expect(foreign.code).toBe(1);
    expect(JSON.parse(foreign.stderr).error).toMatchObject({ status: 404, code: 'not_found' });

    // whoami names the team and the role.
    expect((await runInProcess(['whoami', '--human'], gil)).stdout).toContain(`team  ${gamma} (role operator)`);
  });

  it('should refuse what the caller may not do with exit 1, and a wrong invocation with exit 2', async () => {
    const made = (await t.admin.post('/v1/teams', { name: 'zeta', operator: { name: 'zed' } })).body;
    const zed = { COORD_URL: t.base, COORD_TOKEN: made.secret };
    const refused = await runInProcess(['team', 'create', 'eta', '--operator', 'x', '--human'], zed);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('only the server administrator creates teams');
    expect(refused.stderr).toContain('(forbidden)');

    const admin = { COORD_URL: t.base, COORD_TOKEN: t.admin.token! };
    const taken = await runInProcess(['team', 'create', 'zeta', '--operator', 'y'], admin);
    expect(taken.code).toBe(1);
    expect(JSON.parse(taken.stderr).error).toMatchObject({ status: 409, code: 'team_name_taken' });
    const invalid = await runInProcess(['team', 'create', 'not a name', '--operator', 'y', '--human'], admin);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toContain('(validation_failed)');
    expect(invalid.stderr).toContain('body.name');

    const noOperator = await runInProcess(['team', 'create', 'theta'], admin);
    expect(noOperator.code).toBe(2);
    expect(noOperator.stderr).toContain("required option '--operator <name>'");
    expect((await runInProcess(['team', 'add-operator', made.team.id], admin)).code).toBe(2);

    const s = await t.session({ name: 'cli-team-agent' });
    const session = await runInProcess(['team', 'list'], { COORD_URL: t.base, COORD_TOKEN: s.token });
    expect(session.code).toBe(1);
    expect(JSON.parse(session.stderr).error).toMatchObject({ status: 403, code: 'forbidden' });
    expect((await t.admin.get('/v1/teams')).body.teams.map((x: { name: string }) => x.name)).not.toContain('eta');
  });
});
