/**
 * Human and machine output. Humans get the seed's short messages and tables (seed 000
 * "Listing": ID, STATUS, TITLE, OWNER, ASSIGNEE, TAGS, WHY BLOCKED; sub-items indented); machines
 * get JSON on stdout (`--json`, or by default when `COORD_TOKEN` is in the environment: the
 * seed's agent mode). Errors go to stderr in both modes.
 */
import type { Session, TodoItem } from '@coord/sdk';

/** The streams and environment `main` runs with (the process's, or a test's). */
export interface Io {
  env: NodeJS.ProcessEnv;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  stdin?: NodeJS.ReadableStream & { isTTY?: boolean };
  /** The working directory the runner finds the repository from (default: the process's). */
  cwd?: string;
}

export class Out {
  constructor(
    readonly io: Io,
    /** JSON on stdout instead of human text. */
    readonly json: boolean,
  ) {}

  /**
   * Prints `human` (text, or lines) in human mode, `machine` as JSON in JSON mode: indented for a
   * terminal, one compact line for a pipe or a file (what a program reads, at a fraction of the bytes).
   */
  result(human: string | string[], machine: unknown): void {
    if (this.json) this.io.stdout.write(`${JSON.stringify(machine, null, (this.io.stdout as { isTTY?: boolean }).isTTY ? 2 : undefined)}\n`);
    else this.line(human);
  }

  /** One compact JSON document per line (streams such as `events follow`). */
  jsonLine(v: unknown): void {
    this.io.stdout.write(`${JSON.stringify(v)}\n`);
  }

  /** Human text on stdout (ignores JSON mode: callers decide). */
  line(text: string | string[]): void {
    const s = Array.isArray(text) ? text.join('\n') : text;
    this.io.stdout.write(s.endsWith('\n') || s === '' ? s : `${s}\n`);
  }

  /** A note for people on stderr (never mixed into machine output). */
  note(text: string): void {
    this.io.stderr.write(text.endsWith('\n') ? text : `${text}\n`);
  }
}

/** Pads columns to their widest cell; the last column is not padded. */
export function table(headers: string[], rows: string[][]): string[] {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const fmt = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [fmt(headers), ...rows.map(fmt)];
}

const dash = (v: string | undefined | null) => (v ? v : '-');

/** The seed's WHY BLOCKED cell: `dependencies: a,b` and, for a blocked item, its note, joined by `; `. */
export function whyBlocked(item: TodoItem): string {
  if (item.whyBlocked) return item.whyBlocked;
  const parts: string[] = [];
  if (item.blockedBy.length > 0) parts.push(`dependencies: ${item.blockedBy.join(',')}`);
  if (item.status === 'blocked' && item.note) parts.push(item.note);
  return parts.join('; ');
}

/** The seed's todo list table; sub-items are indented under the title column; `withScope` adds SCOPE (`--all`). */
export function todoTable(items: TodoItem[], withScope = false): string[] {
  if (items.length === 0) return ['No todo items.'];
  const headers = ['ID', 'STATUS', 'TITLE', 'OWNER', 'ASSIGNEE', 'TAGS', 'WHY BLOCKED', ...(withScope ? ['SCOPE'] : [])];
  const rows = items.map((i) => [
    i.id,
    i.leaseExpired ? `${i.status} (lease expired)` : i.status,
    (i.parentId ? '  ' : '') + i.title,
    dash(i.owner),
    dash(i.assignee),
    i.tags.length ? i.tags.join(',') : '-',
    dash(whyBlocked(i)),
    ...(withScope ? [i.scope] : []),
  ]);
  return table(headers, rows);
}

/** One item, field by field (`coord todo get`). */
export function todoDetail(i: TodoItem): string[] {
  const lines = [`${i.id}  ${i.title}`];
  const add = (k: string, v: string | undefined) => {
    if (v) lines.push(`  ${k.padEnd(10)} ${v}`);
  };
  add('status', i.status + (i.ready ? ' (ready)' : '') + (i.leaseExpired ? ' (lease expired)' : ''));
  add('scope', i.scope);
  add('owner', i.owner);
  add('assignee', i.assignee);
  add('parent', i.parentId);
  add('tags', i.tags.join(', '));
  add('depends on', i.dependsOn.join(', '));
  add('blocked', whyBlocked(i));
  add('note', i.note);
  add('result', resultText(i.result));
  add('lease', i.leaseExpiresAt ? `until ${i.leaseExpiresAt}` : undefined);
  add('revision', String(i.revision));
  add('position', String(i.position));
  if (i.priority) add('priority', String(i.priority));
  add('created', `${i.createdAt} by ${i.createdBy}`);
  add('updated', i.updatedAt);
  return lines;
}

/** A `done` result on one line: a text result as it is, any other JSON value as compact JSON; undefined when none. */
export function resultText(result: unknown): string | undefined {
  if (result === undefined || result === null) return undefined;
  return (typeof result === 'string' ? result : JSON.stringify(result)).replace(/\s*[\r\n]+\s*/g, ' ');
}

/** The sessions table (`coord session list`). */
export function sessionTable(sessions: Session[]): string[] {
  if (sessions.length === 0) return ['No sessions.'];
  return table(
    ['ID', 'NAME', 'STATUS', 'ALIVE', 'LAST SEEN', 'HOLDING', 'PARENT', 'SCOPE', 'CREATED'],
    sessions.map((s) => [
      s.id,
      s.name,
      s.status,
      s.alive ? 'yes' : 'no',
      dash(s.lastSeenAt),
      String(s.holding?.count ?? 0),
      dash(s.parentId),
      s.scope,
      s.createdAt,
    ]),
  );
}

/** One session, field by field. */
export function sessionDetail(s: Session): string[] {
  const lines = [`${s.id}  ${s.name}`];
  const add = (k: string, v: string | undefined) => {
    if (v) lines.push(`  ${k.padEnd(10)} ${v}`);
  };
  add('status', s.status);
  add('scope', s.scope);
  add('parent', s.parentId);
  add('root', s.rootId);
  add('system', s.systemKind);
  add('created', `${s.createdAt} by ${s.createdBy}`);
  add('alive', s.alive ? 'yes' : 'no');
  add('last seen', s.lastSeenAt);
  add('heartbeat', s.heartbeatIntervalMs === undefined ? undefined : `every ${s.heartbeatIntervalMs} ms or auto-stopped`);
  add('stopped', s.stoppedAt && `${s.stoppedAt}${s.stopReason ? ` (${s.stopReason})` : ''}`);
  if (s.holding) {
    add('holding', `${s.holding.count} item${s.holding.count === 1 ? '' : 's'}`);
    for (const h of s.holding.items) lines.push(`    ${h.id}  since ${h.since}  ${h.title}`);
  }
  return lines;
}

/** One event as a line: `#<seq> <event> <id> status=… owner=… blockedBy=… rev=…`. */
export function eventLine(e: { seq?: number; event: string; data: Record<string, unknown> }): string {
  const d = e.data;
  const parts = [e.seq === undefined ? '-' : `#${e.seq}`, e.event];
  if (typeof d.id === 'string') parts.push(d.id);
  if (d.status) parts.push(`status=${d.status}`);
  if (d.owner) parts.push(`owner=${d.owner}`);
  if (Array.isArray(d.blockedBy) && d.blockedBy.length) parts.push(`blockedBy=${d.blockedBy.join(',')}`);
  if (d.revision !== undefined) parts.push(`rev=${d.revision}`);
  if (e.event === 'resync' && typeof d.reason === 'string') parts.push(`(${d.reason})`);
  return parts.join(' ');
}
