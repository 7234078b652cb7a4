/**
 * `coord session …`: register, list and stop agent sessions (design brief §2). A session's
 * token is shown once, by `create`.
 */
import type { Session } from '@coord/sdk';
import { Command, Option } from 'commander';
import { sessionDetail, sessionTable, type Io } from '../output.js';
import { act, type Ctx } from '../runtime.js';

const examples = (lines: string[]) => `\nExamples:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`;

/** The `session` command group. */
export function sessionCommand(io: Io, setExit: (code: number) => void): Command {
  const run = <O>(fn: (ctx: Ctx<O>, ...args: any[]) => Promise<number | void>) => act<O>(io, setExit, fn);
  const session = new Command('session').description('Register, list and stop agent sessions').addHelpText(
    'after',
    examples(['coord session create --name agent-1', 'export COORD_TOKEN=$(coord session create --name agent-1 -q)', 'coord session list', 'coord session stop s-…']),
  );

  session
    .command('create')
    .description('Register a session and print its token (shown once)')
    .option('--name <name>', 'a display name')
    .option('--parent <id>', 'register it as a child of this session (a session’s own children default to itself)')
    .option('--system-kind <kind>', 'users only, e.g. orchestrator: its children anchor to themselves')
    .option('--agent <id>', 'bind it to a registered Agent: it may then claim that Agent’s task graph subtasks (coord worker)')
    .option('-q, --quiet', 'print only the token')
    .addHelpText(
      'after',
      examples([
        'coord session create --name agent-1',
        'coord session create --name reviewer --parent s-0123456789abcdef',
        'export COORD_TOKEN=$(coord session create --name agent-1 -q)',
        'coord session create --name backend-worker --agent agent-backend -q',
      ]),
    )
    .action(
      run<{ name?: string; parent?: string; systemKind?: string; agent?: string; quiet?: boolean }>(async (ctx) => {
        const o = ctx.opts;
        const r = await ctx.client().sessions.create({ name: o.name, parentId: o.parent, systemKind: o.systemKind, agentId: o.agent });
        if (o.quiet) return ctx.out.line(r.token);
        ctx.out.result(
          [
            `Created session ${r.session.id} (${r.session.name}), scope ${r.session.scope}`,
            `Token (shown once): ${r.token}`,
            `Act as it with: export COORD_TOKEN=${r.token}`,
          ],
          r,
        );
      }),
    );

  session
    .command('list')
    .alias('ls')
    .description('List sessions (users see all; a session sees its subtree)')
    .addOption(new Option('--status <status>').choices(['active', 'stopped', 'deleted']))
    .addHelpText('after', examples(['coord session list', 'coord session list --status active --json']))
    .action(
      run<{ status?: Session['status'] }>(async (ctx) => {
        const sessions = await ctx.client().sessions.listAll({ status: ctx.opts.status });
        ctx.out.result(sessionTable(sessions), { sessions });
      }),
    );

  session
    .command('get')
    .alias('show')
    .description('Show one session')
    .argument('<id>')
    .addHelpText('after', examples(['coord session get s-0123456789abcdef', 'coord session get s-0123456789abcdef --json']))
    .action(
      run(async (ctx, id: string) => {
        const s = await ctx.client().sessions.get(id);
        ctx.out.result(sessionDetail(s), { session: s });
      }),
    );

  for (const [name, verb, desc] of [
    ['stop', 'Stopped', 'Stop a session: its token stops working and its claimed items reopen'],
    ['rm', 'Deleted', 'Soft-delete a session (like stop; it then reads deleted)'],
  ] as const) {
    session
      .command(name)
      .description(desc)
      .argument('<id>')
      .addHelpText('after', examples([`coord session ${name} s-0123456789abcdef`]))
      .action(
        run(async (ctx, id: string) => {
          const c = ctx.client();
          const r = name === 'stop' ? await c.sessions.stop(id) : await c.sessions.delete(id);
          const n = r.reopened.length;
          ctx.out.result(`${verb} ${r.session.id}${n ? `; reopened ${n} item${n === 1 ? '' : 's'}: ${r.reopened.join(', ')}` : ''}`, r);
        }),
      );
  }

  return session;
}
