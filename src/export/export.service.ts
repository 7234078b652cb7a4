/**
 * Scope export (seed 000 "Remove / export", docs/seeds/todo-list.md §12): a whole scope as Markdown or as a
 * JSON array of full items, streamed.
 *
 * Unlike the seed (whose export used the list query capped by `list_limit`, silently truncating),
 * the export pages through the scope internally with the list's keyset order `(position, id)`,
 * `EXPORT_PAGE` rows per query, and yields text chunks as it goes: memory stays bounded and the
 * output is complete however large the scope is. Each page is its own statement, so under
 * concurrent writes the export reads like paging the list endpoint does (an item moved to another
 * position during the export may be seen twice or not at all); on a quiet scope it equals the
 * list item for item.
 */
import type { Db } from '../db/client.js';
import type { TeamScope } from '../scopes/scopes.js';
import { TodoItem as TodoItemSchema } from '../todos/todos.schemas.js';
import { itemColumns, toItem, type TodoItem, type TodoRow } from '../todos/todos.view.js';

/** Rows per internal page. */
export const EXPORT_PAGE = 1000;

export type ExportFormat = 'markdown' | 'json';

/** Items of `scope` (a team's list) in (position, id) order, one keyset page per query. */
export async function* scopeItems(db: Db, { teamId, scope }: TeamScope, leaseMs: number, pageSize = EXPORT_PAGE): AsyncGenerator<TodoItem> {
  let after: { position: number; id: string } | undefined;
  for (;;) {
    const rows: TodoRow[] = await db<TodoRow[]>`
      select ${itemColumns(db, leaseMs)} from todos t
       where t.team_id = ${teamId} and t.scope = ${scope} ${after ? db`and (t.position, t.id) > (${after.position}::int, ${after.id})` : db``}
       order by t.position, t.id
       limit ${pageSize}`;
    // Same encoding as the list endpoint's serializer, so key order and omissions match exactly.
    for (const r of rows) yield TodoItemSchema.encode(toItem(r)) as TodoItem;
    if (rows.length < pageSize) return;
    const last = rows[rows.length - 1];
    after = { position: last.position, id: last.id };
  }
}

/** One item as the seed's Markdown line: checkbox, title, italic parenthetical; sub-items indented two spaces. */
export function markdownLine(item: TodoItem): string {
  const parts: string[] = [item.status];
  if (item.owner) parts.push(`owner ${item.owner}`);
  if (item.tags.length) parts.push(`tags ${item.tags.join(',')}`);
  if (item.blockedBy.length) parts.push(`blocked by ${item.blockedBy.join(',')}`);
  // A title may hold a line break (one item stays one line) and Markdown syntax, which is escaped
  // so a title cannot forge another item's checkbox or emphasis.
  return `${item.parentId ? '  ' : ''}- [${item.status === 'done' ? 'x' : ' '}] ${inlineText(item.title)} _(${parts.join(', ')})_`;
}

/** Text on one Markdown line: line breaks folded to a space, Markdown syntax escaped. */
function inlineText(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, ' ').replace(/[\\`*_[\]<>#|]/g, (c) => `\\${c}`);
}

/**
 * A done item's result as the line under its item, indented into it: `Result: ` and a
 * text result as it is, any other JSON value as compact JSON, on one line, escaped like titles.
 * Undefined when the item has no result. The JSON export carries the value itself.
 */
export function markdownResultLine(item: TodoItem): string | undefined {
  if (item.result === undefined) return undefined;
  const text = typeof item.result === 'string' ? item.result : JSON.stringify(item.result);
  return `${item.parentId ? '  ' : ''}  Result: ${inlineText(text)}`;
}

/**
 * The export as text chunks (one per page), for streaming.
 * Markdown: `# Todo export: <scope>`, a blank line, one line per item (`_(no items)_` when empty),
 * a done item's result on the line under it (`markdownResultLine`).
 * JSON: an indented array of full items, the same objects `GET /v1/todos` returns.
 */
export async function* exportChunks(db: Db, scope: TeamScope, format: ExportFormat, leaseMs: number, pageSize = EXPORT_PAGE): AsyncGenerator<string> {
  let buf = format === 'markdown' ? `# Todo export: ${scope.scope}\n\n` : '[';
  let n = 0;
  for await (const item of scopeItems(db, scope, leaseMs, pageSize)) {
    if (format === 'markdown') {
      buf += `${markdownLine(item)}\n`;
      const result = markdownResultLine(item);
      if (result) buf += `${result}\n`;
    } else buf += (n > 0 ? ',\n' : '\n') + JSON.stringify(item, null, 2).replace(/^/gm, '  ');
    n++;
    if (n % pageSize === 0) {
      yield buf;
      buf = '';
    }
  }
  if (format === 'markdown') buf += n === 0 ? '_(no items)_\n' : '';
  else buf += n === 0 ? ']\n' : '\n]\n';
  yield buf;
}

/** The file name the seed's store key would use: the scope with `:` and `/` replaced by `-`. */
export function exportFileName(scope: string, format: ExportFormat): string {
  return `${scope.replace(/[:/]/g, '-')}.${format === 'markdown' ? 'md' : 'json'}`;
}
