import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildUi } from '../../scripts/build-ui.js';
import { UI_DIST } from '../../src/ui/ui.routes.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

describe('the dashboard at /ui/', () => {
  it('is committed exactly as ui/src builds it (run npm run ui:build and commit ui/dist)', async () => {
    const files = await buildUi();
    for (const [name, text] of files) expect(readFileSync(`${UI_DIST}/${name}`, 'utf8') === text, `ui/dist/${name} is stale`).toBe(true);
  });

  it('serves the page and its bundle from the server itself, with a same-origin-only CSP and no framing', async () => {
    const root = await fetch(`${t.base}/`, { redirect: 'manual' });
    expect(root.status).toBe(302);
    expect(root.headers.get('location')).toBe('/ui/');
    const page = await fetch(`${t.base}/ui/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/https?:/);
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    const html = await page.text();
    const js = html.match(/src="\.\/(app-[A-Z0-9]+\.js)"/)?.[1];
    const css = html.match(/href="\.\/(app-[A-Z0-9]+\.css)"/)?.[1];
    expect(js && css).toBeTruthy();
    for (const f of [js, css]) {
      const r = await fetch(`${t.base}/ui/${f}`);
      expect(r.status).toBe(200);
      expect((await r.text()).length).toBeGreaterThan(100);
    }
    // Nothing is loaded from elsewhere: no absolute URL in the page.
    expect(html).not.toMatch(/(src|href)="https?:/);
    // The dashboard is not part of the API document.
    const doc = await (await fetch(`${t.base}/openapi.json`)).json();
    expect(Object.keys(doc.paths).some((p) => p.startsWith('/ui'))).toBe(false);
  });
});
