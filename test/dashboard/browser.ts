import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { ROOT } from '../helpers/server-process.js';

/** Debian's chromium (CI installs it with apt); playwright never downloads a browser here. */
export const CHROMIUM = process.env.TASKHOOK_CHROMIUM ?? '/usr/bin/chromium';
export const SCREENSHOTS = path.join(ROOT, 'test-results', 'dashboard');

/** Whether the browser tests can run (CI installs chromium, so there it always can). */
export function chromiumAvailable(): boolean {
  return existsSync(CHROMIUM);
}

/** A headless Chromium; playwright gives every launch a fresh, throw-away profile directory. */
export async function launchChromium(): Promise<{ browser: Browser; close(): Promise<void> }> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
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
    browser,
    close: () => browser.close(),
  };
}

/** Saves a full-page screenshot under test-results/dashboard/ (the README shows two of them). */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}
