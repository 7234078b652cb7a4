/**
 * Compiles the server and the `coord` binary to plain JavaScript once per test run, so the tests
 * that spawn them (test/helpers/server.ts, test/cli/helpers.ts) start a process in a fraction of
 * what `node --import tsx` takes to transpile the sources in every child. The output
 * lives in `.test-build/<pid>/` (not build/, which `npm run pack` empties while tests run), two
 * folders below the repository like `src/…/x.ts` is, so the
 * paths the code resolves from its own location (migrations, the dashboard, packages) are the
 * same. Packages stay imports from node_modules, except the SDK workspace, whose entry is
 * TypeScript. The real entry points (`npm start`, `bin/coord.mjs` with tsx) keep tests of their
 * own: test/process/server.process.test.ts, test/cli/cli.binary.test.ts and the walkthrough.
 */
import { mkdirSync, readFileSync, rmdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { build, type Plugin } from 'esbuild';

const ROOT = path.resolve(import.meta.dirname, '../..');

export interface BuiltEntries {
  /** The folder; removed by `removeBuilt`. */
  dir: string;
  /** `src/server.ts`, compiled. */
  server: string;
  /** `bin/coord.mjs` with the CLI compiled in (tsx's loader is not needed, so not loaded). */
  coord: string;
}

/** bin/coord.mjs registers tsx's loader for the TypeScript it imports; compiled, there is none. */
const noTsx: Plugin = {
  name: 'no-tsx',
  setup(b) {
    b.onResolve({ filter: /^tsx\/esm\/api$/ }, () => ({ path: 'tsx', namespace: 'no-tsx' }));
    b.onLoad({ filter: /.*/, namespace: 'no-tsx' }, () => ({ contents: 'export function register() {}', loader: 'js' }));
  },
};

export async function buildEntries(): Promise<BuiltEntries> {
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  const external = Object.keys({ ...pkg.dependencies, ...pkg.devDependencies }).flatMap((n) => [n, `${n}/*`]);
  const dir = path.join(ROOT, '.test-build', String(process.pid));
  mkdirSync(dir, { recursive: true });
  const out = { dir, server: path.join(dir, 'server.mjs'), coord: path.join(dir, 'coord.mjs') };
  await build({
    entryPoints: [
      { in: path.join(ROOT, 'src/server.ts'), out: 'server' },
      { in: path.join(ROOT, 'bin/coord.mjs'), out: 'coord' },
    ],
    outdir: dir,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external,
    plugins: [noTsx],
    // Bundled CommonJS (none of ours today) would need `require`; give it one.
    banner: { js: "import { createRequire as __coordRequire } from 'node:module'; const require = __coordRequire(import.meta.url);" },
    logLevel: 'warning',
  });
  return out;
}

export function removeBuilt(b: BuiltEntries | undefined): void {
  if (!b) return;
  rmSync(b.dir, { recursive: true, force: true });
  try {
    rmdirSync(path.dirname(b.dir)); // only when no other run's folder is left in it
  } catch {
    /* another run is still using it */
  }
}
