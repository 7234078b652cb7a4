#!/usr/bin/env node
// Builds the two packages an agent machine installs — `@coord/sdk` and `@coord/cli` (the `coord`
// command and its runner) — as plain JavaScript with type declarations, and packs them with
// `npm pack` into build/. Neither contains server code or
// depends on the server's packages. Usage: `npm run pack` (prints the tarball paths);
// `npm run pack -- --out DIR` builds into DIR instead of build/ (the tests use a temp folder, so
// two test runs in one checkout do not empty each other's).
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outAt = process.argv.indexOf('--out');
const OUT = outAt > 0 && process.argv[outAt + 1] ? path.resolve(process.argv[outAt + 1]) : path.join(ROOT, 'build');
const root = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
const sdk = JSON.parse(readFileSync(path.join(ROOT, 'sdk', 'package.json'), 'utf8'));
const version = root.version;

const tsc = (args) => execFileSync(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), ...args], { cwd: ROOT, stdio: 'inherit' });
const compilerFlags = [
  '--target',
  'ES2022',
  '--module',
  'NodeNext',
  '--moduleResolution',
  'NodeNext',
  '--strict',
  '--skipLibCheck',
  '--esModuleInterop',
  '--declaration',
  '--types',
  'node',
];

rmSync(OUT, { recursive: true, force: true });

// @coord/sdk: sdk/src → dist.
const sdkDir = path.join(OUT, 'pkg', 'sdk');
tsc([...compilerFlags, '--rootDir', 'sdk/src', '--outDir', path.join(sdkDir, 'dist'), ...listTs('sdk/src')]);
writeFileSync(
  path.join(sdkDir, 'package.json'),
  `${JSON.stringify(
    {
      name: '@coord/sdk',
      version,
      description: sdk.description,
      type: 'module',
      engines: sdk.engines,
      exports: {
        '.': { types: './dist/index.d.ts', default: './dist/index.js' },
        './generated': { types: './dist/generated/openapi.d.ts', default: './dist/generated/openapi.js' },
      },
      files: ['dist', 'README.md'],
      dependencies: sdk.dependencies,
    },
    null,
    2,
  )}\n`,
);
cpSync(path.join(ROOT, 'sdk', 'README.md'), path.join(sdkDir, 'README.md'));

// @coord/cli: cli/ and mcp/ (the MCP tool set `coord mcp` serves) → dist, with a plain-JavaScript
// bin (no TypeScript loader at run time). tsc also emits the dependency-free server helpers the CLI
// imports (src/lib/duration.ts, one duration syntax for server and CLI) under dist/src/.
const cliDir = path.join(OUT, 'pkg', 'cli');
tsc([...compilerFlags, '--rootDir', '.', '--outDir', path.join(cliDir, 'dist'), ...listTs('cli'), ...listTs('mcp')]);
mkdirSync(path.join(cliDir, 'bin'), { recursive: true });
// The process around `main` is cli/bin.ts, compiled with the rest.
const bin = "#!/usr/bin/env node\n// The `coord` CLI (@coord/cli): plain JavaScript, built by scripts/pack.mjs.\nawait import('../dist/cli/bin.js');\n";
writeFileSync(path.join(cliDir, 'bin', 'coord.js'), bin, { mode: 0o755 });
writeFileSync(
  path.join(cliDir, 'package.json'),
  `${JSON.stringify(
    {
      name: '@coord/cli',
      version,
      description: 'The coord command: drive Coord from the shell, and run task graphs in git worktrees on the agent’s machine.',
      type: 'module',
      engines: root.engines,
      bin: { coord: 'bin/coord.js' },
      files: ['bin', 'dist', 'README.md'],
      dependencies: {
        '@coord/sdk': version,
        commander: root.dependencies.commander,
        '@modelcontextprotocol/sdk': root.dependencies['@modelcontextprotocol/sdk'],
      },
    },
    null,
    2,
  )}\n`,
);
writeFileSync(
  path.join(cliDir, 'README.md'),
  '# @coord/cli\n\nThe `coord` command for [Coord](../../README.md): todo lists, sessions, task graphs and events from the shell, and the\nrunner that executes task graphs in git worktrees. Install it with `@coord/sdk` from the tarballs `npm run pack` builds.\n',
);

const tarballs = [];
for (const dir of [sdkDir, cliDir]) {
  const name = execFileSync('npm', ['pack', '--silent', '--pack-destination', OUT], { cwd: dir, encoding: 'utf8' }).trim().split('\n').pop();
  tarballs.push(path.join(OUT, name));
}
console.log(tarballs.join('\n'));

function listTs(dir) {
  return readdirSync(path.join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts'))
    .map((e) => path.relative(ROOT, path.join(e.parentPath ?? e.path, e.name)))
    .sort();
}
