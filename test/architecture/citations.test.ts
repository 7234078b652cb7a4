/**
 * Comments and docs cite only what a clone holds: a section of `docs/seeds/*.md` or
 * `docs/architecture.md`, a file, a test. Notes kept outside the repository and ticket numbers
 * mean nothing to a reader of the code, and a comment should say why, not which ticket asked.
 * Comments are found with the TypeScript parser (strings are code, not prose, and are not read
 * here); Markdown files are read whole. Runs in the unit tier, without a database.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FOLDERS = ['src', 'cli', 'sdk/src', 'mcp', 'ui/src', 'test', 'bench', 'chaos', 'scripts', 'docs'];
const TOP_FILES = ['README.md'];
/** Generated from the API's descriptions (strings), so not prose this test owns. */
const SKIPPED = new Set(['node_modules', 'dist', 'generated']);
const CODE = /\.(?:[cm]?[jt]s|tsx)$/;

/**
 * What a comment must not cite, each with the reason a reader gets. The patterns are assembled
 * from pieces so that this file's own text never matches them.
 */
const FORBIDDEN: Array<{ pattern: RegExp; why: string }> = [
  { pattern: new RegExp(['seeds', 'notes'].join('[- ]'), 'i'), why: 'notes kept outside the repository: cite docs/seeds/*.md §N' },
  { pattern: new RegExp(['design', 'brief'].join('\\s+'), 'i'), why: 'a design text kept outside the repository: cite docs/architecture.md §DN' },
  { pattern: new RegExp(['\\.\\.', 'shared'].join('/')), why: 'a path outside the repository' },
  { pattern: new RegExp(`(?:^|[\\s(\`"'])${'shared'}/[\\w.-]+\\.md`), why: 'a note kept outside the repository' },
  { pattern: new RegExp(`\\b${'issue'}s?\\s+#?\\d+`, 'i'), why: 'a ticket number: say why instead' },
  { pattern: new RegExp(`\\b${'issue'}\\s+["“]`, 'i'), why: 'a ticket title: say why instead' },
];

function files(): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    let entries: import('node:fs').Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return; // a folder this checkout does not have
    }
    for (const e of entries) {
      const path = join(dir, e.name);
      if (e.isDirectory()) {
        if (!SKIPPED.has(e.name)) walk(path);
      } else if (CODE.test(e.name) || e.name.endsWith('.md')) {
        out.push(relative(ROOT, path));
      }
    }
  };
  for (const f of FOLDERS) walk(join(ROOT, f));
  return [...out, ...TOP_FILES].sort();
}

/** The comments of a source file as [start, end) offsets, read by the TypeScript parser. */
function commentRanges(file: string, text: string): Array<[number, number]> {
  const kind = file.endsWith('.tsx') ? ts.ScriptKind.TSX : /\.[cm]?js$/.test(file) ? ts.ScriptKind.JS : ts.ScriptKind.TS;
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, kind);
  const found = new Map<number, number>();
  const add = (ranges: ts.CommentRange[] | undefined): void => {
    for (const r of ranges ?? []) found.set(r.pos, r.end);
  };
  const visit = (node: ts.Node): void => {
    add(ts.getLeadingCommentRanges(text, node.getFullStart()));
    add(ts.getTrailingCommentRanges(text, node.getEnd()));
    // `{/* … */}` in JSX: the comment follows the `{`, which is not a node of its own.
    if (ts.isJsxExpression(node) && !node.expression) add(ts.getLeadingCommentRanges(text, node.getStart() + 1));
    node.forEachChild(visit);
  };
  visit(source);
  add(ts.getLeadingCommentRanges(text, source.endOfFileToken.getFullStart()));
  return [...found.entries()];
}

/** Every forbidden citation in comments (code) or anywhere (Markdown), as `file:line: text (why)`. */
function offences(): string[] {
  const out: string[] = [];
  for (const file of files()) {
    let text: string;
    try {
      text = readFileSync(join(ROOT, file), 'utf8');
    } catch {
      continue; // README.md missing in a partial checkout
    }
    const spans = file.endsWith('.md') ? [[0, text.length] as [number, number]] : commentRanges(file, text);
    for (const [start, end] of spans) {
      const prose = text.slice(start, end);
      for (const { pattern, why } of FORBIDDEN) {
        const global = new RegExp(pattern.source, `${pattern.flags}g`);
        for (const m of prose.matchAll(global)) {
          const at = start + (m.index ?? 0);
          const line = text.slice(0, at).split('\n').length;
          const context = text.slice(Math.max(0, at - 30), at + m[0].length + 30).replace(/\s+/g, ' ');
          out.push(`${file}:${line}: …${context}… (${why})`);
        }
      }
    }
  }
  return out;
}

describe('citations in comments and docs', () => {
  it('should cite only the repository', () => {
    expect(offences()).toEqual([]);
  });

  it('should report a citation planted in a comment, not one in a string', () => {
    const planted = `const a = '${['seeds', 'notes'].join('-')}'; // see the ${['design', 'brief'].join(' ')}\n`;
    const [range] = commentRanges('planted.ts', planted);
    const comment = planted.slice(range[0], range[1]);
    expect(FORBIDDEN.filter((f) => f.pattern.test(comment)).map((f) => f.why)).toEqual([FORBIDDEN[1].why]);
    expect(commentRanges('planted.ts', planted)).toHaveLength(1);
  });
});
