/**
 * `coord task create|expand|list|status|ready|start|block|complete|cancel|reopen|bind-acl`:
 * metagit RFC-0008 from the shell, with the RFC's flags (docs/seeds/metagit.md §7). A node is named by
 * `--node-id`, with `--graph-id` when more than one graph has that id (otherwise the CLI finds it).
 */
import { readFileSync } from 'node:fs';
import type { CoordClient, MetagitGraph, MetagitNode } from '@coord/sdk';
import { Command } from 'commander';
import { table, type Io } from '../output.js';
import { act, UsageError, type Ctx } from '../runtime.js';

const examples = (lines: string[]) => `\nExamples:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`;
const collect = (v: string, prev: string[] = []) => [...prev, v];

function nodeRows(nodes: (MetagitNode & { graphId: string })[]): string[] {
  return nodes.length === 0
    ? ['No nodes.']
    : table(
        ['GRAPH', 'NODE', 'STATUS', 'DEPENDS ON', 'TITLE'],
        nodes.map((n) => [n.graphId, n.nodeId, n.status, n.dependsOn.join(',') || '-', n.title]),
      );
}

/** Every graph the caller may see (all pages). */
async function allGraphs(client: CoordClient): Promise<MetagitGraph[]> {
  const out: MetagitGraph[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await client.metagit.list({ cursor });
    for (const g of page.graphs) out.push(await client.metagit.get(g.graphId));
    if (!page.nextCursor) return out;
    cursor = page.nextCursor;
  }
}

/** The graph holding `nodeId`: `--graph-id`, or the one graph that has such a node (RFC: ambiguous → pass --graph-id). */
async function graphOf(client: CoordClient, nodeId: string, graphId?: string): Promise<string> {
  if (graphId) return graphId;
  const holding = (await allGraphs(client)).filter((g) => g.nodes.some((n) => n.nodeId === nodeId));
  if (holding.length === 0) throw new Error(`task node not found: ${nodeId} (in no graph you can see)`);
  if (holding.length > 1) throw new UsageError(`ambiguous node_id '${nodeId}' (in ${holding.map((g) => g.graphId).join(', ')}); pass --graph-id`);
  return holding[0].graphId;
}

async function readStdin(io: Io): Promise<string> {
  if (!io.stdin) return '';
  let text = '';
  for await (const chunk of io.stdin) text += String(chunk);
  return text;
}

