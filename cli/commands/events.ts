/**
 * `coord events follow|log`: a topic's events (docs/architecture.md §D4). `follow` keeps going across
 * disconnects and server restarts (the SDK reconnects with backoff and resumes from the last
 * event id) until interrupted, or until `--limit` events were printed.
 */
import { normalizeTopic, type CoordEvent } from '@coord/sdk';
import { Command } from 'commander';
import { eventLine, type Io } from '../output.js';
import { act, UsageError, type Ctx } from '../runtime.js';

const examples = (lines: string[]) => `\nExamples:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`;

function seqArg(name: string) {
  return (v: string) => {
    if (!/^\d+$/.test(v)) throw new UsageError(`${name} must be an event sequence number (got "${v}")`);
    return Number(v);
  };
}

/** The `events` command group. `signals` lets `main` stop a follow on SIGINT/SIGTERM. */
export function eventsCommand(io: Io, setExit: (code: number) => void, signals: { stop: AbortSignal }): Command {
  const run = <O>(fn: (ctx: Ctx<O>, ...args: any[]) => Promise<number | void>) => act<O>(io, setExit, fn);
  const events = new Command('events')
    .description('Read and follow a topic’s events (topic: todo:<scope>)')
    .addHelpText('after', examples(['coord events follow todo:session:s-0123456789abcdef', 'coord events log todo:session:s-0123456789abcdef --after 0']));

  events
    .command('follow')
    .description('Print a topic’s events as they happen; reconnects and resumes on its own')
    .argument('<topic>', 'todo:<scope>, or just the scope (session:s-…, scenario:<id>)')
    .option('--after <seq>', 'start after this sequence number (0 = everything retained); default: from now', seqArg('--after'))
    .option('--limit <n>', 'exit after printing this many events', seqArg('--limit'))
    .addHelpText(
      'after',
      `\nHuman output is one line per event; --json prints one JSON object per line.\n${examples([
        'coord events follow todo:session:s-0123456789abcdef',
        'coord events follow scenario:sc-0123456789abcdef --after 0 --json',
        'coord events follow todo:session:s-… --limit 1   # wait for the next event',
      ])}`,
    )
    .action(
      run<{ after?: number; limit?: number }>(async (ctx, topic: string) => {
        const { after, limit } = ctx.opts;
        if (limit === 0) return;
        const stream = ctx.client().events.follow(topic, {
          after,
          signal: signals.stop,
          onReconnect: ({ attempt, delayMs, cause, lastEventId }) =>
            ctx.out.note(`reconnecting in ${delayMs} ms (attempt ${attempt}, after #${lastEventId ?? 'head'}): ${describe(cause)}`),
        });
        let n = 0;
        for await (const e of stream) {
          print(ctx, e);
          n += 1;
          if (limit !== undefined && n >= limit) break;
        }
      }),
    );

  events
    .command('log')
    .description('Print a page of a topic’s stored events')
    .argument('<topic>', 'todo:<scope>, or just the scope')
    .option('--after <seq>', 'read after this sequence number (default 0: the oldest retained)', seqArg('--after'))
    .option('--limit <n>', 'page size, 1–1000 (default 100)', seqArg('--limit'))
    .option('--subject <id>', 'only the events about this item, graph or scenario id (its history)')
    .addHelpText(
      'after',
      examples([
        'coord events log todo:session:s-… --after 0',
        'coord events log session:s-… --after 120 --limit 50 --json',
        'coord events log session:s-… --subject td-…',
      ]),
    )
    .action(
      run<{ after?: number; limit?: number; subject?: string }>(async (ctx, topic: string) => {
        const page = await ctx.client().events.log(topic, { after: ctx.opts.after, limit: ctx.opts.limit, subjectId: ctx.opts.subject });
        const lines = page.events.map((e) => eventLine(e));
        if (page.resync) lines.unshift(`(resync: the cursor is no longer retained; re-read state, then continue after #${page.nextAfter})`);
        if (lines.length === 0) lines.push(`No events after #${ctx.opts.after ?? 0} on ${normalizeTopic(topic)}.`);
        ctx.out.result(lines, page);
      }),
    );

  return events;
}

function print(ctx: Ctx, e: CoordEvent) {
  if (ctx.out.json) ctx.out.jsonLine(e);
  else ctx.out.line(eventLine(e));
}

function describe(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}
