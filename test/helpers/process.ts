/** Helpers for tests that run the docs and the CLI as a reader would: README blocks and child processes. */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

export const REPO_ROOT = path.resolve(import.meta.dirname, '../..');

/** The first ```sh block after a `## <heading>` line of README.md. */
export function shBlockAfter(heading: string): string {
  const readme = readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8');
  const at = readme.indexOf(`\n## ${heading}\n`);
  if (at < 0) throw new Error(`README.md has no "## ${heading}" section`);
  const m = /```sh\n([\s\S]*?)```/.exec(readme.slice(at));
  if (!m) throw new Error(`README.md "## ${heading}" has no sh block`);
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
    child.stdin.end(opts.input ?? '');
  });
}

/** Runs a bash script with `-e -o pipefail`. */
export function bash(script: string, opts: { cwd: string; env?: NodeJS.ProcessEnv }): Promise<ProcessResult> {
  return runProcess('bash', ['-e', '-o', 'pipefail', '-c', script], opts);
}
