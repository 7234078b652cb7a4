/**
 * `coord graph run|advance|dispatch|recover|resume|stop|cleanup|integrate|review`: the runner on
 * the agent's machine (seed 002; docs/seeds/task-graph-v1.md §7–§11). Each takes `--root <repository>`
 * (default: the current directory), prints the contract's result shape with `--json`, and exits
 * 0 when the result is `ok`, 1 otherwise (a failed subtask, a stop code other than COMPLETED or
 * MAX_WAVES_REACHED, a refusal), 2 on usage errors.
 */
import { Command, InvalidArgumentError } from 'commander';
import { table, type Io } from '../output.js';
import { act, EXIT, type Ctx } from '../runtime.js';
import {
  advance,
  cleanup,
  dispatchOne,
  integrate,
  recover,
  repositoryRoot,
  resume,
  review,
  runWave,
  stop,
  work,
  outcomeNote,
  type RunnerContext,
} from '../runner/runner.js';
import { progressOn, SILENT, type ProgressSink } from '../progress.js';
import { reviewCommands } from '../runner/advance.js';
import { RunnerError } from '../runner/worktrees.js';
import type { Outcome } from '../runner/execute.js';

const examples = (lines: string[]) => `\nExamples:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`;

interface RootOptions {
  root?: string;
  sessionWaitMs?: number;
  /** No progress on stderr (the commands that run implementers or integrate). */
  quiet?: boolean;
}

const int = (min: number, max: number) => (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max) throw new InvalidArgumentError(`an integer from ${min} to ${max}`);
  return n;
};

async function runner(ctx: Ctx<RootOptions>, signal?: AbortSignal, progress?: ProgressSink): Promise<RunnerContext> {
  return {
    client: ctx.client(),
    signal,
    onProgress: progress?.onProgress,
    url: ctx.config().url,
    root: await repositoryRoot(ctx.opts.root ?? ctx.io.cwd ?? process.cwd()),
    env: ctx.io.env,
    sessionWaitMs: ctx.opts.sessionWaitMs ?? null,
  };
}

/** The outcomes table: NOTE is the error of a failure, or the warning of a success (scope drift under `warn` or `observe`). */
function outcomeRows(outcomes: Outcome[]): string[] {
  if (outcomes.length === 0) return ['(nothing dispatched)'];
  return table(
    ['SUBTASK', 'STATE', 'ATTEMPT', 'COMMIT', 'WORKTREE', 'NOTE'],
    outcomes.map((o) => [o.subtaskId, o.state, String(o.attempt), o.implementationCommit?.slice(0, 12) ?? '-', o.worktree.path, outcomeNote(o) ?? '-']),
  );
}

/** The commands that act on a result, for people: `Next: …` lines. */
const nextLines = (next: string[]) => (next.length ? ['Next:', ...next.map((c) => `  ${c}`)] : []);

/** Runs a runner action: its result is printed, `ok` decides the exit code; a RunnerError is a refusal (exit 1). */
async function perform<T extends { ok: boolean }>(
  ctx: Ctx<RootOptions>,
  fn: (r: RunnerContext) => Promise<T>,
  human: (r: T) => string[],
  opts: { compact?: boolean; signal?: AbortSignal; progress?: boolean } = {},
): Promise<number> {
  const progress = opts.progress && !ctx.opts.quiet ? progressOn(ctx.io.stderr) : SILENT;
  try {
    const r = await fn(await runner(ctx, opts.signal ?? currentStop, progress));
    progress.close();
    if (opts.compact && ctx.out.json) ctx.out.jsonLine({ event: 'report', ...r });
    else ctx.out.result(human(r), r);
    return r.ok ? EXIT.ok : EXIT.error;
  } catch (err) {
    progress.close();
    if (!(err instanceof RunnerError)) throw err;
    const error = { code: err.code, stage: err.stage, detail: err.message, ...err.facts };
    if (ctx.out.json) ctx.io.stderr.write(`${JSON.stringify({ error })}\n`);
    else ctx.io.stderr.write(`error: ${err.message} (${err.code}, stage ${err.stage})\n`);
    return EXIT.error;
  }
}

