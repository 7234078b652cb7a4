/** Helpers for tests that run the docs and the CLI as a reader would: README blocks and child processes. */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

export const REPO_ROOT = path.resolve(import.meta.dirname, '../..');

/** A doc's text (`file` relative to the repository: README.md, docs/tutorial/curl.md, …). */
export function docText(file: string): string {
  return readFileSync(path.join(REPO_ROOT, file), 'utf8');
}

/** The first ```sh block after a `## <heading>` line of the doc `file`. */
export function shBlockAfter(heading: string, file: string): string {
  const text = docText(file);
  const at = text.indexOf(`\n## ${heading}\n`);
  if (at < 0) throw new Error(`${file} has no "## ${heading}" section`);
  const m = /```sh\n([\s\S]*?)```/.exec(text.slice(at));
  if (!m) throw new Error(`${file} "## ${heading}" has no sh block`);
  return m[1];
}

export interface ProcessResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Spawns a command, feeds it `input` (or nothing) and collects its output and exit code. */
export function runProcess(command: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string } = {}): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: opts.cwd ?? REPO_ROOT, env: opts.env ?? { ...process.env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    // A command that exits without reading its input closes the pipe first: not an error.
    child.stdin.on('error', () => undefined);
    child.stdin.end(opts.input ?? '');
  });
}

/** Runs a bash script with `-e -o pipefail`. */
export function bash(script: string, opts: { cwd: string; env?: NodeJS.ProcessEnv }): Promise<ProcessResult> {
  return runProcess('bash', ['-e', '-o', 'pipefail', '-c', script], opts);
}
