/**
 * `coord scenario create|status|get|result`: shared lists for a named group of sessions
 * (seed 000 "In scenarios"; the seed's `gr scenario status` shows per-member DONE/TOTAL and
 * WAITING ON).
 */
import { readFileSync } from 'node:fs';
import type { CreateScenarioInput } from '@coord/sdk';
import { Command } from 'commander';
import { table, type Io } from '../output.js';
import { act, UsageError, type Ctx } from '../runtime.js';

const examples = (lines: string[]) => `\nExamples:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`;
const collect = (v: string, prev: string[] = []) => [...prev, v];

type Member = CreateScenarioInput['members'][number];

/** Builds the create body from `--member name[=task]`, `--depends-on member=a,b`, `--requires-result member`, `--shared member=session`. */
function membersFromFlags(o: { member?: string[]; dependsOn?: string[]; requiresResult?: string[]; shared?: string[] }): Member[] {
  const members = new Map<string, Member>();
  for (const spec of o.member ?? []) {
    const i = spec.indexOf('=');
    const name = (i < 0 ? spec : spec.slice(0, i)).trim();
    if (!name) throw new UsageError(`--member "${spec}": expected name or name=task`);
    if (members.has(name)) throw new UsageError(`--member ${name} is given twice`);
    members.set(name, { name, ...(i < 0 ? {} : { task: spec.slice(i + 1) }) });
  }
  const get = (flag: string, name: string) => {
    const m = members.get(name);
    if (!m) throw new UsageError(`${flag} names "${name}", which is not a --member`);
    return m;
  };
  for (const spec of o.dependsOn ?? []) {
    const [name, deps] = spec.split('=', 2);
    if (!deps) throw new UsageError(`--depends-on "${spec}": expected member=other,other`);
    get('--depends-on', name.trim()).dependsOn = deps
      .split(',')
      .map((d) => d.trim())
      .filter(Boolean);
  }
  for (const name of o.requiresResult ?? []) get('--requires-result', name.trim()).requiresResult = true;
  for (const spec of o.shared ?? []) {
    const [name, session] = spec.split('=', 2);
    if (!session) throw new UsageError(`--shared "${spec}": expected member=<session id>`);
    get('--shared', name.trim()).session = session.trim();
  }
  return [...members.values()];
}

