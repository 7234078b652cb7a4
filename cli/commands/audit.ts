/**
 * `coord audit`: who did what (`GET /v1/audit`, operators only), newest first, with
 * the filters of the route. `--all` follows the pages to the end.
 */
import type { AuditEntry, AuditQuery } from '@coord/sdk';
import { Command, Option } from 'commander';
import { table, type Io } from '../output.js';
import { act, UsageError, type Ctx } from '../runtime.js';

const examples = (lines: string[]) => `\nExamples:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`;

function limitArg(v: string): number {
  if (!/^\d+$/.test(v) || Number(v) < 1 || Number(v) > 500) throw new UsageError(`--limit must be a whole number from 1 to 500 (got "${v}")`);
  return Number(v);
}

/** `todo:<scope>` and `audit:…` topics as given; a bare scope becomes `todo:<scope>`. */
const topicOf = (t: string) => (t.startsWith('todo:') || t.startsWith('audit:') ? t : `todo:${t}`);

function auditTable(entries: AuditEntry[]): string[] {
  if (entries.length === 0) return ['No audit entries.'];
  return table(
    ['SEQ', 'AT', 'ACTOR', 'TOKEN', 'EVENT', 'SUBJECT', 'TOPIC'],
    entries.map((e) => [
      String(e.seq),
      e.at,
      e.actor ? `${e.actor.kind} ${e.actor.id}` : '(unknown)',
      e.actor?.token ?? '-',
      e.event,
      e.subjectId ?? '-',
      e.topic,
    ]),
  );
}

type Opts = {
  actor?: string;
  actorKind?: AuditQuery['actorKind'];
  actorToken?: string;
  subject?: string;
  topic?: string;
  since?: string;
  until?: string;
  limit?: number;
  cursor?: string;
  all?: boolean;
};

/** The `audit` command. */
export function auditCommand(io: Io, setExit: (code: number) => void): Command {
  const run = <O>(fn: (ctx: Ctx<O>, ...args: any[]) => Promise<number | void>) => act<O>(io, setExit, fn);
  return new Command('audit')
    .description('Who did what: every stored change with the principal and token that made it, newest first (operators)')
    .option('--actor <id>', 'a user or session id, or a system job (sweep:lease, …)')
    .addOption(new Option('--actor-kind <kind>', 'user, session or system').choices(['user', 'session', 'system']))
    .option('--actor-token <name>', 'the name of the token used (default, ci, …)')
    .option('--subject <id>', 'the object: an item, scenario, graph, metagit node (<graph>/<node>), token, session or Agent id')
    .option('--topic <topic>', 'todo:<scope> (or just the scope), audit:tokens, audit:sessions, audit:agents, audit:teams, audit:intents')
    .option('--since <time>', 'from this instant, ISO 8601 with offset (e.g. 2026-12-03T09:00:00Z)')
    .option('--until <time>', 'before this instant, ISO 8601 with offset')
    .option('--limit <n>', 'page size, 1–500 (default 100)', limitArg)
    .addOption(new Option('--cursor <cursor>', 'continue from a page’s nextCursor').conflicts('all'))
    .option('--all', 'follow every page to the end')
    .addHelpText(
      'after',
      examples([
        'coord audit --subject td-0123456789abcdef',
        'coord audit --actor s-0123456789abcdef --since 2026-12-03T00:00:00Z',
        'coord audit --topic audit:tokens --all --json',
      ]),
    )
    .action(
      run<Opts>(async (ctx) => {
        const o = ctx.opts;
        const query: Partial<AuditQuery> = {
          actorId: o.actor,
          actorKind: o.actorKind,
          actorToken: o.actorToken,
          subjectId: o.subject,
          topic: o.topic === undefined ? undefined : topicOf(o.topic),
          since: o.since,
          until: o.until,
          limit: o.limit,
          cursor: o.cursor,
        };
        const audit = ctx.client().audit;
        if (o.all) {
          const entries = await audit.listAll(query);
          return ctx.out.result(auditTable(entries), { entries, nextCursor: null });
        }
        const page = await audit.list(query);
        const lines = auditTable(page.entries);
        if (page.nextCursor) lines.push(`(more: coord audit … --cursor ${page.nextCursor}, or --all)`);
        ctx.out.result(lines, page);
      }),
    );
}
