/**
 * Deterministic expand-from-outline (metagit RFC-0008; docs/seeds/metagit.md §4), pure: an indented
 * outline or a JSON list of `{title, nodeId?, dependsOn?, project?, repository?}` becomes the nodes
 * and edges to add to a graph that already holds `existing` node ids.
 *
 * Upstream's rules, kept: blank lines dropped; indent = leading spaces/tabs (a tab counts one);
 * bullets `-`/`*` stripped; node id = slug of the title (lowercase, runs of non-[a-z0-9] → `-`,
 * trimmed, at most 48 characters, `node` when empty); repeats get `-2`, `-3`, …; each line depends on
 * the nearest preceding line with a smaller indent. Upstream's gaps, not inherited (docs/seeds/metagit.md §9): a
 * collision with an existing node is resolved by the same `-N` rule — never a random suffix — and
 * references inside the batch follow the renamed node; an explicit `nodeId` that is taken is
 * refused; unknown dependency ids are refused before the cycle check, each naming the ids.
 */
import { findCycle } from '../lib/dag.js';

/** Node ids (and graph and intent ids): the RFC's slug pattern, at most 128 characters, not `.` or `..` (path segments). */
export const SLUG_ID = /^(?!\.+$)[\w.-]{1,128}$/;
export const MAX_EXPAND_NODES = 1000;

export interface OutlineItem {
  title: string;
  nodeId?: string;
  dependsOn?: string[];
  project?: string;
  repository?: string;
}

/** The RFC's snake_case spelling of an outline item's field -> ours (seed 001 §TaskNode: `node_id`, `depends_on`). */
export const OUTLINE_RFC_FIELDS = { node_id: 'nodeId', depends_on: 'dependsOn' } as const;

/**
 * One outline item (an object of a JSON list) with the RFC's snake_case field names (`node_id`,
 * `depends_on`, seed 001) rewritten to ours (`nodeId`, `dependsOn`); other keys are kept as they are.
 * Returns the field pair as an error string when an item spells the same field both ways
 * (`"node_id" and "nodeId"`); never throws. Used by expand for JSON bodies and JSON-list text.
 */
export function normaliseOutlineItem(raw: Record<string, unknown>): { item: Record<string, unknown> } | { error: string } {
  let item = raw;
  for (const [rfc, ours] of Object.entries(OUTLINE_RFC_FIELDS)) {
    if (!(rfc in item)) continue;
    if (ours in item) return { error: `"${rfc}" and "${ours}" are the same field; give one` };
    const { [rfc]: v, ...rest } = item;
    item = { ...rest, [ours]: v };
  }
  return { item };
}

export interface ExpandedNode {
  nodeId: string;
  title: string;
  dependsOn: string[];
  project: string | null;
  repository: string | null;
}

export type ExpandResult = { ok: true; nodes: ExpandedNode[] } | { ok: false; code: ExpandError; message: string; ids?: string[] };
export type ExpandError = 'outline_empty' | 'outline_invalid' | 'node_id_taken' | 'dependency_not_found' | 'dependency_cycle' | 'too_many_nodes';

/** The RFC's slug: lowercase, runs of non-[a-z0-9] become `-`, trimmed of `-`, ≤ 48, `node` when empty. */
export function slug(title: string): string {
  const s = title
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 48)
    .replace(/-+$/g, '');
  return s || 'node';
}

/** `base`, or the first of `base-2`, `base-3`, … that `taken` does not hold. */
function unique(base: string, taken: Set<string>): string {
  if (!taken.has(base)) return base;
  for (let n = 2; ; n++) if (!taken.has(`${base}-${n}`)) return `${base}-${n}`;
}

/** The items of an indented outline text: titles with their parent line (by indentation). */
function parseText(text: string): { title: string; parent: number | null }[] {
  const lines = text.split(/\r\n|\r|\n/).filter((l) => l.trim() !== '');
  const out: { title: string; parent: number | null; indent: number }[] = [];
  for (const line of lines) {
    const indent = /^[ \t]*/.exec(line)![0].length;
    const title = line.replace(/^[\s\-*]+/, '').trim();
    let parent: number | null = null;
    for (let i = out.length - 1; i >= 0; i--) {
      if (out[i].indent < indent) {
        parent = i;
        break;
      }
    }
    out.push({ title, parent, indent });
  }
  return out;
}

/**
 * Expands `outline` (text, or a list of items) against the graph's `existing` node ids. Returns the
 * new nodes in outline order with their final ids and dependencies, or the first refusal.
 */
