/**
 * `coord`: the command-line tool for Coord, built only on the SDK (`@coord/sdk`).
 *
 * `main(argv, io)` parses, runs one command and returns the exit code: 0 ok, 1 error (the server
 * refused, or could not be reached), 2 usage, 3 nothing to claim. It never calls process.exit and
 * reads the environment only through `io.env`, so tests can run it in-process too.
 */
import { ConnectionFailed, CoordError, Unauthorized } from '@coord/sdk';
import { Command, CommanderError } from 'commander';
import { accountCommands } from './commands/account.js';
import { eventsCommand } from './commands/events.js';
import { graphCommands } from './commands/graph.js';
import { ContractRefusal } from './input.js';
import { workerCommand } from './commands/graph-run.js';
import { mcpCommand } from './commands/mcp.js';
import { taskCommand } from './commands/task.js';
import { scenarioCommand } from './commands/scenario.js';
import { sessionCommand } from './commands/session.js';
import { todoCommand } from './commands/todo.js';
import { attentionCommand } from './commands/attention.js';
import { auditCommand } from './commands/audit.js';
import { tokenCommand } from './commands/token.js';
import { teamCommand } from './commands/team.js';
import type { Io } from './output.js';
import { EXIT, jsonMode, UsageError, type GlobalOptions } from './runtime.js';

export type { Io } from './output.js';

const HELP_AFTER = `
Configuration (highest first): --url/--token, the file written by \`coord login\` (mode 0600),
then COORD_URL/COORD_TOKEN; the URL defaults to http://127.0.0.1:3000.
Output: tables and short messages for people; --json for machines. With COORD_TOKEN in the
environment (an agent) JSON is the default; --human switches back.
Exit codes: 0 ok, 1 error, 2 usage, 3 nothing to claim.

Examples:
  $ coord login --url http://127.0.0.1:3000 --token "$(cat .coord/admin-token)"
  $ export COORD_TOKEN=$(coord session create --name agent-1 -q)
  $ coord todo add "Wire the claim CAS" --tag backend
  $ coord todo next
  $ coord todo done td-…
  $ coord todo list --human
  $ coord events follow todo:session:s-…
`;

/** Builds the command tree; `setExit` records an action's exit code. */
export function buildProgram(io: Io, setExit: (code: number) => void, stop: AbortSignal): Command {
  const program = new Command('coord')
    .description('Drive Coord from the shell: todo lists, sessions, scenarios, task graphs and events')
    .version('0.1.0', '-V, --version')
    .option('--url <url>', 'server URL (default: saved by coord login, else COORD_URL, else http://127.0.0.1:3000)')
    .option('--token <token>', 'bearer token (default: saved by coord login, else COORD_TOKEN)')
    .option('--json', 'machine output: JSON on stdout')
    .option('--no-json', 'human output even in agent mode')
    .option('--human', 'human output even in agent mode (same as --no-json)')
    .addHelpText('after', HELP_AFTER)
    .showSuggestionAfterError(true)
    .configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) })
    .exitOverride();
  program.addCommand(todoCommand(io, setExit));
  program.addCommand(sessionCommand(io, setExit));
  program.addCommand(tokenCommand(io, setExit));
  program.addCommand(teamCommand(io, setExit));
  program.addCommand(auditCommand(io, setExit));
  program.addCommand(attentionCommand(io, setExit));
  program.addCommand(scenarioCommand(io, setExit));
  for (const c of graphCommands(io, setExit, { stop })) program.addCommand(c);
  program.addCommand(taskCommand(io, setExit));
  program.addCommand(eventsCommand(io, setExit, { stop }));
  program.addCommand(workerCommand(io, setExit, { stop }));
  program.addCommand(mcpCommand(io, setExit, { stop }));
  for (const c of accountCommands(io, setExit)) program.addCommand(c);
  // Every sub-command reports usage errors through the same override and output.
  const inherit = (cmd: Command) => {
    for (const sub of cmd.commands) {
      sub
        .exitOverride()
        .configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) })
        .configureHelp({ showGlobalOptions: true })
        .showSuggestionAfterError(true);
      inherit(sub);
    }
  };
  inherit(program);
  return program;
}

/** Runs one command line (without the `node coord` prefix) and returns its exit code. */
export async function main(argv: string[], io: Io, opts: { stop?: AbortSignal } = {}): Promise<number> {
  let exit: number = EXIT.ok;
  const program = buildProgram(io, (c) => (exit = c), opts.stop ?? new AbortController().signal);
  if (argv.length === 0) {
    program.outputHelp();
    return EXIT.usage;
  }
  try {
    await program.parseAsync(argv, { from: 'user' });
    return exit;
  } catch (err) {
    return report(err, io, argv);
  }
}

/** Prints a failure the way the mode asks and maps it to its exit code. */
function report(err: unknown, io: Io, argv: string[]): number {
  if (err instanceof CommanderError) {
    if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return EXIT.ok;
    // Commander already printed its message (and help, for a missing sub-command).
    return EXIT.usage;
  }
  const g: GlobalOptions = {
    json: argv.includes('--json') ? true : argv.includes('--no-json') ? false : undefined,
    human: argv.includes('--human'),
  };
  const json = jsonMode(g, io.env);
  if (err instanceof UsageError) {
    if (json) io.stderr.write(`${JSON.stringify({ error: { code: 'usage', detail: err.message } })}\n`);
    else io.stderr.write(`error: ${err.message}\n(see coord --help)\n`);
    return EXIT.usage;
  }
  if (err instanceof ContractRefusal) {
    // The contract's error object, as the coordinator would answer it.
    if (json) io.stderr.write(`${JSON.stringify({ error: { code: err.code, stage: err.stage, message: err.message, recoverable: false } })}\n`);
    else io.stderr.write(`error: ${err.message} (${err.code}, stage ${err.stage})\n`);
    return EXIT.error;
  }
  if (err instanceof CoordError) {
    if (json) {
      io.stderr.write(`${JSON.stringify({ error: { ...err.problem, status: err.status, code: err.code, detail: err.detail } })}\n`);
    } else {
      const stage = typeof err.problem.stage === 'string' ? `, stage ${err.problem.stage}` : '';
      io.stderr.write(`error: ${err.detail} (${err.code}${stage})\n`);
      for (const f of err.problem.errors ?? []) io.stderr.write(`  ${f.path}: ${f.message}\n`);
      if (err instanceof Unauthorized) io.stderr.write('hint: check --token, `coord login` or COORD_TOKEN (`coord whoami` shows which is used)\n');
      if (err instanceof ConnectionFailed) io.stderr.write('hint: is the server running? Set the URL with --url, `coord login` or COORD_URL\n');
      if (err.code === 'no_session_context')
        io.stderr.write('hint: a user has no list of its own: pass --scope session:<id>|scenario:<name>|graph:<id> (or --all to list)\n');
      if (err.code === 'claim_requires_session') io.stderr.write('hint: only sessions claim: create one with `coord session create` and use its token\n');
    }
    return EXIT.error;
  }
  const message = err instanceof Error ? err.message : String(err);
  if (json) io.stderr.write(`${JSON.stringify({ error: { code: 'cli_error', detail: message } })}\n`);
  else io.stderr.write(`error: ${message}\n`);
  return EXIT.error;
}
