/**
 * `coord attention`: what is stuck in the team, why, since when, and the request that resolves
 * it (`GET /v1/attention`, operators only), oldest first. `--all` follows the pages to the end.
 */
import type { AttentionEntry, AttentionQuery } from '@coord/sdk';
import { Command, Option } from 'commander';
import { table, type Io } from '../output.js';
import { act, UsageError, type Ctx } from '../runtime.js';

const examples = (lines: string[]) => `\nExamples:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`;

/** The kinds of GET /v1/attention (the OpenAPI enum; test/cli/cli.attention.test.ts holds them equal). */
export const KINDS = [
  'expired-claim',
  'silent-holder',
  'reserved-for-gone',
  'manual-block',
  'graph-subtask-ended',
  'metagit-node-blocked',
  'scenario-member-waiting',
] as const;

function limitArg(v: string): number {
  if (!/^\d+$/.test(v) || Number(v) < 1 || Number(v) > 500) throw new UsageError(`--limit must be a whole number from 1 to 500 (got "${v}")`);
  return Number(v);
}

/** `s` cut to `n` characters, with an ellipsis (a long block note would widen every row). */
const cut = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

function attentionTable(entries: AttentionEntry[]): string[] {
  if (entries.length === 0) return ['Nothing needs attention.'];
  return table(
    ['SINCE', 'KIND', 'SUBJECT', 'TITLE', 'SESSION', 'DETAIL', 'NEXT'],
    entries.map((e) => [
      e.since,
      e.kind,
      e.subjectId,
      e.title,
      e.session ? (e.session.name ?? e.session.id) : '-',
      cut(e.detail ?? '-', 80),
      e.actions.map((a) => `${a.action}: ${a.method} ${a.path}`).join('; ') || '-',
    ]),
  );
}

type Opts = { kind?: AttentionQuery['kind']; limit?: number; cursor?: string; all?: boolean };

/** The `attention` command. */
export function attentionCommand(io: Io, setExit: (code: number) => void): Command {
  const run = <O>(fn: (ctx: Ctx<O>, ...args: any[]) => Promise<number | void>) => act<O>(io, setExit, fn);
  return new Command('attention')
    .description('What is stuck in your team, why, since when and the request that resolves it, oldest first (operators)')
    .addOption(new Option('--kind <kind>', 'only entries of this kind').choices([...KINDS]))
    .option('--limit <n>', 'page size, 1–500 (default: list_limit)', limitArg)
    .addOption(new Option('--cursor <cursor>', 'continue from a page’s nextCursor').conflicts('all'))
    .option('--all', 'follow every page to the end')
    .addHelpText('after', examples(['coord attention', 'coord attention --kind expired-claim --all --json']))
    .action(
      run<Opts>(async (ctx) => {
        const o = ctx.opts;
        const query: Partial<AttentionQuery> = { kind: o.kind, limit: o.limit, cursor: o.cursor };
        const attention = ctx.client().attention;
        if (o.all) {
          const entries = await attention.listAll(query);
          return ctx.out.result(attentionTable(entries), { entries, nextCursor: null });
        }
        const page = await attention.list(query);
        const lines = attentionTable(page.entries);
        if (page.nextCursor) lines.push(`(more: coord attention … --cursor ${page.nextCursor}, or --all)`);
        ctx.out.result(lines, page);
      }),
    );
}
