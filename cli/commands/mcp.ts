/**
 * `coord mcp`: Coord's MCP tools over stdio for an agent's MCP client (implementation:
 * mcp-stdio.ts, loaded only when this command runs).
 */
import { Command } from 'commander';
import type { Io } from '../output.js';
import { act, type Ctx } from '../runtime.js';

const examples = (lines: string[]) => `\nExamples:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`;

/** `coord mcp [--tools …] [--root …]`. */
export function mcpCommand(io: Io, setExit: (code: number) => void, opts: { stop: AbortSignal }): Command {
  return new Command('mcp')
    .description('Serve Coord’s tools over MCP on stdio, for an agent’s MCP client to launch')
    .option('--tools <sets>', 'tool sets: todo, scenario, events, graph, graph-runner, metagit, or all (default todo,events,graph)')
    .option('--root <repository>', 'the git repository the runner tools work in (default: the current directory)')
    .addHelpText(
      'after',
      examples([
        'claude mcp add --scope user coord -- coord mcp   # COORD_URL, COORD_TOKEN: read from Claude Code’s environment',
        'coord mcp --tools todo,graph --root ~/src/project',
      ]),
    )
    .action(
      act<{ tools?: string; root?: string }>(io, setExit, async (ctx: Ctx<{ tools?: string; root?: string }>) => {
        const { serveStdio } = await import('./mcp-stdio.js');
        await serveStdio(ctx, opts);
      }),
    );
}
