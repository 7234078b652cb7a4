/**
 * The docs as a reader meets them: the README is a front door (at most 15 KB), every doc under
 * docs/ is reachable from the docs index, and every relative link in them names a file that exists
 * and, with `#anchor`, a heading of that file (GitHub's anchors).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/process.js';

const DOCS = [
  'README.md',
  'sdk/README.md',
  'bench/README.md',
  ...readdirSync(path.join(REPO_ROOT, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
].filter((f) => existsSync(path.join(REPO_ROOT, f)));

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
const slug = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\- _]/gu, '')
    .replaceAll(' ', '-');

/** The text outside code blocks. */
const prose = (text: string) => text.replace(/^```[\s\S]*?^```/gm, '');

function anchorsOf(file: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of prose(readFileSync(path.join(REPO_ROOT, file), 'utf8')).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = slug(m[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

describe('the docs', () => {
  it('should keep the README a front door of at most 15 KB', () => {
    expect(statSync(path.join(REPO_ROOT, 'README.md')).size).toBeLessThanOrEqual(15 * 1024);
  });

  it('should resolve every relative link and anchor', () => {
    const broken: string[] = [];
    for (const file of DOCS) {
      const text = prose(readFileSync(path.join(REPO_ROOT, file), 'utf8'));
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1];
        if (/^[a-z]+:/i.test(target) || target.startsWith('//')) continue;
        const [rel, anchor] = target.split('#');
        const to = rel ? path.normalize(path.join(path.dirname(file), rel)) : file;
        if (!existsSync(path.join(REPO_ROOT, to))) {
          broken.push(`${file}: ${target} (no ${to})`);
          continue;
        }
        if (anchor && to.endsWith('.md') && !anchorsOf(to).has(anchor)) broken.push(`${file}: ${target} (no heading #${anchor} in ${to})`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('should list every doc under docs/ in the docs index', () => {
    const index = readFileSync(path.join(REPO_ROOT, 'docs/README.md'), 'utf8');
    const linked = new Set([...index.matchAll(/\]\(([^)#\s]+)/g)].map((m) => path.normalize(path.join('docs', m[1]))));
    const missing = DOCS.filter((f) => f.startsWith('docs/') && f !== 'docs/README.md' && !f.startsWith('docs/seeds/') && !linked.has(f));
    expect(missing).toEqual([]);
  });
});
