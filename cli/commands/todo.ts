/**
 * `coord todo …`: the todo seed's everyday tool (seed 000, `gr todo add|list|claim|next|start|
 * done|block|reopen|rm|deps|export`), plus get, assign, heartbeat, edit, why and results.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import type { AddManyTodoItem, TodoItem } from '@coord/sdk';
import { Command, Option } from 'commander';
import { durationMs } from '../duration.js';
import { parseJson, readText } from '../input.js';
import { resultText, table, todoDetail, todoTable } from '../output.js';
import { act, EXIT, UsageError, type Ctx } from '../runtime.js';
import type { Io } from '../output.js';

interface ScopeOpts {
  scope?: string;
  scenario?: string;
  session?: string;
}

const collect = (v: string, prev: string[] = []) => [...prev, v];

/** `--scope`, `--scenario <name>` and `--session <id>` name one list; at most one may be given. */
function scopeOf(o: ScopeOpts): string | undefined {
  const given = [o.scope, o.scenario && `scenario:${o.scenario}`, o.session && `session:${o.session}`].filter(Boolean) as string[];
  if (given.length > 1) throw new UsageError('pass at most one of --scope, --scenario and --session');
  return given[0];
}

/** The options of a `next` as commander parses them. */
type NextOpts = ScopeOpts & { tag?: string[]; anyTag?: string[]; minPriority?: number; mine?: boolean; wait?: number };

function withScopeOptions(cmd: Command): Command {
  return cmd
    .option('--scope <scope>', 'the list: session:<id>, scenario:<name> or graph:<id> (default: your subtree root)')
    .option('--scenario <name>', 'a scenario’s shared list (same as --scope scenario:<name>)')
    .option('--session <id>', 'that session’s subtree list (same as --scope session:<id>)');
}

function int(name: string) {
  return (v: string) => {
    if (!/^\d+$/.test(v)) throw new UsageError(`${name} must be a non-negative integer (got "${v}")`);
    return Number(v);
  };
}

/** A signed integer option (e.g. `--priority -1`). */
function signedInt(name: string) {
  return (v: string) => {
    if (!/^-?\d+$/.test(v)) throw new UsageError(`${name} must be an integer (got "${v}")`);
    return Number(v);
  };
}

/** `--wait <duration>` (30s, 1500ms; ≤ 60s), sent as `waitMs`. */
function waitDuration(v: string): number {
  const ms = durationMs(v);
  if (ms > 60_000) throw new UsageError(`--wait is at most 60s (got "${v}")`);
  return ms;
}

const examples = (lines: string[]) => `\nExamples:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`;

/**
 * The items and scope of a `todo add-many` file: a bare array of items, or `{scope?, items}`. A
 * scope given on the command line must agree with the file's.
 */
function addManyDocument(doc: unknown, file: string, flagScope: string | undefined): { items: AddManyTodoItem[]; scope?: string } {
  const envelope = Array.isArray(doc) ? { items: doc } : (doc as { items?: unknown; scope?: unknown } | null);
  if (!envelope || typeof envelope !== 'object' || !Array.isArray(envelope.items)) {
    throw new UsageError(`${file === '-' ? 'stdin' : file} must hold a JSON array of items or an object {"scope"?, "items": [...]}`);
  }
  const fileScope = typeof envelope.scope === 'string' ? envelope.scope : undefined;
  if (flagScope && fileScope && flagScope !== fileScope) throw new UsageError(`the file's scope ${fileScope} differs from ${flagScope}; give one of them`);
  return { items: envelope.items as AddManyTodoItem[], scope: flagScope ?? fileScope };
}

