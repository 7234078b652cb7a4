/**
 * `coord session …`: register, list and stop agent sessions (docs/architecture.md §D2). A session's
 * token is shown once, by `create`.
 */
import type { Session } from '@coord/sdk';
import { Command, Option } from 'commander';
import { durationMs } from '../duration.js';
import { sessionDetail, sessionTable, type Io } from '../output.js';
import { act, type Ctx } from '../runtime.js';

const examples = (lines: string[]) => `\nExamples:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`;

/** The `session` command group. */
export function sessionCommand(io: Io, setExit: (code: number) => void): Command {
  const run = <O>(fn: (ctx: Ctx<O>, ...args: any[]) => Promise<number | void>) => act<O>(io, setExit, fn);
  const session = new Command('session')
    .description('Register, list and stop agent sessions')
    .addHelpText(
      'after',
      examples([
        'coord session create --name agent-1',
        'export COORD_TOKEN=$(coord session create --name agent-1 --heartbeat-interval 30s -q)',
        'coord session list --alive false',
        'coord session heartbeat',
        'coord session stop s-…',
      ]),
    );

  session
    .command('create')
    .alias('new')
    .description('Register a session and print its token (shown once)')
    .option('--name <name>', 'a display name')
    .option('--parent <id>', 'register it as a child of this session (a session’s own children default to itself)')
    .option('--system-kind <kind>', 'users only, e.g. orchestrator: its children anchor to themselves')
    .option('--agent <id>', 'bind it to a registered Agent: it may then claim that Agent’s task graph subtasks (coord worker)')
    .option(
      '--heartbeat-interval <duration>',
      'auto-stop it after this long without a call (5s – 24h, e.g. 30s, 5m); idle agents run `coord session heartbeat`',
      durationMs,
    )
    .option('-q, --quiet', 'print only the token')
    .addHelpText(
      'after',
      examples([
        'coord session create --name agent-1',
        'coord session create --name reviewer --parent s-0123456789abcdef',
        'export COORD_TOKEN=$(coord session create --name agent-1 -q)',
        'coord session create --name backend-worker --agent agent-backend -q',
        'coord session new --name agent-2 --heartbeat-interval 30s',
      ]),
    )
    .action(
      run<{ name?: string; parent?: string; systemKind?: string; agent?: string; heartbeatInterval?: number; quiet?: boolean }>(async (ctx) => {
        const o = ctx.opts;
        const r = await ctx
          .client()
          .sessions.create({ name: o.name, parentId: o.parent, systemKind: o.systemKind, agentId: o.agent, heartbeatIntervalMs: o.heartbeatInterval });
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
    .description('List sessions with whether each is alive, when it was last seen and how many items it holds (users see all; a session sees its subtree)')
    .addOption(new Option('--status <status>').choices(['active', 'stopped', 'deleted']))
    .addOption(new Option('--alive <bool>', 'only sessions that are (true) or are not (false) alive').choices(['true', 'false']))
    .addHelpText('after', examples(['coord session list', 'coord session list --status active --json', 'coord session list --alive false']))
    .action(
      run<{ status?: Session['status']; alive?: 'true' | 'false' }>(async (ctx) => {
        const sessions = await ctx.client().sessions.listAll({ status: ctx.opts.status, alive: ctx.opts.alive });
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

  session
    .command('heartbeat')
    .description('Mark the calling session (COORD_TOKEN) seen now: keeps a session with a heartbeat interval alive while idle')
    .addHelpText('after', examples(['coord session heartbeat', 'while sleep 10; do coord session heartbeat -q; done']))
    .option('-q, --quiet', 'print nothing')
    .action(
      run<{ quiet?: boolean }>(async (ctx) => {
        const r = await ctx.client().sessions.heartbeat();
        if (ctx.opts.quiet) return;
        ctx.out.result(`Seen ${r.sessionId} at ${r.lastSeenAt}${r.autoStopAfter ? `; auto-stops if silent past ${r.autoStopAfter}` : ''}`, r);
      }),
    );

  for (const [name, verb, desc] of [
    ['stop', 'Stopped', 'Stop a session and its active descendants: their tokens stop working and their claimed items reopen'],
    ['rm', 'Deleted', 'Soft-delete a session (like stop; it then reads deleted, its descendants stopped)'],
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
          const d = r.stoppedDescendants.length;
          ctx.out.result(
            `${verb} ${r.session.id}${d ? `; stopped ${d} descendant${d === 1 ? '' : 's'}: ${r.stoppedDescendants.join(', ')}` : ''}` +
              `${n ? `; reopened ${n} item${n === 1 ? '' : 's'}: ${r.reopened.join(', ')}` : ''}`,
            r,
          );
        }),
      );
  }

  return session;
}
