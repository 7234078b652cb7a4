/**
 * Builds the dashboard (`ui/src`) into `ui/dist` with esbuild: one hashed ES module bundle (Preact,
 * the layout library and the SDK inside it, no CDN), its stylesheet, and `index.html` naming both.
 * `ui/dist` is committed so a clone serves the dashboard with no build step and no internet.
 *
 *   tsx scripts/build-ui.ts           # write ui/dist
 *   tsx scripts/build-ui.ts --check   # exit 1 when ui/dist is not what the sources build (CI)
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const dist = join(root, 'ui/dist');

/** The files of a build, by name (relative to ui/dist). */
export async function buildUi(): Promise<Map<string, string>> {
  const result = await build({
    absWorkingDir: root,
    entryPoints: ['ui/src/main.tsx'],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: ['es2022'],
    minify: true,
    jsx: 'automatic',
    jsxImportSource: 'preact',
    entryNames: 'app-[hash]',
    outdir: 'ui/dist',
    write: false,
    legalComments: 'eof',
    logLevel: 'warning',
    tsconfig: 'ui/tsconfig.json',
  });
  const files = new Map<string, string>();
  for (const f of result.outputFiles) files.set(basename(f.path), f.text);
  const js = [...files.keys()].find((n) => n.endsWith('.js'));
  const css = [...files.keys()].find((n) => n.endsWith('.css'));
  if (!js || !css) throw new Error('ui build: expected one .js and one .css output');
  const html = readFileSync(join(root, 'ui/index.html'), 'utf8').replace('%APP_JS%', js).replace('%APP_CSS%', css);
  files.set('index.html', html);
  return files;
}

async function main() {
  const files = await buildUi();
  if (process.argv.includes('--check')) {
    let present: string[] = [];
    try {
      present = readdirSync(dist);
    } catch {}
    const stale = [...files].filter(([name, text]) => {
      try {
        return readFileSync(join(dist, name), 'utf8') !== text;
      } catch {
        return true;
      }
    });
    const extra = present.filter((n) => !files.has(n));
    if (stale.length || extra.length) {
      console.error(`ui/dist is not what ui/src builds (${[...stale.map(([n]) => n), ...extra].join(', ')}): run npm run ui:build and commit ui/dist`);
      process.exit(1);
    }
    console.log('ui/dist is up to date');
    return;
  }
  rmSync(dist, { recursive: true, force: true });
  mkdirSync(dist, { recursive: true });
  for (const [name, text] of files) writeFileSync(join(dist, name), text);
  console.log(`ui/dist: ${[...files].map(([n, t]) => `${n} ${(t.length / 1024).toFixed(1)} KiB`).join(', ')}`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
