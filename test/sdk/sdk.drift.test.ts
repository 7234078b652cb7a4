/**
 * Document ↔ SDK agreement: the committed generated types are exactly what
 * openapi-typescript makes of the committed OpenAPI document (routes ↔ document is checked in
 * test/contract). Fix a failure with `npm run sdk:generate`, never by editing the generated file.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderSdkTypes, SDK_TYPES_FILE } from '../../scripts/gen-sdk.js';

describe('generated SDK types', () => {
  it('should equal what openapi-typescript generates from openapi/openapi.json', async () => {
    const generated = await renderSdkTypes();
    const committed = readFileSync(SDK_TYPES_FILE, 'utf8');
    expect(committed === generated, 'sdk/src/generated/openapi.ts is stale: run `npm run sdk:generate`').toBe(true);
  });

  it('should carry the DO-NOT-EDIT header', () => {
    expect(readFileSync(SDK_TYPES_FILE, 'utf8').startsWith('/**\n * DO NOT EDIT.')).toBe(true);
  });
});
