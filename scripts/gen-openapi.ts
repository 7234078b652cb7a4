/**
 * Writes the OpenAPI 3.1 document to openapi/openapi.json from the route zod schemas, without a
 * database (`buildApp` in document-only mode). `--check` fails when the committed file differs.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildApp } from '../src/app.js';
import { testConfig } from '../src/config.js';
import type { Sql } from '../src/db/client.js';

export const OPENAPI_FILE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../openapi/openapi.json');

/** The document as the running server serves it at /openapi.json, serialised stably. */
export async function renderOpenApi(): Promise<string> {
  const app = await buildApp({ sql: {} as Sql, config: testConfig(), documentOnly: true });
  await app.ready();
  const doc = app.swagger();
  await app.close();
  return `${JSON.stringify(doc, null, 2)}\n`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const text = await renderOpenApi();
  if (process.argv.includes('--check')) {
    const current = readFileSync(OPENAPI_FILE, 'utf8');
    if (current !== text) {
      console.error('openapi/openapi.json is out of date: run npm run openapi');
      process.exit(1);
    }
  } else {
    writeFileSync(OPENAPI_FILE, text);
    console.log(`wrote ${OPENAPI_FILE}`);
  }
}