export function expandOutline(outline: string | unknown[], existing: ReadonlySet<string>): ExpandResult {
  let items: {
    title: string;
    requested: string | null;
    explicit: boolean;
    deps: string[] | null;
    parent: number | null;
    project: string | null;
    repository: string | null;
  }[];
  if (typeof outline === 'string') {
    // A JSON list when the text parses as one; otherwise an outline (`[WIP] Root` is a title).
    if (outline.trim().startsWith('[')) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(outline);
      } catch {
        parsed = undefined;
      }
      if (Array.isArray(parsed)) return expandOutline(parsed, existing);
    }
    const text = outline;
    items = parseText(text).map((l) => ({ title: l.title, requested: null, explicit: false, deps: null, parent: l.parent, project: null, repository: null }));
  } else if (Array.isArray(outline)) {
    items = [];
    const KEYS = new Set(['title', 'nodeId', 'dependsOn', 'project', 'repository']);
    for (const [i, raw] of outline.entries()) {
      if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
        return {
          ok: false,
          code: 'outline_invalid',
          message: `outline item ${i} must be an object {title, nodeId? (node_id?), dependsOn? (depends_on?), project?, repository?}`,
        };
      const norm = normaliseOutlineItem(raw as Record<string, unknown>);
      if ('error' in norm) return { ok: false, code: 'outline_invalid', message: `outline item ${i}: ${norm.error}` };
      const extra = Object.keys(norm.item).find((k) => !KEYS.has(k));
      if (extra !== undefined) return { ok: false, code: 'outline_invalid', message: `outline item ${i} has an unknown field "${extra.slice(0, 64)}"` };
      const item = norm.item as unknown as OutlineItem;
      if (typeof item.title !== 'string') return { ok: false, code: 'outline_invalid', message: `outline item ${i} requires a title` };
      for (const key of ['project', 'repository'] as const) {
        if (item[key] !== undefined && (typeof item[key] !== 'string' || item[key]!.length > 300))
          return { ok: false, code: 'outline_invalid', message: `outline item ${i}: ${key} must be a string of at most 300 characters` };
      }
      if (item.nodeId !== undefined && (typeof item.nodeId !== 'string' || !SLUG_ID.test(item.nodeId))) {
        return { ok: false, code: 'outline_invalid', message: `outline item ${i}: nodeId must match [A-Za-z0-9_.-]{1,128}` };
      }
      if (item.dependsOn !== undefined && (!Array.isArray(item.dependsOn) || item.dependsOn.some((d) => typeof d !== 'string'))) {
        return { ok: false, code: 'outline_invalid', message: `outline item ${i}: dependsOn must be a list of node ids` };
      }
      items.push({
        title: item.title,
        requested: item.nodeId ?? null,
        explicit: item.nodeId !== undefined,
        deps: item.dependsOn ?? [],
        parent: null,
        project: typeof item.project === 'string' ? item.project : null,
        repository: typeof item.repository === 'string' ? item.repository : null,
      });
    }
  } else {
    return { ok: false, code: 'outline_invalid', message: 'JSON outline must be a list' };
  }
  if (items.length === 0) return { ok: false, code: 'outline_empty', message: 'outline is empty' };
  if (items.length > MAX_EXPAND_NODES)
    return { ok: false, code: 'too_many_nodes', message: `an expand adds at most ${MAX_EXPAND_NODES} nodes; this one has ${items.length}` };
  for (const [i, it] of items.entries()) {
    it.title = it.title.trim();
    if (!it.title) return { ok: false, code: 'outline_invalid', message: `outline item ${i} requires a title` };
  }
  // Final ids: explicit ones must be free; derived ones take the next free `-N`.
  const taken = new Set(existing);
  const finalIds: string[] = [];
  const renamed = new Map<string, string>();
  for (const it of items) {
    if (it.explicit) {
      if (taken.has(it.requested!))
        return { ok: false, code: 'node_id_taken', message: `node id "${it.requested}" is already in this graph or this outline`, ids: [it.requested!] };
      finalIds.push(it.requested!);
      taken.add(it.requested!);
      renamed.set(it.requested!, it.requested!);
      continue;
    }
    const base = slug(it.title);
    const id = unique(base, taken);
    finalIds.push(id);
    taken.add(id);
    // A reference by the slug within the batch means this item (the first one with that slug).
    if (!renamed.has(base)) renamed.set(base, id);
  }
  const nodes: ExpandedNode[] = items.map((it, i) => {
    // Outline lines depend on their parent line; list items name ids, and an id an item of this
    // batch asked for (or derived) means that item, under its final id.
    const deps = it.parent !== null ? [finalIds[it.parent]] : (it.deps ?? []).map((d) => renamed.get(d) ?? d);
    return { nodeId: finalIds[i], title: it.title, dependsOn: [...new Set(deps)].sort(), project: it.project, repository: it.repository };
  });
  const known = new Set([...existing, ...finalIds]);
  const unknown = [...new Set(nodes.flatMap((n) => n.dependsOn).filter((d) => !known.has(d)))].sort();
  if (unknown.length) return { ok: false, code: 'dependency_not_found', message: `unknown dependency ids: ${unknown.join(', ')}`, ids: unknown };
  const self = nodes.find((n) => n.dependsOn.includes(n.nodeId));
  if (self) return { ok: false, code: 'dependency_cycle', message: `node "${self.nodeId}" depends on itself`, ids: [self.nodeId] };
  const cycle = findCycle(nodes.map((n) => ({ id: n.nodeId, dependsOn: n.dependsOn.filter((d) => finalIds.includes(d)) })));
  if (cycle) return { ok: false, code: 'dependency_cycle', message: `dependency cycle: ${cycle.join(' -> ')}`, ids: cycle };
  return { ok: true, nodes };
}
