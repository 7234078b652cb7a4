/** Documents the CLI reads from a file or stdin (`-`): graph files, bulk todo items. */
import { createReadStream, statSync } from 'node:fs';
import type { Readable } from 'node:stream';
import type { Io } from './output.js';
import { UsageError } from './runtime.js';

/**
 * A refusal of the CLI's own, in a contract's words (printed like the coordinator's): seed 002
 * bounds the file-based CLI input to 64 MiB before JSON parsing, with `TASK_GRAPH_INVALID` at
 * stage `graph-validation`.
 */
export class ContractRefusal extends Error {
  constructor(
    readonly code: string,
    readonly stage: string,
    message: string,
  ) {
    super(message);
    this.name = 'ContractRefusal';
  }
}

/** Seed 002: "The file-based CLI input is bounded to 64 MiB before JSON parsing." */
export const GRAPH_INPUT_MAX_BYTES = 64 * 1024 * 1024;

/** The text of `file`, or of stdin when `file` is `-` (empty when there is no stdin). */
export async function readText(io: Io, file: string): Promise<string> {
  return readBounded(io, file, Infinity, () => new Error('unreachable'));
}

/**
 * The text of `file` (or stdin for `-`), refused with `tooLarge(bytes)` once it is known to hold
 * more than `maxBytes`: a regular file by its size before anything is read, anything else (stdin, a
 * pipe) as soon as the bytes read pass the bound, so memory never holds more than the bound.
 */
export async function readBounded(io: Io, file: string, maxBytes: number, tooLarge: (bytes: number) => Error): Promise<string> {
  let source: AsyncIterable<unknown>;
  if (file === '-') {
    if (!io.stdin) return '';
    source = io.stdin as AsyncIterable<unknown>;
  } else {
    const st = statSync(file);
    if (st.isFile() && st.size > maxBytes) throw tooLarge(st.size);
    source = createReadStream(file) as Readable;
  }
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of source) {
    const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    bytes += b.length;
    if (bytes > maxBytes) {
      (source as Partial<Readable>).destroy?.();
      throw tooLarge(bytes);
    }
    chunks.push(b);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** A Task Graph (or Intent Map) input file, bounded as seed 002 says ({@link GRAPH_INPUT_MAX_BYTES}). */
export function readGraphInput(io: Io, file: string): Promise<string> {
  const what = file === '-' ? 'stdin' : file;
  return readBounded(
    io,
    file,
    GRAPH_INPUT_MAX_BYTES,
    () =>
      new ContractRefusal(
        'TASK_GRAPH_INVALID',
        'graph-validation',
        `${what} is larger than 64 MiB (${GRAPH_INPUT_MAX_BYTES} bytes): Task Graph CLI input is bounded to 64 MiB before JSON parsing; it was not parsed or sent`,
      ),
  );
}

/** `text` parsed as JSON; a usage error naming `what` (a file name or `stdin`) otherwise. */
export function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${what} is not JSON: ${(err as Error).message}`);
  }
}
