/**
 * `coord team …`: create teams (the server administrator), list and show them, and add operators
 * (`/v1/teams`). A new operator's secret is printed only by `create` and
 * `add-operator`, once.
 */
import type { Team, TeamDetail, TeamOperator, Token } from '@coord/sdk';
import { Command } from 'commander';
import { table, type Io } from '../output.js';
import { act, type Ctx } from '../runtime.js';

const examples = (lines: string[]) => `\nExamples:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`;

function teamTable(teams: Team[]): string[] {
  if (teams.length === 0) return ['No teams.'];
  return table(
    ['ID', 'NAME', 'OPERATORS', 'CREATED', 'CREATED BY'],
    teams.map((x) => [x.id, x.name, String(x.operatorCount), x.createdAt, x.createdBy]),
  );
}

function teamDetail(x: TeamDetail): string[] {
  return [
    `${x.id}  ${x.name}`,
    `  created    ${x.createdAt} by ${x.createdBy}`,
    `  operators  ${x.operatorCount}`,
    '',
    ...table(
      ['ID', 'NAME', 'ROLE', 'CREATED'],
      x.operators.map((o) => [o.id, o.name, o.role, o.createdAt]),
    ).map((l) => `  ${l}`),
  ];
}

/** The team command group. */
export function teamCommand(io: Io, setExit: (code: number) => void): Command {
  const run = <O>(fn: (ctx: Ctx<O>, ...args: any[]) => Promise<number | void>) => act<O>(io, setExit, fn);
  const team = new Command('team')
    .description('Create teams (the server administrator), list and show them, and add operators')
    .addHelpText('after', examples(['coord team create platform --operator alice', 'coord team list', 'coord team show', 'coord team add-operator tm-… bob']));

  /** A new operator and its secret: the secret alone with -q, else what was made and the secret, once. */
  const printOperator = (ctx: Ctx<{ quiet?: boolean }>, first: string, r: { operator: TeamOperator; token: Token; secret: string }, machine: unknown) => {
    if (ctx.opts.quiet) return ctx.out.line(r.secret);
    ctx.out.result(
      [first, `Secret (shown once): ${r.secret}`, `(operator ${r.operator.name} signs in with: coord login --url ${ctx.config().url} --token <secret>)`],
      machine,
    );
  };

  team
    .command('create <name>')
    .alias('new')
    .description('Create a team with its first operator (the server administrator only); prints that operator’s secret once')
    .requiredOption('--operator <name>', 'the name of the team’s first operator')
    .option('-q, --quiet', 'print only the operator’s secret')
    .addHelpText('after', examples(['coord team create platform --operator alice', 'coord team create research --operator "Bo Chen" -q']))
    .action(
      run<{ operator: string; quiet?: boolean }>(async (ctx, name: string) => {
        const r = await ctx.client().teams.create({ name, operator: { name: ctx.opts.operator } });
        printOperator(ctx, `Created team ${r.team.id} (${r.team.name}) with its first operator ${r.operator.id} (${r.operator.name})`, r, r);
      }),
    );

  team
    .command('list')
    .alias('ls')
    .description('The teams you may see: every team for the server administrator, your own otherwise')
    .addHelpText('after', examples(['coord team list', 'coord team list --json']))
    .action(
      run(async (ctx) => {
        const teams = await ctx.client().teams.list();
        ctx.out.result(teamTable(teams), { teams });
      }),
    );

  team
    .command('show [id]')
    .description('A team with its operators (default: your own team)')
    .addHelpText('after', examples(['coord team show', 'coord team show tm-0123456789abcdef --json']))
    .action(
      run(async (ctx, id?: string) => {
        const client = ctx.client();
        const detail = await client.teams.get(id ?? (await client.me()).teamId);
        ctx.out.result(teamDetail(detail), detail);
      }),
    );

  team
    .command('add-operator <teamId> <name>')
    .description('Add an operator to a team (your own; the server administrator: any); prints its secret once')
    .option('-q, --quiet', 'print only the new operator’s secret')
    .addHelpText('after', examples(['coord team add-operator tm-0123456789abcdef bob', 'coord team add-operator tm-… "Bo Chen" -q']))
    .action(
      run<{ quiet?: boolean }>(async (ctx, teamId: string, name: string) => {
        const r = await ctx.client().teams.addOperator(teamId, { name });
        printOperator(ctx, `Added operator ${r.operator.id} (${r.operator.name}) to team ${r.operator.teamId}`, r, r);
      }),
    );

  return team;
}
