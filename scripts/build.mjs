#!/usr/bin/env node
// The server and the `coord` CLI as compiled JavaScript: `npm run build` bundles src/server.ts and
// cli/bin.ts with esbuild into dist/node/ (server.mjs, coord.mjs, each with a source map), and
// `npm start` and bin/coord.mjs run those. Packages stay imports from node_modules, except the SDK
// workspace (its entry is TypeScript), which is bundled in. dist/node/ is two folders below the
// repository, as src/db/ is, so the paths the code resolves from its own location (migrations,
// the dashboard) are the same compiled as from source.
//
// Usage:
//   node scripts/build.mjs              # build dist/node/
//   node scripts/build.mjs --if-stale   # build only when a source is newer than the build (npm
//                                       # start); without esbuild (a production install) it keeps
//                                       # the build it has, and fails only when there is none
//   --optional                          # with --if-stale: never fail (npm install's `prepare`,
//                                       # which also runs where the build is copied in afterwards)
// This is plain JavaScript, so it runs without tsx; esbuild is loaded only to build.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** The production build's folder. */
export const DIST = path.join(ROOT, 'dist', 'node');
/** What the build compiles from: a change under any of these makes the build stale. */
const INPUTS = ['src', 'cli', 'mcp', 'sdk/src', 'package.json'];
const ENTRIES = { server: 'src/server.ts', coord: 'cli/bin.ts' };

/** The entry files of a build in `dir`. */
export const outputs = (dir = DIST) => ({ server: path.join(dir, 'server.mjs'), coord: path.join(dir, 'coord.mjs') });

function newestMtime(p) {
  if (!existsSync(p)) return 0;
  const st = statSync(p);
  if (!st.isDirectory()) return st.mtimeMs;
  let newest = 0;
  for (const e of readdirSync(p, { withFileTypes: true })) {
    if (e.name === 'node_modules' || e.name.startsWith('.')) continue;
    newest = Math.max(newest, newestMtime(path.join(p, e.name)));
  }
  return newest;
}

/**
 * Whether the build in `dir` exists and is at least as new as every source. A checkout without
 * the sources (the container image) has nothing to be stale against.
 */
export function isFresh(dir = DIST) {
  const out = outputs(dir);
  if (!existsSync(out.server) || !existsSync(out.coord)) return false;
  const built = Math.min(statSync(out.server).mtimeMs, statSync(out.coord).mtimeMs);
  return INPUTS.every((i) => newestMtime(path.join(ROOT, i)) <= built);
}

/**
 * Bundles the server and the CLI into `dir`; each file is written whole and renamed into place.
 * `root` is the checkout to compile (another one's server, for the bench's comparisons: `only`
 * names the entries to build).
 */
export async function build(dir = DIST, root = ROOT, only = Object.keys(ENTRIES)) {
  const { build: esbuild } = await import('esbuild');
  const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
  const external = Object.keys({ ...pkg.dependencies, ...pkg.devDependencies }).flatMap((n) => [n, `${n}/*`]);
  const result = await esbuild({
    absWorkingDir: root,
    entryPoints: only.map((out) => ({ in: path.join(root, ENTRIES[out]), out })),
    outdir: dir,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external,
    sourcemap: true,
    write: false,
    // Bundled CommonJS (none of ours today) would need `require`; give it one.
    banner: { js: "import { createRequire as __coordRequire } from 'node:module'; const require = __coordRequire(import.meta.url);" },
    logLevel: 'warning',
  });
  mkdirSync(dir, { recursive: true });
  for (const f of result.outputFiles) {
    const tmp = `${f.path}.${process.pid}.tmp`;
    writeFileSync(tmp, f.contents);
    renameSync(tmp, f.path);
  }
  return outputs(dir);
}

/** The production build, rebuilt first when a source is newer (for the bench, chaos and demo scripts). */
export async function ensureBuilt() {
  if (!isFresh()) await build();
  return outputs();
}

async function hasEsbuild() {
  try {
    await import('esbuild');
    return true;
  } catch {
    return false;
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (!process.argv.includes('--if-stale') || !isFresh()) {
    if (!(await hasEsbuild())) {
      // A production install keeps the build it was given.
      if (existsSync(outputs().server) || process.argv.includes('--optional')) process.exit(0);
      console.error('coord: no build in dist/node and no esbuild to make one: run `npm install` (with dev dependencies), then `npm run build`');
      process.exit(1);
    }
    const t0 = performance.now();
    try {
      await build();
    } catch {
      // esbuild has printed what it could not compile (file, line, message); the old build is not run.
      console.error('coord: the build failed (above); dist/node was left as it was');
      process.exit(1);
    }
    console.error(`coord: built dist/node in ${Math.round(performance.now() - t0)} ms`);
  }
}
