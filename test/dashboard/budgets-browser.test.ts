import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { DATABASES } from '../helpers/databases.js';
import { createUser, type TestUser } from '../helpers/factories.js';
import { chromiumAvailable, ensureDashboardBuilt, launchChromium, startDashboardServer } from './browser.js';

const STEP = 60_000;

describe.skipIf(!chromiumAvailable()).each(DATABASES)('dashboard budgets in Chromium ($name)', (db) => {
  let t: TestApp & { url: string };
  let user: TestUser;
  let browser: Browser;
  let closeBrowser: () => Promise<void>;
  let page: Page;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    ensureDashboardBuilt();
    t = await startDashboardServer(db);
    user = await createUser(t);
    ({ browser, close: closeBrowser } = await launchChromium());
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    page.setDefaultTimeout(20_000);
    page.on('pageerror', (err) => pageErrors.push(err.message));
  }, 240_000);
  afterAll(async () => {
    await closeBrowser?.();
    await t?.close();
  });

  it(
    'shows the workspace budget as spent against its limit, and lets an owner set the limit',
    async () => {
      await page.goto(`${t.url}/dashboard/login`);
      await page.getByRole('textbox', { name: 'Email' }).fill(user.email);
      await page.getByLabel('Password').fill(user.password);
      await page.getByRole('button', { name: 'Log in' }).click();
      await page.getByRole('button', { name: 'New agent' }).waitFor();
      await page.getByRole('link', { name: 'Budgets' }).click();
      await page.getByRole('heading', { name: 'Whole workspace' }).waitFor();
      await page.getByText('$0 spent of no limit').waitFor();
      await page.getByRole('button', { name: 'Edit limits' }).click();
      await page.getByLabel('Per month (USD)').fill('5');
      await page.getByRole('button', { name: 'Save limits' }).click();
      await page.getByText('$0 spent of $5').waitFor();
      expect(await page.locator('[data-budget="account"] progress').count()).toBe(1);
      const res = await fetch(`${t.url}/spotlight/budgets/account`, { headers: { 'x-api-key': user.key } });
      expect(((await res.json()) as { limits: unknown }).limits).toEqual({ monthly_usd: 5 });
      expect(pageErrors).toEqual([]);
    },
    STEP,
  );
});