/** The `todo` command group. */
export function todoCommand(io: Io, setExit: (code: number) => void): Command {
  const run = <O>(fn: (ctx: Ctx<O>, ...args: any[]) => Promise<number | void>) => act<O>(io, setExit, fn);
  const itemOut = (ctx: { out: Ctx['out'] }, item: TodoItem, human: string) => ctx.out.result(human, { item });

  const todo = new Command('todo')
    .description('Add, list, claim and finish todo items (the seed’s `gr todo`)')
    .addHelpText(
      'after',
      examples([
        'coord todo add "Wire the claim CAS" --tag backend --tag p1',
        'coord todo add "Publish" --depends-on td-api --depends-on td-ui',
        'coord todo list --status blocked',
        'coord todo next',
        'coord todo done td-…',
        'coord todo export scenario:strath',
      ]),
    );

  withScopeOptions(
    todo
      .command('add')
      .description('Add an item (to your subtree root’s list unless a scope is given)')
      .argument('<title>', 'the title (trimmed; 1..500 bytes)')
      .option('--note <text>', 'a note (≤ 2000 bytes)')
      .option('--tag <tag>', 'a tag (repeatable)', collect)
      .option('--parent <id>', 'make it a sub-item of this item (one level deep)')
      .option('--assignee <session>', 'reserve it for a session (another session needs override authority)')
      .option('--depends-on <id>', 'wait for this item (repeatable)', collect)
      .option('--priority <n>', 'higher is claimed first by next (−32768..32767; default 0)', signedInt('--priority'))
      .option('-q, --quiet', 'print only the new id'),
  )
    .addHelpText(
      'after',
      examples([
        'coord todo add "Wire the claim CAS" --tag backend --tag p1',
        'coord todo add "Write the regression test" --parent td-abc123',
        'coord todo add "Draft the release notes" --scenario strath',
        'coord todo add "Fix the prod outage" --priority 10',
        'API=$(coord todo add "Wire the API" -q)',
      ]),
    )
    .action(
      run<ScopeOpts & { note?: string; tag?: string[]; parent?: string; assignee?: string; dependsOn?: string[]; priority?: number; quiet?: boolean }>(
        async (ctx, title: string) => {
          const o = ctx.opts;
          const item = await ctx.client().todos.add({
            title,
            note: o.note,
            tags: o.tag,
            parentId: o.parent,
            assignee: o.assignee,
            dependsOn: o.dependsOn,
            priority: o.priority,
            scope: scopeOf(o),
          });
          if (o.quiet) return ctx.out.line(item.id);
          itemOut(ctx, item, `Added ${item.id}: ${item.title}${item.status === 'blocked' ? ` (${item.whyBlocked ?? 'blocked'})` : ''}`);
        },
      ),
    );

  withScopeOptions(
    todo
      .command('add-many')
      .description('Add many items at once from a JSON file or stdin: one transaction, all or nothing (POST /v1/todos/bulk)')
      .requiredOption('--file <path>', 'a JSON array of items, or {"scope", "items"}; `-` reads stdin')
      .option('-q, --quiet', 'print only the new ids, one a line, in file order'),
  )
    .addHelpText(
      'after',
      `\nEach item takes the fields of \`todo add\` (title, note, tags, parentId, assignee, dependsOn, priority) plus
\`ref\`, a name unique in the file that other items use in \`parentRef\` and \`dependsOn\`
(a dependsOn entry starting with td- is an existing item id, anything else a ref). At most
list_limit items (default 2000); one bad item refuses the whole file, naming its index and ref.
` +
        examples([
          `echo '[{"ref":"api","title":"Wire the API"},{"title":"Test it","dependsOn":["api"]}]' | coord todo add-many --file -`,
          'coord todo add-many --file plan.json --scenario strath',
          'coord todo add-many --file plan.json --json',
        ]),
    )
    .action(
      run<ScopeOpts & { file: string; quiet?: boolean }>(async (ctx) => {
        const o = ctx.opts;
        const doc = parseJson(await readText(ctx.io, o.file), o.file === '-' ? 'stdin' : o.file);
        const { items, scope } = addManyDocument(doc, o.file, scopeOf(o));
        const r = await ctx.client().todos.addMany(items, { scope });
        if (o.quiet) return ctx.out.line(r.items.map((i) => i.id));
        ctx.out.result([`Added ${r.items.length} item${r.items.length === 1 ? '' : 's'}`, ...(r.items.length ? todoTable(r.items) : [])], r);
      }),
    );

  withScopeOptions(
    todo
      .command('list')
      .alias('ls')
      .description('List items in position order (every page; sub-items indented)')
      .addOption(
        new Option('--status <status>', 'effective status: todo = ready only; blocked = manual blocks and dependency waiting').choices([
          'todo',
          'in-progress',
          'done',
          'blocked',
        ]),
      )
      .option('--tag <tag>', 'only items with this tag')
      .option('--owner <session>', 'only items claimed by this session (`me` = you)')
      .option('--assignee <session>', 'only items reserved for this session')
      .option('--all', 'every scope (users and orchestrator sessions)'),
  )
    .addHelpText(
      'after',
      examples([
        'coord todo list',
        'coord todo list --status blocked',
        'coord todo list --tag backend --json',
        'coord todo list --scenario strath',
        'coord todo list --all',
      ]),
    )
    .action(
      run<ScopeOpts & { status?: TodoItem['status']; tag?: string; owner?: string; assignee?: string; all?: boolean }>(async (ctx) => {
        const o = ctx.opts;
        const items = await ctx.client().todos.listAll({
          scope: scopeOf(o),
          status: o.status,
          tag: o.tag,
          owner: o.owner,
          assignee: o.assignee,
          all: o.all ? 'true' : undefined,
        });
        ctx.out.result(todoTable(items, Boolean(o.all)), { items });
      }),
    );

  todo
    .command('get')
    .alias('show')
    .description('Show one item')
    .argument('<id>')
    .addHelpText('after', examples(['coord todo get td-abc123', 'coord todo get td-abc123 --json']))
    .action(
      run(async (ctx, id: string) => {
        const item = await ctx.client().todos.get(id);
        itemOut(ctx, item, todoDetail(item).join('\n'));
      }),
    );

  const claimAction = run(async (ctx, id: string) => {
    const r = await ctx.client().todos.tryClaim(id);
    if (r.claimed && r.item) {
      ctx.out.result(`Claimed ${r.item.id}: ${r.item.title}`, { claimed: true, item: r.item });
      return EXIT.ok;
    }
    const why = r.reason!;
    ctx.out.result(`Item ${id} is not eligible to claim: ${why.detail}`, {
      claimed: false,
      id,
      code: why.code,
      detail: why.detail,
      ...(Array.isArray(why.problem.blockedBy) ? { blockedBy: why.problem.blockedBy } : {}),
    });
    return EXIT.nothingToClaim;
  });
  for (const [name, desc] of [
    ['claim', 'Claim an item: todo and unclaimed → in-progress, owned by you (atomic)'],
    ['start', 'Alias for claim'],
  ] as const) {
    todo
      .command(name)
      .description(desc)
      .argument('<id>')
      .addHelpText(
        'after',
        `\nExit code 3 when the item is not eligible (already claimed, waiting on dependencies, reserved for another session).${examples([`coord todo ${name} td-abc123`])}`,
      )
      .action(claimAction);
  }

  /** The options of a `next`: the scope and the filters, shared by `todo next` and `todo done --next`. */
  const withNextOptions = (cmd: Command) =>
    withScopeOptions(
      cmd
        .option('--tag <tag>', 'only items carrying this tag (repeatable: every one)', collect)
        .option('--any-tag <tag>', 'only items carrying at least one of these tags (repeatable)', collect)
        .option('--min-priority <n>', 'only items with priority ≥ n', signedInt('--min-priority'))
        .option('--mine', 'only items reserved for you (your assignee)')
        .option('--wait <duration>', 'wait up to this long (e.g. 30s; ≤ 60s) for an eligible item instead of answering at once', waitDuration),
    );
  const nextInput = (o: NextOpts) => ({
    scope: scopeOf(o),
    tags: o.tag,
    anyTags: o.anyTag,
    minPriority: o.minPriority,
    assignedToMe: o.mine || undefined,
    waitMs: o.wait,
  });

  withNextOptions(todo.command('next').description('Claim the next eligible item in your scope (highest priority, then lowest position, first)'))
    .addHelpText(
      'after',
      `\nExit code 3 when nothing is eligible. With --wait, after the wait.${examples([
        'coord todo next',
        'coord todo next --scenario strath',
        'coord todo next --tag gpu --min-priority 1',
        'coord todo next --mine --wait 60s',
        'coord todo next || echo "nothing to do"',
      ])}`,
    )
    .action(
      run<NextOpts>(async (ctx) => {
        const r = await ctx.client().todos.next(nextInput(ctx.opts));
        if (r.claimed && r.item) {
          ctx.out.result(`Claimed ${r.item.id}: ${r.item.title}`, r);
          return EXIT.ok;
        }
        ctx.out.result('No eligible items in scope.', r);
        return EXIT.nothingToClaim;
      }),
    );

  withNextOptions(
    todo
      .command('done')
      .description('Finish a claimed (or blocked) item; its waiting dependents become ready')
      .argument('<id>')
      .option('--result <text>', 'hand a text result on to its dependents (stored as a JSON string)')
      .option('--result-json <json>', 'hand a JSON value on to its dependents')
      .option('--result-file <path>', 'the result as JSON from a file (`-` = stdin)')
      .option('--next', 'then claim the next eligible item in the same request (one round trip; the scope and filter options below apply)'),
  )
    .addHelpText(
      'after',
      `\nA result is at most max_result bytes (default 16384) as JSON; dependents read it with \`coord todo results <their id>\`. Reopening clears it.
With --next, the next item is claimed right after the completion, as \`coord todo next\` would (exit code 3 when nothing was eligible; the item is done either way).${examples(
        [
          'coord todo done td-abc123',
          'coord todo done td-abc123 --result "merged as 4f2e1c"',
          `coord todo done td-abc123 --result-json '{"sha":"4f2e1c","files":3}'`,
          'coord todo done td-abc123 --result-file report.json',
          'coord todo done td-abc123 --next --tag gpu',
        ],
      )}`,
    )
    .action(
      run<NextOpts & { result?: string; resultJson?: string; resultFile?: string; next?: boolean }>(async (ctx, id: string) => {
        const o = ctx.opts;
        const given = [o.result, o.resultJson, o.resultFile].filter((v) => v !== undefined);
        if (given.length > 1) throw new UsageError('pass at most one of --result, --result-json and --result-file');
        let result: unknown;
        if (o.result !== undefined) result = o.result;
        else if (o.resultJson !== undefined || o.resultFile !== undefined) {
          const text = o.resultJson ?? (o.resultFile === '-' ? await readStdin(io) : readFile(o.resultFile!));
          try {
            result = JSON.parse(text);
          } catch (err) {
            throw new UsageError(`${o.resultJson !== undefined ? '--result-json' : '--result-file'} is not valid JSON: ${(err as Error).message}`);
          }
        }
        const body = result === undefined ? {} : { result };
        const nextOnly = (
          [
            ['--tag', o.tag],
            ['--any-tag', o.anyTag],
            ['--min-priority', o.minPriority],
            ['--mine', o.mine],
            ['--wait', o.wait],
            ['--scope', o.scope],
            ['--scenario', o.scenario],
            ['--session', o.session],
          ] as const
        ).filter(([, v]) => v !== undefined);
        if (!o.next && nextOnly.length)
          throw new UsageError(`${nextOnly.map(([n]) => n).join(', ')} only apply with --next (claim the next item in the same request)`);
        if (!o.next) {
          const item = await ctx.client().todos.done(id, body);
          itemOut(ctx, item, `Done ${item.id}: ${item.title}`);
          return EXIT.ok;
        }
        const r = await ctx.client().todos.done(id, { ...body, next: nextInput(o) });
        const claimed = r.next.claimed && r.next.item ? `Claimed ${r.next.item.id}: ${r.next.item.title}` : 'No eligible items in scope.';
        ctx.out.result(`Done ${r.item.id}: ${r.item.title}\n${claimed}`, r);
        return r.next.claimed ? EXIT.ok : EXIT.nothingToClaim;
      }),
    );

  todo
    .command('results')
    .description('Show an item’s dependencies with their status and the results their done handed on')
    .argument('<id>', 'the dependent item')
    .addHelpText('after', examples(['coord todo results td-publish', 'coord todo results td-publish --json']))
    .action(
      run(async (ctx, id: string) => {
        const r = await ctx.client().todos.dependencyResults(id);
        const human = r.dependencies.length
          ? table(
              ['ID', 'STATUS', 'TITLE', 'RESULT'],
              r.dependencies.map((d) => [d.id, d.status, d.title, resultText(d.result) ?? '-']),
            )
          : [`${id} has no dependencies`];
        ctx.out.result(human, r);
      }),
    );

  todo
    .command('block')
    .description('Block a claimed item, with an optional note')
    .argument('<id>')
    .argument('[note]', 'why (replaces the note)')
    .addHelpText('after', examples(['coord todo block td-abc123 "waiting on API review"']))
    .action(
      run(async (ctx, id: string, note?: string) => {
        const item = await ctx.client().todos.block(id, note);
        itemOut(ctx, item, `Blocked ${item.id}: ${item.title}${item.note ? ` (${item.note})` : ''}`);
      }),
    );

  todo
    .command('reopen')
    .description('Move an item back to todo and clear its owner')
    .argument('<id>')
    .addHelpText('after', examples(['coord todo reopen td-abc123']))
    .action(
      run(async (ctx, id: string) => {
        const item = await ctx.client().todos.reopen(id);
        itemOut(ctx, item, `Reopened ${item.id}: ${item.title}`);
      }),
    );

  todo
    .command('rm')
    .alias('remove')
    .description('Remove an item and its sub-items')
    .argument('<id>')
    .addHelpText('after', examples(['coord todo rm td-abc123']))
    .action(
      run(async (ctx, id: string) => {
        const r = await ctx.client().todos.remove(id);
        const subs = r.removed.length - 1;
        ctx.out.result(`Removed ${id}${subs > 0 ? ` and ${subs} sub-item${subs === 1 ? '' : 's'}` : ''}`, r);
      }),
    );

  todo
    .command('deps')
    .description('Replace an item’s dependency set; no ids clears it')
    .argument('<id>')
    .argument('[ids...]', 'the items it waits for')
    .addHelpText('after', examples(['coord todo deps td-publish td-api td-ui   # replace', 'coord todo deps td-publish                 # clear']))
    .action(
      run(async (ctx, id: string, ids: string[] = []) => {
        const item = await ctx.client().todos.setDependencies(id, ids);
        itemOut(ctx, item, item.dependsOn.length ? `${item.id} depends on ${item.dependsOn.join(', ')}` : `${item.id} has no dependencies`);
      }),
    );

  todo
    .command('assign')
    .description('Reserve an item for a session, or clear the reservation (override authority or a user)')
    .argument('<id>')
    .argument('[session]', 'the session it is reserved for')
    .option('--none', 'clear the assignee')
    .addHelpText('after', examples(['coord todo assign td-abc123 s-0123456789abcdef', 'coord todo assign td-abc123 --none']))
    .action(
      run<{ none?: boolean }>(async (ctx, id: string, session?: string) => {
        if (!session === !ctx.opts.none) throw new UsageError('pass a session id or --none');
        const item = await ctx.client().todos.assign(id, session ?? null);
        itemOut(ctx, item, item.assignee ? `Assigned ${item.id} to ${item.assignee}` : `Unassigned ${item.id}`);
      }),
    );

  todo
    .command('heartbeat')
    .description('Extend your claim lease on an item (owner only)')
    .argument('<id>')
    .addHelpText('after', examples(['coord todo heartbeat td-abc123', 'while sleep 60; do coord todo heartbeat td-abc123 -q || break; done']))
    .option('-q, --quiet', 'print nothing on success')
    .action(
      run<{ quiet?: boolean }>(async (ctx, id: string) => {
        const item = await ctx.client().todos.heartbeat(id);
        if (ctx.opts.quiet) return;
        itemOut(ctx, item, `Lease on ${item.id} extended until ${item.leaseExpiresAt ?? '(no lease)'}`);
      }),
    );

  todo
    .command('edit')
    .description('Change an item’s title, note, tags, position or priority in one revision')
    .argument('<id>')
    .option('--title <title>')
    .option('--note <text>', '"" clears it')
    .option('--tag <tag>', 'the new tag set (repeatable)', collect)
    .option('--no-tags', 'clear the tags')
    .option('--position <n>', 'list position', int('--position'))
    .option('--priority <n>', 'higher is claimed first by next', signedInt('--priority'))
    .option('--if-match <revision>', 'refuse (412) unless the item is still at this revision', int('--if-match'))
    .addHelpText(
      'after',
      examples(['coord todo edit td-abc123 --title "Wire the claim CAS (v2)"', 'coord todo edit td-abc123 --tag backend --tag p0 --if-match 3']),
    )
    .action(
      run<{ title?: string; note?: string; tag?: string[]; tags?: boolean; position?: number; priority?: number; ifMatch?: number }>(
        async (ctx, id: string) => {
          const o = ctx.opts;
          const patch = {
            title: o.title,
            note: o.note,
            tags: o.tags === false ? [] : o.tag,
            position: o.position,
            priority: o.priority,
          };
          if (Object.values(patch).every((v) => v === undefined))
            throw new UsageError('nothing to change: pass --title, --note, --tag, --no-tags, --position or --priority');
          const item = await ctx.client().todos.edit(id, patch, { ifMatch: o.ifMatch });
          itemOut(ctx, item, `Updated ${item.id}: ${item.title} (revision ${item.revision})`);
        },
      ),
    );

  todo
    .command('export')
    .description('Export a whole scope as Markdown (the seed’s format) or JSON')
    .argument('[scope]', 'session:<id>, scenario:<name> or graph:<id> (default: your own list)')
    .addOption(new Option('--format <format>', 'markdown, or json (default: json in JSON mode, else markdown)').choices(['markdown', 'json']))
    .option('-o, --output <file>', 'write to this file instead of stdout')
    .addHelpText('after', examples(['coord todo export', 'coord todo export scenario:strath --format json', 'coord todo export session:s-… -o todos.md']))
    .action(
      run<{ format?: 'markdown' | 'json'; output?: string }>(async (ctx, scope?: string) => {
        const c = ctx.client();
        const target = scope ?? (await c.me()).scope;
        if (!target) throw new UsageError('a user has no list of its own: name the scope, e.g. coord todo export session:<id>');
        const format = ctx.opts.format ?? (ctx.out.json ? 'json' : 'markdown');
        const text = format === 'json' ? `${JSON.stringify(await c.todos.export(target, 'json'), null, 2)}\n` : await c.todos.export(target, 'markdown');
        if (!ctx.opts.output) return ctx.out.line(text);
        writeFileSync(ctx.opts.output, text);
        if (ctx.out.json) ctx.out.result('', { scope: target, format, file: ctx.opts.output });
        else ctx.out.note(`Exported ${target} to ${ctx.opts.output}`);
      }),
    );

  todo
    .command('why')
    .description('Explain why an item is or is not claimable')
    .argument('<id>')
    .addHelpText('after', examples(['coord todo why td-publish']))
    .action(
      run(async (ctx, id: string) => {
        const r = await ctx.client().todos.readiness(id);
        const head = `${r.id} is ${r.status}; ${r.claimable ? 'claimable' : r.ready ? 'ready but not claimable by you' : 'not ready'}`;
        ctx.out.result([head, ...r.reasons.map((x) => `  - ${x.message}`)], r);
      }),
    );

  return todo;
}

function readFile(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read --result-file ${path}: ${(err as Error).message}`);
  }
}

async function readStdin(io: Io): Promise<string> {
  if (!io.stdin) return '';
  let text = '';
  for await (const chunk of io.stdin) text += String(chunk);
  return text;
}
