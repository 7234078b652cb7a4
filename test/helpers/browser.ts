/**
 * A real browser for dashboard tests: Debian's Chromium (`/usr/bin/chromium`, or `COORD_CHROMIUM`)
 * driven by playwright-core, headless, with a fresh profile per launch and the flags this machine
 * needs (no background networking: the sandbox refuses outside connections). When no browser can
 * be had the error says how to get one, and the tests fail with it rather than skip.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = process.env.COORD_CHROMIUM ?? '/usr/bin/chromium';

export interface TestBrowser {
  browser: BrowserContext;
  newPage(): Promise<Page>;
  close(): Promise<void>;
}

/** Launches Chromium (a persistent context in a new temp profile). */
export async function launchBrowser(): Promise<TestBrowser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`no Chromium at ${CHROMIUM}: install Debian's chromium package (apt-get install chromium) or set COORD_CHROMIUM to a Chromium binary`);
  }
  const profile = mkdtempSync(path.join(tmpdir(), 'coord-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 800 },
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
    ],
  });
  return {
    browser: context,
    newPage: () => context.newPage(),
    async close() {
      await context.close().catch(() => {});
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Opens the dashboard at `base`, signs in with `token` and waits for the header. */
export async function signIn(page: Page, base: string, token: string): Promise<void> {
  await page.goto(`${base}/ui/`);
  await page.getByLabel('Token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('header nav').waitFor({ timeout: 10_000 });
}

/** Goes to a dashboard route (`#/scope/…`) without reloading the page. */
export async function go(page: Page, hash: string): Promise<void> {
  await page.evaluate((h) => {
    location.hash = h;
  }, hash);
}

export type { Browser, Page };
