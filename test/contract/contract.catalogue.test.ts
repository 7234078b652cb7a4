import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderOpenApi, OPENAPI_FILE } from '../../scripts/gen-openapi.js';
import { ERROR_CATALOGUE } from '../../src/http/errors.js';

/** Codes every route can return whatever it declares (auth, validation, database). */
const UNIVERSAL = ['unauthorized', 'validation_failed', 'rate_limited', 'busy', 'database_unavailable'];

describe('contract artifacts', () => {
  it('should keep the committed OpenAPI document equal to the one the routes generate', async () => {
    const generated = await renderOpenApi();
    const committed = readFileSync(OPENAPI_FILE, 'utf8');
    expect(committed === generated, 'openapi/openapi.json is stale: run `npm run openapi`').toBe(true);
  });

  it('should declare every tag an operation uses, each with a description, and name its server', async () => {
    const spec = JSON.parse(await renderOpenApi());
    const declared = new Map<string, string>(spec.tags.map((t: { name: string; description?: string }) => [t.name, t.description ?? '']));
    const used = new Set<string>();
    for (const methods of Object.values<any>(spec.paths)) for (const op of Object.values<any>(methods)) for (const tag of op.tags ?? []) used.add(tag);
    expect([...used].filter((t) => !declared.has(t))).toEqual([]);
    expect([...declared].filter(([name, description]) => !used.has(name) || !description)).toEqual([]);
    expect(spec.servers).toEqual([expect.objectContaining({ url: '/' })]);
  });

  it('should list every catalogue code in docs/errors.md and no other', () => {
    const doc = readFileSync('docs/errors.md', 'utf8');
    const documented = [...doc.matchAll(/^\| `([A-Za-z_]+)` \| (\d{3}) \|/gm)].map((m) => [m[1], Number(m[2])]);
    const catalogue = Object.entries(ERROR_CATALOGUE).map(([c, e]) => [c, e.status]);
    expect(documented.sort()).toEqual(catalogue.sort());
  });

  it('should only name catalogue codes in the OpenAPI document, and name every code a client can cause', async () => {
    const spec = JSON.parse(await renderOpenApi());
    const used = new Set<string>();
    for (const methods of Object.values<any>(spec.paths)) {
      for (const op of Object.values<any>(methods)) {
        for (const [status, res] of Object.entries<any>(op.responses ?? {})) {
          for (const code of res['x-problem-codes'] ?? []) {
            expect(ERROR_CATALOGUE, `unknown code ${code}`).toHaveProperty(code);
            expect((ERROR_CATALOGUE as any)[code].status).toBe(Number(status));
            used.add(code);
          }
        }
      }
    }
    const neverDeclared = Object.keys(ERROR_CATALOGUE).filter(
      (c) =>
        !used.has(c) &&
        !UNIVERSAL.includes(c) &&
        ![
          'internal_error',
          'not_found',
          'malformed_json',
          'unsupported_media_type',
          'payload_too_large',
          'malformed_url',
          'malformed_request',
          'uri_too_long',
          'expectation_failed',
          'headers_too_large',
          'constraint_violation',
          'shutting_down',
        ].includes(c),
    );
    expect(neverDeclared).toEqual([]);
  });
});
