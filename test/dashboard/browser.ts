import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import type { TestDatabase } from '../helpers/databases.js';
import { freePort, ROOT } from '../helpers/server-process.js';

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

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

/**
 * Runs axe-core in the page and returns its serious and critical violations. The script is
 * evaluated through the DevTools protocol, which the page's CSP does not govern: the CSP itself
 * stays on, as users get it.
 */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(AXE_SOURCE);
  const violations = (await page.evaluate(
    'axe.run(document, { resultTypes: ["violations"] }).then((r) => r.violations)',
  )) as AxeViolation[];
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target })) }));
}

/** Builds the dashboard when dist/dashboard is missing or older than its sources (CI builds it first). */
export function ensureDashboardBuilt(): void {
  const index = path.join(ROOT, 'dist', 'dashboard', 'index.html');
  if (existsSync(index) && statSync(index).mtimeMs >= newestMtime(path.join(ROOT, 'dashboard'))) return;
  execFileSync('npm', ['run', 'build:dashboard'], { cwd: ROOT, stdio: 'pipe', timeout: 180_000 });
}

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(full) : statSync(full).mtimeMs);
  }
  return newest;
}

/** The production app listening on a real port (the browser needs HTTP), its public URL matching. */
export async function startDashboardServer(db: TestDatabase): Promise<TestApp & { url: string }> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const t = await buildTestApp(db, { config: { port, publicUrl: url, allowPrivateUrls: true } });
  await t.app.listen({ port, host: '127.0.0.1' });
  return { ...t, url };
}
