/** Documents the CLI reads from a file or stdin (`-`): graph files, bulk todo items. */
import { readFileSync } from 'node:fs';
import type { Io } from './output.js';
import { UsageError } from './runtime.js';

/** The text of `file`, or of stdin when `file` is `-` (empty when there is no stdin). */
export async function readText(io: Io, file: string): Promise<string> {
  if (file !== '-') return readFileSync(file, 'utf8');
  if (!io.stdin) return '';
  let text = '';
  for await (const chunk of io.stdin) text += String(chunk);
  return text;
}

/** `text` parsed as JSON; a usage error naming `what` (a file name or `stdin`) otherwise. */
export function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${what} is not JSON: ${(err as Error).message}`);
  }
}