/** The process's stop signal (first Ctrl-C / SIGTERM), set by {@link addRunnerCommands}. */
let currentStop: AbortSignal | undefined;

/** Adds the runner's commands to the `graph` command group; `stop` ends running implementers cleanly. */
export function addRunnerCommands(graph: Command, io: Io, setExit: (code: number) => void, stopSignal?: AbortSignal): void {
  currentStop = stopSignal;
  const run = <O>(fn: (ctx: Ctx<O & RootOptions>, ...args: any[]) => Promise<number | void>) => act<O & RootOptions>(io, setExit, fn);
  const withRoot = (c: Command) => c.option('--root <repository>', 'the git repository to run in (default: the current directory)');
  const withWait = (c: Command) =>
    c
      .option('--session-wait-ms <ms>', 'stop waiting for an implementer after this long and report it RUNNING', int(0, 86_400_000))
      .option('--quiet', 'no progress lines on stderr');

  withWait(withRoot(graph.command('run')))
    .description('Run the next wave here: claim it on the coordinator, execute each subtask in its own worktree, report the evidence')
    .argument('<id>', 'the parent task id (task-…)')
    .addHelpText('after', examples(['coord graph run task-product-slice', 'coord graph run task-product-slice --root ../repo --json']))
    .action(
      run(async (ctx, id: string) =>
        perform(
          ctx,
          (r) => runWave(r, id),
          (x) => [
            `Wave of ${id} on base ${x.baseCommit.slice(0, 12)}: ${x.selected.join(', ') || 'nothing READY'}; graph ${x.state}`,
            ...outcomeRows(x.outcomes),
            ...nextLines(x.next),
          ],
          { progress: true },
        ),
      ),
    );

  withWait(withRoot(graph.command('advance')))
    .description('Run up to N freshly planned waves; stops with the contract’s stop code (never retries, integrates or reviews)')
    .argument('<id>', 'the parent task id (task-…)')
    .requiredOption('--max-waves <n>', 'how many waves at most (1–32)', int(1, 32))
    .addHelpText('after', examples(['coord graph advance task-product-slice --max-waves 8']))
    .action(
      run<{ maxWaves: number }>(async (ctx, id: string) =>
        perform(
          ctx,
          (r) => advance(r, id, ctx.opts.maxWaves),
          (x) => [
            `Advanced ${id}: ${x.wavesExecuted} wave(s), stop ${x.stop.code}: ${x.stop.reason}`,
            ...x.waves.flatMap((w) => [`wave ${w.waveNumber}: ${w.selected.join(', ')}`, ...outcomeRows(w.outcomes).map((l) => `  ${l}`)]),
            ...nextLines(x.next),
          ],
          { progress: true },
        ),
      ),
    );

  withWait(withRoot(graph.command('dispatch')))
    .description('Claim one READY subtask and execute it here')
    .argument('<id>', 'the parent task id (task-…)')
    .argument('<subtask>', 'the subtask id')
    .addHelpText('after', examples(['coord graph dispatch task-product-slice backend']))
    .action(
      run(async (ctx, id: string, subtask: string) =>
        perform(
          ctx,
          (r) => dispatchOne(r, id, subtask),
          (x) => [`Dispatched ${id}/${subtask}: ${x.outcome.state}; graph ${x.state}`, ...outcomeRows([x.outcome]), ...nextLines(x.next)],
          { progress: true },
        ),
      ),
    );

  withRoot(graph.command('recover'))
    .description('Report which RUNNING dispatches of this machine are dead, so the coordinator records them FAILED interrupted')
    .argument('<id>', 'the parent task id (task-…)')
    .argument('[subtask]', 'one subtask only')
    .addHelpText('after', examples(['coord graph recover task-product-slice', 'coord graph recover task-product-slice frontend --json']))
    .action(
      run(async (ctx, id: string, subtask?: string) =>
        perform(
          ctx,
          (r) => recover(r, id, subtask),
          (x) => [
            `Recovered ${id}: ${
              x.outcomes
                .filter((o) => o.changed)
                .map((o) => `${o.subtaskId} ${o.state}`)
                .join(', ') || 'nothing changed'
            }`,
            ...table(
              ['SUBTASK', 'STATE', 'CLASSIFICATION', 'RECOVERABLE'],
              x.recovery.map((e) => [e.subtaskId, e.state, e.classification, String(e.recoverable)]),
            ),
          ],
        ),
      ),
    );

  withRoot(graph.command('resume'))
    .description('Clear the recovery gate of a FAILED or STOPPED subtask (dispatch stays a later run)')
    .argument('<id>', 'the parent task id (task-…)')
    .argument('<subtask>', 'the subtask id')
    .addHelpText('after', examples(['coord graph resume task-product-slice frontend && coord graph run task-product-slice']))
    .action(
      run(async (ctx, id: string, subtask: string) =>
        perform(
          ctx,
          (r) => resume(r, id, subtask),
          (x) => [
            `${id}/${subtask}: ${x.outcomes[0]?.action ?? 'none'} (${x.outcomes[0]?.state})${x.outcomes[0]?.error ? `: ${x.outcomes[0].error.message}` : ''}`,
          ],
        ),
      ),
    );

  withRoot(graph.command('stop'))
    .description('Stop the graph or one subtask: STOPPED on the coordinator, local implementers ended, their worktrees removed (branches kept)')
    .argument('<id>', 'the parent task id (task-…)')
    .argument('[subtask]', 'one subtask only')
    .requiredOption('--reason <text>', 'why (recorded)')
    .addHelpText(
      'after',
      examples(['coord graph stop task-product-slice --reason "release cancelled"', 'coord graph stop task-product-slice frontend --reason "wrong approach"']),
    )
    .action(
      run<{ reason: string }>(async (ctx, id: string, subtask?: string) =>
        perform(
          ctx,
          (r) => stop(r, id, ctx.opts.reason, subtask),
          (x) => [
            `Stopped ${id}: ${
              x.outcomes
                .filter((o) => o.action === 'stopped')
                .map((o) => o.subtaskId)
                .join(', ') || 'nothing active'
            }; graph ${x.graph.state}`,
          ],
        ),
      ),
    );

  withRoot(graph.command('cleanup'))
    .description('Remove the owned worktrees of finished subtasks (RUNNING ones are skipped) and record the outcomes')
    .argument('<id>', 'the parent task id (task-…)')
    .argument('[subtask]', 'one subtask only')
    .addHelpText('after', examples(['coord graph cleanup task-product-slice']))
    .action(
      run(async (ctx, id: string, subtask?: string) =>
        perform(
          ctx,
          (r) => cleanup(r, id, subtask),
          (x) => [
            `Cleanup of ${id}:`,
            ...table(
              ['SUBTASK', 'CLEANUP'],
              x.outcomes.map((o) => [o.subtaskId, `${(o.cleanup as { status?: string } | null)?.status ?? '-'}${o.idempotent ? ' (unchanged)' : ''}`]),
            ),
          ],
        ),
      ),
    );

  withRoot(graph.command('integrate'))
    .option('--quiet', 'no progress lines on stderr')
    .description('Cherry-pick the verified commits in subtask-id order into the integration worktree and record the result')
    .argument('<id>', 'the parent task id (task-…)')
    .addHelpText('after', examples(['coord graph integrate task-product-slice']))
    .action(
      run(async (ctx, id: string) =>
        perform(
          ctx,
          (r) => integrate(r, id),
          (x) => {
            const i = x.integration as {
              status: string;
              aggregateCommit?: string | null;
              sourceFingerprint: string;
              conflict?: { subtaskId: string; message: string } | null;
            };
            return [
              i.status === 'SUCCEEDED'
                ? `Integrated ${id} into ${x.branch} at ${i.aggregateCommit} (${i.sourceFingerprint})`
                : `Integration of ${id} ${i.status}: ${i.conflict?.message ?? ''}`,
              ...nextLines(
                i.status === 'SUCCEEDED' ? reviewCommands(id) : [`coord graph inspect ${id}`, `coord graph cleanup ${id}`, `coord graph integrate ${id}`],
              ),
            ];
          },
          { progress: true },
        ),
      ),
    );

  withRoot(graph.command('review'))
    .description('Record the aggregate review; REVIEW_APPROVED authorises nothing else (no merge, push or release)')
    .argument('<id>', 'the parent task id (task-…)')
    .requiredOption('--decision <decision>', 'REVIEW_APPROVED or CHANGES_REQUESTED', (v: string) => {
      if (v !== 'REVIEW_APPROVED' && v !== 'CHANGES_REQUESTED') throw new InvalidArgumentError('REVIEW_APPROVED or CHANGES_REQUESTED');
      return v;
    })
    .option('--feedback <text>', 'bounded review notes')
    .addHelpText(
      'after',
      examples([
        'coord graph review task-product-slice --decision REVIEW_APPROVED',
        'coord graph review task-product-slice --decision CHANGES_REQUESTED --feedback "split the migration"',
      ]),
    )
    .action(
      run<{ decision: 'REVIEW_APPROVED' | 'CHANGES_REQUESTED'; feedback?: string }>(async (ctx, id: string) =>
        perform(
          ctx,
          (r) => review(r, id, ctx.opts.decision, ctx.opts.feedback),
          (x) =>
            x.decision === 'REVIEW_APPROVED'
              ? [`Review of ${id}: REVIEW_APPROVED; graph ${x.state}. ${x.authorizes.note}`]
              : [
                  `Review of ${id}: CHANGES_REQUESTED; graph ${x.state}.${ctx.opts.feedback ? ` Feedback: ${ctx.opts.feedback}` : ''}`,
                  'This graph runs no more waves: its subtasks are SUCCEEDED and are not run again.',
                  ...nextLines([`coord graph create <follow-up.json>   # the requested changes, as a new graph`, `coord graph status ${id}`]),
                ],
        ),
      ),
    );
}