/** The `task` command group. */
export function taskCommand(io: Io, setExit: (code: number) => void): Command {
  const run = <O>(fn: (ctx: Ctx<O>, ...args: any[]) => Promise<number | void>) => act<O>(io, setExit, fn);
  const task = new Command('task')
    .description('metagit task graphs (RFC-0008): intents, deterministic expand, ready nodes, start/complete, ACL bindings')
    .addHelpText(
      'after',
      examples([
        'coord task create --graph-id release --title "Release 2.0" --goal "Ship it"',
        'printf "Root\\n  Child\\n" | coord task expand --graph-id release',
        'coord task ready --graph-id release',
        'coord task complete --node-id root',
      ]),
    );

  task
    .command('create')
    .description('Create a task graph and its root intent')
    .requiredOption('--title <title>', 'the graph’s (and root intent’s) title')
    .requiredOption('--goal <goal>', 'the root intent’s goal')
    .option('--acceptance <criterion>', 'an acceptance criterion (repeat)', collect)
    .option('--objective-id <id>', 'the objective it serves')
    .option('--handoff-id <id>', 'the handoff it continues')
    .option('--project <project>', 'the project')
    .option('--repo <repo>', 'a repository (repeat)', collect)
    .option('--graph-id <id>', 'the graph id (default: 12 random hex)')
    .addHelpText('after', examples(['coord task create --graph-id release --title "Release 2.0" --goal "Ship it" --acceptance "CI green"']))
    .action(
      run<{
        title: string;
        goal: string;
        acceptance?: string[];
        objectiveId?: string;
        handoffId?: string;
        project?: string;
        repo?: string[];
        graphId?: string;
      }>(async (ctx) => {
        const o = ctx.opts;
        const g = await ctx.client().metagit.create({
          graphId: o.graphId,
          title: o.title,
          goal: o.goal,
          acceptance: o.acceptance,
          objectiveId: o.objectiveId,
          handoffId: o.handoffId,
          project: o.project,
          repos: o.repo,
        });
        ctx.out.result(`Created task graph ${g.graphId} (root intent ${g.rootIntentId})`, g);
      }),
    );

  task
    .command('expand')
    .description('Add nodes from an indented outline (or a JSON list); deterministic, all or nothing')
    .requiredOption('--graph-id <id>', 'the graph')
    .option('--from-outline <path>', 'the outline file (default: stdin)')
    .addHelpText(
      'after',
      examples(['coord task expand --graph-id release --from-outline plan.md', 'printf "Root\\n  Child\\n    Leaf\\n" | coord task expand --graph-id release']),
    )
    .action(
      run<{ graphId: string; fromOutline?: string }>(async (ctx) => {
        const text = ctx.opts.fromOutline ? readFileSync(ctx.opts.fromOutline, 'utf8') : await readStdin(ctx.io);
        const r = await ctx.client().metagit.expand(ctx.opts.graphId, text);
        ctx.out.result([`Added ${r.added.length} nodes to ${ctx.opts.graphId}: ${r.added.map((n) => n.nodeId).join(', ')}`, ...nodeRows(r.added)], r);
      }),
    );

  task
    .command('list')
    .alias('ls')
    .description('Without filters the graphs; with --graph-id or --status the nodes')
    .option('--graph-id <id>', 'one graph’s nodes')
    .option('--status <status>', 'only nodes with this status (pending, ready, blocked, running, completed, cancelled)')
    .addHelpText('after', examples(['coord task list', 'coord task list --graph-id release', 'coord task list --status ready']))
    .action(
      run<{ graphId?: string; status?: string }>(async (ctx) => {
        const statuses = ['pending', 'ready', 'blocked', 'running', 'completed', 'cancelled'];
        if (ctx.opts.status && !statuses.includes(ctx.opts.status)) throw new UsageError(`--status must be one of ${statuses.join(', ')}`);
        const c = ctx.client();
        if (!ctx.opts.graphId && !ctx.opts.status) {
          const graphs = (await c.metagit.list()).graphs;
          return ctx.out.result(
            graphs.length
              ? table(
                  ['GRAPH', 'STATUS', 'TITLE'],
                  graphs.map((g) => [g.graphId, g.status, g.title]),
                )
              : ['No task graphs.'],
            { graphs },
          );
        }
        const graphs = ctx.opts.graphId ? [await c.metagit.get(ctx.opts.graphId)] : await allGraphs(c);
        const nodes = graphs.flatMap((g) => g.nodes).filter((n) => !ctx.opts.status || n.status === ctx.opts.status);
        ctx.out.result(nodeRows(nodes), { nodes });
      }),
    );

  task
    .command('status')
    .description('One node')
    .requiredOption('--node-id <id>', 'the node')
    .option('--graph-id <id>', 'its graph (needed when the id is in several)')
    .addHelpText('after', examples(['coord task status --node-id child']))
    .action(
      run<{ nodeId: string; graphId?: string }>(async (ctx) => {
        const c = ctx.client();
        const n = await c.metagit.node(await graphOf(c, ctx.opts.nodeId, ctx.opts.graphId), ctx.opts.nodeId);
        ctx.out.result(
          [
            `${n.graphId}/${n.nodeId}: ${n.status}${n.blockerReason ? ` (${n.blockerReason})` : ''}`,
            `  ${n.title}`,
            `  depends on: ${n.dependsOn.join(', ') || '-'}`,
          ],
          n,
        );
      }),
    );

  task
    .command('ready')
    .description('The ready nodes (of one graph, or of every graph you can see)')
    .option('--graph-id <id>', 'one graph')
    .addHelpText('after', examples(['coord task ready --graph-id release']))
    .action(
      run<{ graphId?: string }>(async (ctx) => {
        const c = ctx.client();
        const nodes = ctx.opts.graphId
          ? await c.metagit.ready(ctx.opts.graphId)
          : (await allGraphs(c)).flatMap((g) => g.nodes.filter((n) => n.status === 'ready'));
        ctx.out.result(nodeRows(nodes), { nodes });
      }),
    );

  const transition = (name: 'start' | 'complete' | 'cancel' | 'reopen', description: string) =>
    task
      .command(name)
      .description(description)
      .requiredOption('--node-id <id>', 'the node')
      .option('--graph-id <id>', 'its graph (needed when the id is in several)')
      .addHelpText('after', examples([`coord task ${name} --node-id root`, `coord task ${name} --node-id root --graph-id release --json`]))
      .action(
        run<{ nodeId: string; graphId?: string }>(async (ctx) => {
          const c = ctx.client();
          const id = await graphOf(c, ctx.opts.nodeId, ctx.opts.graphId);
          const { node: n, graph: g } = await c.metagit[name](id, ctx.opts.nodeId);
          ctx.out.result(`${id}/${n.nodeId}: ${n.status}; ready now: ${g.readyNow.join(', ') || '-'}`, n);
        }),
      );
  transition('start', 'Start a ready node (a claim: one agent wins)');
  transition('complete', 'Complete a node; its dependents become ready');
  transition('cancel', 'Cancel a node');
  transition('reopen', 'Reopen a blocked, cancelled or completed node');

  task
    .command('block')
    .description('Block a node with a reason')
    .requiredOption('--node-id <id>', 'the node')
    .requiredOption('--reason <reason>', 'why')
    .option('--graph-id <id>', 'its graph')
    .addHelpText('after', examples(['coord task block --node-id deploy --reason "waiting for credentials"']))
    .action(
      run<{ nodeId: string; reason: string; graphId?: string }>(async (ctx) => {
        const c = ctx.client();
        const id = await graphOf(c, ctx.opts.nodeId, ctx.opts.graphId);
        const n = (await c.metagit.block(id, ctx.opts.nodeId, ctx.opts.reason)).node;
        ctx.out.result(`${id}/${n.nodeId}: ${n.status} (${n.blockerReason})`, n);
      }),
    );

  task
    .command('bind-acl')
    .description('Store an ACL binding and its suggested commands on a node (hints only: no git)')
    .requiredOption('--node-id <id>', 'the node')
    .requiredOption('--agent-id <id>', 'the agent')
    .option('--graph-id <id>', 'its graph')
    .option('--branch <branch>', 'the branch (default agent/<node>-<slug>)')
    .option('--lease-id <id>', 'a branch lease id')
    .option('--worktree-id <id>', 'a worktree id')
    .option('--pattern <glob>', 'the claim pattern (default **/*)')
    .addHelpText('after', examples(['coord task bind-acl --node-id api --agent-id agent-7 --pattern "src/api/**"']))
    .action(
      run<{ nodeId: string; agentId: string; graphId?: string; branch?: string; leaseId?: string; worktreeId?: string; pattern?: string }>(async (ctx) => {
        const o = ctx.opts;
        const c = ctx.client();
        const id = await graphOf(c, o.nodeId, o.graphId);
        const n = (
          await c.metagit.bindAcl(id, o.nodeId, { agentId: o.agentId, branch: o.branch, leaseId: o.leaseId, worktreeId: o.worktreeId, pattern: o.pattern })
        ).node;
        const acl = n.acl as { commands: string[] };
        ctx.out.result([`Bound ${o.agentId} to ${id}/${n.nodeId}; suggested commands:`, ...acl.commands.map((x) => `  ${x}`)], n);
      }),
    );

  return task;
}
