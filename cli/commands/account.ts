/**
 * `coord login|logout|whoami` and `coord admin config|reload`.
 * `login` checks the token against the server, then saves URL and token to the config file
 * with mode 0600 (cli/config.ts explains the precedence).
 */
import { createClient } from '@coord/sdk';
import { Command } from 'commander';
import { DEFAULT_URL, readStored, removeStored, writeStored } from '../config.js';
import type { Io } from '../output.js';
import { act, USER_AGENT, UsageError, type Ctx } from '../runtime.js';

const examples = (lines: string[]) => `\nExamples:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`;

async function readStdin(io: Io): Promise<string> {
  const stdin = io.stdin;
  if (!stdin || stdin.isTTY) return '';
  let text = '';
  for await (const chunk of stdin) text += String(chunk);
  return text.trim().split('\n')[0]?.trim() ?? '';
}

/** `login`, `logout`, `whoami`, `admin`. */
export function accountCommands(io: Io, setExit: (code: number) => void): Command[] {
  const run = <O>(fn: (ctx: Ctx<O>, ...args: any[]) => Promise<number | void>) => act<O>(io, setExit, fn);

  const login = new Command('login')
    .description('Check a token against the server and save the URL and token (config file, mode 0600)')
    .addHelpText(
      'after',
      `\nThe token comes from --token, or from stdin when piped. Saved values win over COORD_URL/COORD_TOKEN;
flags win over both. The file is $COORD_CLI_CONFIG, else $XDG_CONFIG_HOME/coord/config.json, else ~/.config/coord/config.json.${examples([
        'coord login --url http://127.0.0.1:3000 --token "$(cat .coord/admin-token)"',
        'coord login --url https://coord.example.com < token.txt',
      ])}`,
    )
    .action(
      run(async (ctx) => {
        const file = ctx.config().file;
        const stored = readStored(file);
        const url = (ctx.opts.url ?? ctx.io.env.COORD_URL ?? stored.url ?? DEFAULT_URL).replace(/\/+$/, '');
        const token = ctx.opts.token ?? (await readStdin(ctx.io));
        if (!token) throw new UsageError('no token: pass --token <token> or pipe it on stdin');
        const me = await createClient({ baseUrl: url, token, headers: { 'user-agent': USER_AGENT } }).me();
        writeStored(file, { url, token });
        ctx.out.result(`Logged in to ${url} as ${me.kind} ${me.name} (${me.id}); saved to ${file} (mode 0600)`, { url, file, me });
      }),
    );

  const logout = new Command('logout')
    .description('Delete the saved URL and token')
    .addHelpText('after', examples(['coord logout']))
    .action(
      run(async (ctx) => {
        const file = ctx.config().file;
        const removed = removeStored(file);
        ctx.out.result(removed ? `Removed ${file}` : `Not logged in (no ${file})`, { removed, file });
      }),
    );

  const whoami = new Command('whoami')
    .description('Show who the token belongs to, and where the URL and token came from')
    .addHelpText('after', examples(['coord whoami', 'coord whoami --token "$(cat .coord/admin-token)"']))
    .action(
      run(async (ctx) => {
        const c = ctx.config();
        const me = await ctx.client().me();
        ctx.out.result(
          [
            `${me.kind} ${me.name} (${me.id})${me.scope ? `, scope ${me.scope}` : ''}`,
            `team  ${me.teamId}${me.role ? ` (role ${me.role})` : ''}`,
            `url   ${c.url} (from ${c.source.url})`,
            `token from ${c.source.token}${c.source.token === 'file' ? ` (${c.file})` : ''}`,
          ],
          { ...me, url: c.url, source: c.source },
        );
      }),
    );

  const admin = new Command('admin')
    .description('Read and reload the server’s [todo] configuration (the server administrator only)')
    .addHelpText('after', examples(['coord admin config', 'coord admin reload']));
  admin
    .command('config')
    .description('Show the running [todo] configuration')
    .addHelpText('after', examples(['coord admin config', 'coord admin config --json']))
    .action(
      run(async (ctx) => {
        const r = await ctx.client().admin.config();
        ctx.out.result(
          Object.entries(r.todo).map(([k, v]) => `${k.padEnd(15)} ${v}`),
          r,
        );
      }),
    );
  admin
    .command('reload')
    .description('Re-read the reloadable [todo] keys (like SIGHUP)')
    .addHelpText('after', examples(['coord admin reload']))
    .action(
      run(async (ctx) => {
        const r = await ctx.client().admin.reload();
        const applied = Object.entries(r.applied).map(([k, v]) => `${k}=${v}`);
        ctx.out.result(
          [
            applied.length ? `Applied: ${applied.join(', ')}` : 'Nothing changed.',
            ...(r.restartRequired.length ? [`Needs a restart: ${r.restartRequired.join(', ')}`] : []),
          ],
          r,
        );
      }),
    );

  return [login, logout, whoami, admin];
}