/** `coord worker --agent <id>`: runs that Agent's subtasks here as they become claimable. */
export function workerCommand(io: Io, setExit: (code: number) => void, opts: { stop: AbortSignal }): Command {
  const run = <O>(fn: (ctx: Ctx<O & RootOptions>, ...args: any[]) => Promise<number | void>) => act<O & RootOptions>(io, setExit, fn);
  return new Command('worker')
    .description('Run one Agent’s task graph subtasks on this machine as they become claimable (waits on the event stream)')
    .requiredOption('--agent <id>', 'the Agent this worker runs (the token must be a session bound to it)')
    .option('--graph <id...>', 'only these graphs (default: every graph the session can see)')
    .option('--once', 'run what is claimable now, then exit')
    .option('--root <repository>', 'the git repository to run in (default: the current directory)')
    .option('--quiet', 'no progress lines on stderr')
    .addHelpText(
      'after',
      examples([
        'export COORD_TOKEN=$(coord session create --name backend-worker --agent agent-backend -q)',
        'coord worker --agent agent-backend --root ~/src/project',
        'coord worker --agent agent-backend --graph task-product-slice --once --json',
      ]),
    )
    .action(
      run<{ agent: string; graph?: string[]; once?: boolean }>(async (ctx) =>
        perform(
          ctx,
          async (r) => {
            const report = await work(r, ctx.opts.agent, {
              graphs: ctx.opts.graph,
              once: ctx.opts.once,
              signal: opts.stop,
              // One line per finished dispatch as it happens (JSON Lines in JSON mode), then the report.
              onOutcome: (o) =>
                ctx.out.json
                  ? ctx.out.jsonLine({ event: 'outcome', ...o })
                  : ctx.out.line(`${o.parentTaskId}/${o.subtaskId} #${o.attempt}: ${o.state}${o.error ? ` (${o.error.code}: ${o.error.message})` : ''}`),
            });
            return { ok: report.outcomes.every((o) => o.ok), command: 'coord.worker' as const, ...report };
          },
          (x) => [`Worker for ${x.agent} ran ${x.outcomes.length} subtask(s) on ${x.graphs.length} graph(s).`],
          { compact: true, signal: opts.stop, progress: true },
        ),
      ),
    );
}
