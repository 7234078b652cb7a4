/**
 * `coord graph validate|create|list|status|inspect|plan` and `coord agent register|list`:
 * Task Graph v1 (seed 002) from the shell. Graph documents are read from a file or stdin (`-`);
 * `--intent-map <file>` adds the Intent Map v1 companion.
 */
import type { GraphRequest, TaskGraphRecord } from '@coord/sdk';
import { Command } from 'commander';
import { parseJson, readGraphInput } from '../input.js';
import { table, type Io } from '../output.js';
import { act, type Ctx } from '../runtime.js';
import { addRunnerCommands } from './graph-run.js';

const examples = (lines: string[]) => `\nExamples:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`;

/** `{graph, intentMap?}` from a graph file (itself a bare graph or already an envelope) and an optional Intent Map file. */
async function requestFrom(io: Io, file: string, intentMapFile?: string): Promise<GraphRequest> {
  const doc = parseJson(await readGraphInput(io, file), file === '-' ? 'stdin' : file);
  if (!intentMapFile) return doc as GraphRequest;
  const intentMap = parseJson(await readGraphInput(io, intentMapFile), intentMapFile);
  const graph = doc && typeof doc === 'object' && 'graph' in doc ? (doc as { graph: unknown }).graph : doc;
  return { graph, intentMap } as GraphRequest;
}

function subtaskTable(g: TaskGraphRecord): string[] {
  return table(
    ['SUBTASK', 'STATE', 'IMPLEMENTER', 'DEPENDS ON', 'TODO', 'REASON'],
    g.subtasks.map((s) => [s.id, s.state, s.implementer, s.dependsOn.join(',') || '-', `${s.todoId} (${s.todoStatus})`, s.reason ?? '-']),
  );
}

function graphHeader(g: TaskGraphRecord): string {
  return `${g.id}  ${g.parentTask.title}: ${g.state}, ${g.subtasks.length} subtasks, maxConcurrency ${g.maxConcurrency}, scope ${g.scope}, revision ${g.revision}`;
}

