/**
 * The modules' registrations happen in buildApp only (src/modules.ts `wireModules`): importing a
 * scope-kind or stop-hook module registers nothing, wiring registers all of them, twice is once,
 * and no file in src/ is imported for its side effect.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

describe('wiring', () => {
  it('importing the scope and hook modules registers nothing; wireModules registers them, idempotently', async () => {
    vi.resetModules();
    const scopes = await import('../../src/scopes/scopes.js');
    const sessions = await import('../../src/sessions/sessions.service.js');
    await import('../../src/graphs/graphs.scope.js');
    await import('../../src/metagit/metagit.scope.js');
    await import('../../src/scenarios/scenarios.scope.js');
    await import('../../src/graphs/execution/locked.js');
    await import('../../src/metagit/metagit.locked.js');
    expect(scopes.registeredScopeKinds()).toEqual([]);
    expect(sessions.stopHookCount()).toBe(0);
    const { wireModules } = await import('../../src/modules.js');
    wireModules();
    wireModules();
    expect(scopes.registeredScopeKinds().sort()).toEqual(['graph', 'metagit', 'scenario']);
    expect(sessions.stopHookCount()).toBe(2);
    vi.resetModules();
  });

  it('no module in src/ is imported for its side effect, and only modules.ts registers', () => {
    const offenders: string[] = [];
    for (const file of sources('src')) {
      const text = readFileSync(file, 'utf8');
      if (/^import\s+['"]\.{1,2}\//m.test(text)) offenders.push(`${file}: side-effect import`);
      if (file !== join('src', 'modules.ts') && /^(registerScopeKind|onSessionStopped)\(/m.test(text)) offenders.push(`${file}: top-level registration`);
    }
    expect(offenders).toEqual([]);
  });
});
