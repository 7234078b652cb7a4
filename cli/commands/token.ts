/**
 * `coord token …`: list, create, rotate and revoke bearer tokens (`/v1/tokens`). A
 * secret is printed only by `create` and `rotate`.
 */
import type { Token } from '@coord/sdk';
import { Command, Option } from 'commander';
import { readStored, writeStored } from '../config.js';
import { table, type Io } from '../output.js';
import { act, type Ctx } from '../runtime.js';

const examples = (lines: string[]) => `\nExamples:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`;
const dash = (v: string | null | undefined) => v ?? '-';

function tokenTable(tokens: Token[]): string[] {
  if (tokens.length === 0) return ['No tokens.'];
  return table(
    ['ID', 'NAME', 'STATE', 'OWNER', 'EXPIRES', 'ROTATED', 'CREATED', ''],
    tokens.map((k) => [
      k.id,
      k.name,
      k.state,
      `${k.principal.kind} ${k.principal.id}`,
      dash(k.expiresAt),
      dash(k.rotatedAt),
      k.createdAt,
      k.current ? '(this one)' : '',
    ]),
  );
}

/**
 * After rotating the token this CLI is using: the old secret is refused from now on, so the one
 * saved by `coord login` is replaced with the new secret (same URL); a token from `--token` or
 * COORD_TOKEN cannot be updated here, so the user is told to replace it.
 */
function keepUsing(ctx: Ctx, secret: string): void {
  const c = ctx.config();
  if (c.source.token === 'file') {
    writeStored(c.file, { ...readStored(c.file), token: secret });
    ctx.out.note(`saved the new secret in ${c.file} (the token coord login stored was this one)`);
  } else {
    ctx.out.note(
      `warning: the token you called with (${c.source.token === 'flag' ? '--token' : 'COORD_TOKEN'}) was this one and is now refused; use the new secret`,
    );
  }
}

/** The `token` command group. */
export function tokenCommand(io: Io, setExit: (code: number) => void): Command {
  const run = <O>(fn: (ctx: Ctx<O>, ...args: any[]) => Promise<number | void>) => act<O>(io, setExit, fn);
  const token = new Command('token')
    .description('List, create, rotate and revoke your bearer tokens')
    .addHelpText('after', examples(['coord token list', 'coord token create ci --expires-in 30d', 'coord token rotate tk-…', 'coord token revoke tk-…']));

  token
    .command('list')
    .alias('ls')
    .description('Your unrevoked tokens, newest first (operators: --principal for someone else’s)')
    .addOption(new Option('--principal <id>', 'a user or session id (operators only)').conflicts('operators'))
    .option('--operators', 'every operator’s tokens (operators only)')
    .option('--all', 'include revoked tokens')
    .addHelpText('after', examples(['coord token list', 'coord token list --principal s-0123456789abcdef --all', 'coord token list --operators']))
    .action(
      run<{ principal?: string; operators?: boolean; all?: boolean }>(async (ctx) => {
        const tokens = await ctx
          .client()
          .tokens.list({ principal: ctx.opts.principal, principalKind: ctx.opts.operators ? 'user' : undefined, includeRevoked: ctx.opts.all || undefined });
        ctx.out.result(tokenTable(tokens), { tokens });
      }),
    );

  const printSecret = (ctx: Ctx<{ quiet?: boolean }>, verb: string, r: { token: Token; secret: string }) => {
    if (ctx.opts.quiet) return ctx.out.line(r.secret);
    ctx.out.result(
      [
        `${verb} token ${r.token.id} (${r.token.name})${r.token.expiresAt ? `, expires ${r.token.expiresAt}` : ', no expiry'}`,
        `Secret (shown once): ${r.secret}`,
      ],
      r,
    );
  };

  token
    .command('create <name>')
    .alias('new')
    .description('Create a token for yourself, with the same authority; prints its secret once')
    .option('--expires-in <duration>', 'refuse it after this long, by the server’s database clock (e.g. 12h, 30d; 1s – 3650d)')
    .option('-q, --quiet', 'print only the secret')
    .addHelpText('after', examples(['coord token create laptop', 'coord token create ci --expires-in 30d -q']))
    .action(
      run<{ expiresIn?: string; quiet?: boolean }>(async (ctx, name: string) => {
        printSecret(ctx, 'Created', await ctx.client().tokens.create({ name, expiresIn: ctx.opts.expiresIn }));
      }),
    );

  token
    .command('rotate <id>')
    .description('Give one of your tokens a new secret (the old one is refused at once); prints it once')
    .option('--expires-in <duration>', 'a new expiry from now (default: keep the current one)')
    .addOption(new Option('--no-expiry', 'remove the expiry').conflicts('expiresIn'))
    .option('-q, --quiet', 'print only the secret')
    .addHelpText('after', examples(['coord token rotate tk-0123456789abcdef', 'coord token rotate tk-… --expires-in 90d -q']))
    .action(
      run<{ expiresIn?: string; expiry?: boolean; quiet?: boolean }>(async (ctx, id: string) => {
        const expiresIn = ctx.opts.expiry === false ? null : ctx.opts.expiresIn;
        const r = await ctx.client().tokens.rotate(id, expiresIn === undefined ? {} : { expiresIn });
        if (r.token.current) keepUsing(ctx, r.secret);
        printSecret(ctx, 'Rotated', r);
      }),
    );

  token
    .command('revoke <id>')
    .description('Revoke a token: refused at once on every replica (sessions: their own; operators: anyone’s)')
    .addHelpText('after', examples(['coord token revoke tk-0123456789abcdef']))
    .action(
      run(async (ctx, id: string) => {
        const k = await ctx.client().tokens.revoke(id);
        ctx.out.result(`Revoked token ${k.id} (${k.name}) of ${k.principal.kind} ${k.principal.id}`, k);
      }),
    );

  return token;
}