/** The `scenario` command group. */
export function scenarioCommand(io: Io, setExit: (code: number) => void): Command {
  const run = <O>(fn: (ctx: Ctx<O>, ...args: any[]) => Promise<number | void>) => act<O>(io, setExit, fn);
  const scenario = new Command('scenario')
    .description('Start scenarios (shared lists for a group of sessions) and follow their completion')
    .addHelpText('after', examples(['coord scenario create strath --member api="Build the API" --member ui="Build the UI"', 'coord scenario status strath']));

  scenario
    .command('create')
    .description('Start a scenario: a session and an assigned seed item per member, in one transaction')
    .argument('[name]', 'the scenario name (letters, digits, ".", "_", "-")')
    .option('--member <name[=task]>', 'a member, with the title of its seed item (repeatable)', collect)
    .option('--depends-on <member=a,b>', 'that member’s seed waits for these members’ seeds (repeatable)', collect)
    .option('--requires-result <member>', 'that member completes only after publishing a result (repeatable)', collect)
    .option('--shared <member=session>', 'use an existing session for that member (repeatable)', collect)
    .option('--orchestrator <session>', 'an existing session as orchestrator (default: you, or a new one for a user)')
    .option('--file <path>', 'the whole request body as JSON (`-` = stdin), as POST /v1/scenarios takes it')
    .addHelpText(
      'after',
      `\nThe tokens of sessions created for the scenario are printed once.\n${examples([
        'coord scenario create strath --member api="Build the API" --member ui="Build the UI" \\\n      --member ship="Ship the release" --depends-on ship=api,ui --requires-result ship --member reviewer',
        'coord scenario create --file strath.json',
      ])}`,
    )
    .action(
      run<{ member?: string[]; dependsOn?: string[]; requiresResult?: string[]; shared?: string[]; orchestrator?: string; file?: string }>(
        async (ctx, name?: string) => {
          const o = ctx.opts;
          let body: CreateScenarioInput;
          if (o.file) {
            if (o.member?.length) throw new UsageError('pass either --file or --member flags, not both');
            const text = o.file === '-' ? await readAll(ctx.io) : readFileSync(o.file, 'utf8');
            try {
              body = JSON.parse(text) as CreateScenarioInput;
            } catch (err) {
              throw new UsageError(`${o.file === '-' ? 'stdin' : o.file} is not JSON: ${(err as Error).message}`);
            }
            if (name) body = { ...body, name };
          } else {
            if (!name) throw new UsageError('missing the scenario name');
            const members = membersFromFlags(o);
            if (members.length === 0) throw new UsageError('a scenario needs at least one --member');
            body = { name, members, ...(o.orchestrator ? { orchestrator: o.orchestrator } : {}) };
          }
          const r = await ctx.client().scenarios.create(body);
          const s = r.scenario;
          ctx.out.result(
            [
              `Started scenario ${s.name} (${s.id}), scope ${s.scope}, orchestrator ${s.orchestratorId}`,
              ...table(
                ['MEMBER', 'SESSION', 'SEED', 'DEPENDS ON', 'TOKEN (shown once)'],
                s.members.map((m) => [m.name, m.sessionId, m.seedId ?? '-', m.dependsOn.join(',') || '-', r.tokens[m.name] ?? (m.shared ? '(shared)' : '-')]),
              ),
              ...(r.orchestratorToken ? [`Orchestrator token (shown once): ${r.orchestratorToken}`] : []),
            ],
            r,
          );
        },
      ),
    );

  scenario
    .command('list')
    .alias('ls')
    .description('List the scenarios you may read (all for a user; those you orchestrate or are a member of for a session)')
    .option('--limit <n>', 'page size (≤ list_limit); every page is fetched either way', (v: string) => {
      if (!/^[1-9]\d*$/.test(v)) throw new UsageError(`--limit must be a positive integer (got "${v}")`);
      return Number(v);
    })
    .addHelpText('after', examples(['coord scenario list', 'coord scenario list --json']))
    .action(
      run<{ limit?: number }>(async (ctx) => {
        const scenarios = await ctx.client().scenarios.listAll({ limit: ctx.opts.limit });
        ctx.out.result(
          scenarios.length
            ? table(
                ['NAME', 'ID', 'MEMBERS', 'DONE/TOTAL', 'STATE'],
                scenarios.map((s) => [s.name, s.id, String(s.members), `${s.done}/${s.total}`, s.complete ? 'complete' : 'in progress']),
              )
            : ['No scenarios.'],
          { scenarios },
        );
      }),
    );

  scenario
    .command('status')
    .description('Per-member DONE/TOTAL, RESULT and WAITING ON; whether the scenario is complete')
    .argument('<name>', 'name or id')
    .addHelpText('after', examples(['coord scenario status strath', 'coord scenario status strath --json']))
    .action(
      run(async (ctx, name: string) => {
        const c = ctx.client();
        if (ctx.out.json) ctx.out.result('', await c.scenarios.status(name));
        else ctx.out.line((await c.scenarios.statusText(name)).trimEnd());
      }),
    );

  scenario
    .command('get')
    .alias('show')
    .description('Show a scenario and its members')
    .argument('<name>', 'name or id')
    .addHelpText('after', examples(['coord scenario get strath --json']))
    .action(
      run(async (ctx, name: string) => {
        const s = await ctx.client().scenarios.get(name);
        ctx.out.result(
          [
            `${s.name} (${s.id}), scope ${s.scope}, orchestrator ${s.orchestratorId}${s.completedAt ? `, complete since ${s.completedAt}` : ''}`,
            ...table(
              ['MEMBER', 'SESSION', 'TASK', 'DEPENDS ON', 'RESULT'],
              s.members.map((m) => [
                m.name,
                m.sessionId,
                m.task ?? '-',
                m.dependsOn.join(',') || '-',
                m.resultAt ? 'published' : m.requiresResult ? 'pending' : '-',
              ]),
            ),
          ],
          { scenario: s },
        );
      }),
    );

  scenario
    .command('result')
    .description('Publish a member’s result (any JSON value)')
    .argument('<name>', 'scenario name or id')
    .argument('<member>', 'member name')
    .argument('<json>', 'the result as JSON; a plain word is taken as a string')
    .addHelpText('after', examples([`coord scenario result strath ship '{"version":"1.4.0"}'`]))
    .action(
      run(async (ctx, name: string, member: string, json: string) => {
        let value: unknown;
        try {
          value = JSON.parse(json);
        } catch {
          value = json;
        }
        const r = await ctx.client().scenarios.publishResult(name, member, value);
        ctx.out.result(`Published the result of ${r.member.name}${r.scenarioComplete ? '; the scenario is complete' : ''}`, r);
      }),
    );

  return scenario;
}

async function readAll(io: Io): Promise<string> {
  if (!io.stdin) return '';
  let text = '';
  for await (const chunk of io.stdin) text += String(chunk);
  return text;
}
