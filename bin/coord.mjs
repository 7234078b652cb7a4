#!/usr/bin/env node
// The `coord` CLI (package.json "bin"): the compiled CLI (dist/node/coord.mjs, which `npm install`
// builds and `npm run build` rebuilds), or, when a source is newer than that build (a checkout
// being edited), the TypeScript sources through tsx (a dev dependency). scripts/build.mjs decides.
import { pathToFileURL } from 'node:url';
import { isFresh, outputs } from '../scripts/build.mjs';

process.setSourceMapsEnabled(true);
if (isFresh()) {
  await import(pathToFileURL(outputs().coord).href);
} else {
  const { register } = await import('tsx/esm/api').catch(() => {
    process.stderr.write('coord: the build in dist/node is missing or older than the sources, and tsx is not installed: run `npm run build`\n');
    process.exit(1);
  });
  register();
  await import('../cli/bin.ts');
}
