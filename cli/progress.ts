/**
 * Live progress of the runner's commands (`graph run|advance|dispatch|integrate`, `worker`) on
 * stderr, so stdout stays the result: one line per step as it happens (a wave claimed, a subtask
 * started or ended, an integration source applied), each with the seconds since the command
 * began. On a terminal a status line below them says what is running and for how long, redrawn
 * every second; to a pipe or a file only the plain lines go. `--quiet` turns it all off.
 */
import type { Progress } from './runner/runner.js';

export interface ProgressSink {
  /** Receives the runner's steps (RunnerContext.onProgress). */
  onProgress(p: Progress): void;
  /** Clears the status line and stops its timer; call once the command is done. */
  close(): void;
}

/** A sink that writes nothing (`--quiet`). */
export const SILENT: ProgressSink = { onProgress() {}, close() {} };

export function progressOn(stderr: NodeJS.WritableStream & { isTTY?: boolean }, now: () => number = () => performance.now()): ProgressSink {
  const started = now();
  const seconds = (t: number) => `${((t - started) / 1000).toFixed(1)}s`;
  const stamp = () => `[${seconds(now()).padStart(7)}]`;
  const tty = stderr.isTTY === true;
  /** What is running now: `parent/subtask #attempt` → since when. */
  const running = new Map<string, number>();
  let status = '';
  const draw = () => {
    const next = running.size === 0 ? '' : `running: ${[...running].map(([key, since]) => `${key} ${((now() - since) / 1000).toFixed(0)}s`).join(', ')}`;
    if (next === status) return;
    stderr.write(`\r\x1b[2K${next}`);
    status = next;
  };
  const timer = tty ? setInterval(draw, 1000) : undefined;
  timer?.unref();
  const say = (line: string) => {
    if (tty && status) {
      stderr.write('\r\x1b[2K');
      status = '';
    }
    stderr.write(`${stamp()} ${line}\n`);
    if (tty) draw();
  };
  return {
    onProgress(p) {
      if (p.kind === 'wave') {
        say(`${p.parentTaskId}: ${p.waveNumber === null ? 'wave' : `wave ${p.waveNumber}`} claimed: ${p.selected.join(', ') || 'nothing READY'}`);
        return;
      }
      if (p.kind === 'integration') {
        say(`${p.parentTaskId}: ${p.step === 'applied' ? `applied ${p.subtaskId} (${p.commit.slice(0, 12)})` : `cherry-pick of ${p.subtaskId} conflicted`}`);
        return;
      }
      const key = `${p.parentTaskId}/${p.subtaskId} #${p.attempt}`;
      const since = running.get(key);
      if (p.state === 'RUNNING') running.set(key, now());
      else running.delete(key);
      const took = since === undefined || p.state === 'RUNNING' ? '' : ` after ${((now() - since) / 1000).toFixed(1)}s`;
      say(`${key} ${p.state}${took}${p.commit ? ` ${p.commit.slice(0, 12)}` : ''}${p.note ? ` (${p.note})` : ''}`);
    },
    close() {
      if (timer) clearInterval(timer);
      if (tty && status) stderr.write('\r\x1b[2K');
      status = '';
    },
  };
}
