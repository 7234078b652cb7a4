import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { OPENAPI_FILE } from '../../scripts/gen-openapi.js';
import { createClient } from '../../sdk/src/index.js';
import { readFileSync } from 'node:fs';

const run = promisify(execFile);
const spec = JSON.parse(readFileSync(OPENAPI_FILE, 'utf8'));
const operations = Object.entries<Record<string, { operationId?: string }>>(spec.paths).flatMap(([p, methods]) =>
  Object.entries(methods).map(([method, op]) => ({ route: `${method.toUpperCase()} ${p}`, operationId: op.operationId })),
);

/** The operations no SDK method backs: probes and the scrape, read by orchestrators and Prometheus. */
const WITHOUT_SDK_METHOD = new Set(['healthz', 'readyz', 'metrics']);

/**
 * Redocly's recommended ruleset, warnings left on purpose (docs/reference/http-api.md → OpenAPI):
 * - info-license: the project has not chosen a licence;
 * - operation-4xx-response on the probes and the scrape: they answer 200 or 503 and refuse nothing.
 */
const TRIAGED = new Set([
  'info-license #/info',
  ...['/healthz', '/readyz', '/metrics'].map((p) => `operation-4xx-response #/paths/${p.replace('/', '~1')}/get/responses`),
]);

describe('the OpenAPI document with the ecosystem’s tools', () => {
  it('should name every operation after the SDK method that calls it (todos.next → todosNext)', () => {
    const client = createClient({ baseUrl: 'http://127.0.0.1:1' }) as unknown as Record<string, Record<string, unknown>>;
    const problems: string[] = [];
    const seen = new Set<string>();
    for (const { route, operationId } of operations) {
      if (!operationId) {
        problems.push(`${route}: no operationId`);
        continue;
      }
      if (seen.has(operationId)) problems.push(`${route}: operationId ${operationId} used twice`);
      seen.add(operationId);
      if (WITHOUT_SDK_METHOD.has(operationId)) continue;
      const m = /^([a-z]+)([A-Z]\w*)?$/.exec(operationId);
      const facade = m?.[2] ? client[m[1]] : client;
      const method = m?.[2] ? m[2][0].toLowerCase() + m[2].slice(1) : operationId;
      if (typeof facade?.[method] !== 'function') problems.push(`${route}: ${operationId} is no SDK method (client.${m?.[2] ? `${m[1]}.` : ''}${method})`);
    }
    expect(problems).toEqual([]);
    expect(operations.length).toBeGreaterThan(80);
  });

  it('should pass `redocly lint` with the recommended ruleset: no errors, and only the triaged warnings', async () => {
    const cli = path.join(path.dirname(createRequire(import.meta.url).resolve('@redocly/cli/package.json')), 'bin/cli.js');
    const { stdout } = await run(process.execPath, [cli, 'lint', OPENAPI_FILE, '--extends=recommended', '--format=json'], {
      // No telemetry and no update check: CI has no business calling out.
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
      maxBuffer: 16 * 1024 * 1024,
    }).catch((err: { stdout?: string; stderr?: string }) => {
      throw new Error(`redocly lint failed: ${err.stderr ?? ''}${err.stdout ?? ''}`.slice(0, 4000));
    });
    const report = JSON.parse(stdout) as { problems: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }[] };
    const found = report.problems.map((p) => ({ key: `${p.ruleId} ${p.location[0]?.pointer}`, severity: p.severity, message: p.message }));
    expect(found.filter((p) => p.severity === 'error')).toEqual([]);
    expect(found.filter((p) => !TRIAGED.has(p.key))).toEqual([]);
  });
});