/** The `graph` and `agent` command groups. */
export function graphCommands(io: Io, setExit: (code: number) => void, opts: { stop?: AbortSignal } = {}): Command[] {
  const run = <O>(fn: (ctx: Ctx<O>, ...args: any[]) => Promise<number | void>) => act<O>(io, setExit, fn);
  const graph = new Command('graph')
    .description('Validate, create, read and run Task Graphs (Task Graph v1)')
    .addHelpText(
      'after',
      examples([
        'coord graph validate graph.json --intent-map intent-map.json',
        'coord graph create graph.json',
        'coord graph status task-product-slice',
        'coord graph plan task-product-slice',
      ]),
    );

  graph
    .command('validate')
    .description('Check a Task Graph (and Intent Map) against the contract and the configured Agents; writes nothing')
    .argument('<file>', 'the Task Graph v1 JSON (or {graph, intentMap}); - reads stdin')
    .option('--intent-map <file>', 'the Intent Map v1 companion')
    .addHelpText(
      'after',
      `\nA refusal is TASK_GRAPH_INVALID with its stage (exit 1).\n${examples(['coord graph validate graph.json', 'cat graph.json | coord graph validate - --intent-map intent-map.json'])}`,
    )
    .action(
      run<{ intentMap?: string }>(async (ctx, file: string) => {
        const r = await ctx.client().graphs.validate(await requestFrom(ctx.io, file, ctx.opts.intentMap));
        const cov = r.intentCoverage.available ? `intent coverage declared (${r.intentCoverage.scopePolicy})` : 'no intent coverage';
        ctx.out.result(`Valid: ${r.facts.parent.taskId} with ${r.facts.subtasks.length} subtasks, ${cov}. Nothing was written.`, r);
      }),
    );

  graph
    .command('create')
    .description('Create a Task Graph: one work item per subtask in scope graph:<id>, in one transaction')
    .argument('<file>', 'the Task Graph v1 JSON (or {graph, intentMap}); - reads stdin')
    .option('--intent-map <file>', 'the Intent Map v1 companion')
    .addHelpText('after', examples(['coord graph create graph.json --intent-map intent-map.json', 'coord graph create - < graph.json --json']))
    .action(
      run<{ intentMap?: string }>(async (ctx, file: string) => {
        const r = await ctx.client().graphs.create(await requestFrom(ctx.io, file, ctx.opts.intentMap));
        const g = r.graph;
        ctx.out.result([`Created graph ${g.id}, scope ${g.scope}: ${g.state}, ready: ${g.frontier.ready.join(', ') || '-'}`, ...subtaskTable(g)], r);
      }),
    );

  graph
    .command('list')
    .alias('ls')
    .description('List the graphs you may see, newest update first')
    .addHelpText('after', examples(['coord graph list', 'coord graph list --json']))
    .action(
      run(async (ctx) => {
        const graphs = await ctx.client().graphs.listAll();
        ctx.out.result(
          graphs.length === 0
            ? ['No task graphs.']
            : table(
                ['ID', 'STATE', 'SUBTASKS', 'READY', 'RUNNING', 'SUCCEEDED', 'FAILED', 'TITLE'],
                graphs.map((g) => [
                  g.id,
                  g.state,
                  String(g.subtaskCount),
                  String(g.counts.ready),
                  String(g.counts.running),
                  String(g.counts.succeeded),
                  String(g.counts.failed),
                  g.title,
                ]),
              ),
          { graphs },
        );
      }),
    );

  graph
    .command('status')
    .alias('get')
    .description('A graph’s subtasks with their derived states, and its frontier')
    .argument('<id>', 'the parent task id (task-…)')
    .addHelpText('after', examples(['coord graph status task-product-slice', 'coord graph status task-product-slice --json']))
    .action(
      run(async (ctx, id: string) => {
        const g = await ctx.client().graphs.get(id);
        const f = g.frontier;
        ctx.out.result(
          [
            graphHeader(g),
            ...subtaskTable(g),
            `frontier: ready ${f.ready.join(',') || '-'}; eligible ${f.eligible.join(',') || '-'}; ${f.availableSlots} of ${f.maxConcurrency} slots free`,
          ],
          { graph: g },
        );
      }),
    );

  graph
    .command('inspect')
    .description('Status plus the newest lifecycle events')
    .argument('<id>', 'the parent task id (task-…)')
    .addHelpText('after', examples(['coord graph inspect task-product-slice']))
    .action(
      run(async (ctx, id: string) => {
        const r = await ctx.client().graphs.inspect(id);
        ctx.out.result(
          [
            graphHeader(r.graph),
            ...subtaskTable(r.graph),
            `events${r.eventsTruncated ? ' (newest 100)' : ''}:`,
            ...r.events.map((e) => `  #${e.seq} ${e.at} ${e.event}`),
          ],
          r,
        );
      }),
    );

  graph
    .command('plan')
    .description('Graph Preflight: the next conflict-aware READY wave and a decision per subtask (read-only)')
    .argument('<id>', 'the parent task id (task-…)')
    .addHelpText('after', examples(['coord graph plan task-product-slice', 'coord graph plan task-product-slice --json']))
    .action(
      run(async (ctx, id: string) => {
        const p = await ctx.client().graphs.plan(id);
        ctx.out.result(
          [
            `Plan for ${p.parentTaskId}: wave ${p.wave.selected.join(', ') || '(empty)'}; ${p.availableSlots} of ${p.maxConcurrency} slots free; concurrent writes ${p.preflight.concurrentWriteSafety}`,
            ...table(
              ['SUBTASK', 'DECISION', 'IMPLEMENTER', 'REASON'],
              p.decisions.map((d) => [d.subtaskId, d.decision, d.implementer, d.reason]),
            ),
            ...p.preflight.risks.map((r) => `risk ${r.code} (${r.severity}): ${r.message}`),
          ],
          { plan: p },
        );
      }),
    );

  addRunnerCommands(graph, io, setExit, opts.stop);

  const agent = new Command('agent')
    .description('The configured Agents that Task Graphs name (planner, reviewer, implementers)')
    .addHelpText('after', examples(['coord agent register agent-backend --adapter codex', 'coord agent list']));

  agent
    .command('register')
    .description('Register a configured Agent (users only)')
    .argument('<id>', '1–64 of [a-z0-9_-], starting with a letter')
    .option('--adapter <adapter>', 'the Adapter it runs through')
    .option('--command <command>', 'its effective configured command')
    .addHelpText('after', examples(['coord agent register codex', 'coord agent register agent-backend --adapter codex --command "codex exec"']))
    .action(
      run<{ adapter?: string; command?: string }>(async (ctx, id: string) => {
        const a = await ctx.client().agents.register({ id, adapter: ctx.opts.adapter, command: ctx.opts.command });
        ctx.out.result(`Registered agent ${a.id}`, { agent: a });
      }),
    );

  agent
    .command('list')
    .alias('ls')
    .description('List the configured Agents')
    .addHelpText('after', examples(['coord agent list']))
    .action(
      run(async (ctx) => {
        const agents = await ctx.client().agents.listAll();
        ctx.out.result(
          agents.length === 0
            ? ['No agents.']
            : table(
                ['ID', 'ADAPTER', 'COMMAND', 'CREATED'],
                agents.map((a) => [a.id, a.adapter ?? '-', a.command ?? '-', a.createdAt]),
              ),
          { agents },
        );
      }),
    );

  return [graph, agent];
}
