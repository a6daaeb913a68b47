import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { DATABASES } from '../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../helpers/factories.js';
import { chromiumAvailable, ensureDashboardBuilt, launchChromium, startDashboardServer } from './browser.js';

const STEP = 60_000;

describe.skipIf(!chromiumAvailable()).each(DATABASES)('dashboard model allowlists and rate limits ($name)', (db) => {
  let t: TestApp & { url: string };
  let user: TestUser;
  let browser: Browser;
  let closeBrowser: () => Promise<void>;
  let page: Page;
  const pageErrors: string[] = [];
  // A session: the key endpoints take no platform key.
  const get = (path: string) =>
    fetch(`${t.url}${path}`, { headers: { authorization: `Bearer ${user.token}` } }).then(
      (r) => r.json() as Promise<never>,
    );

  beforeAll(async () => {
    ensureDashboardBuilt();
    t = await startDashboardServer(db);
    user = await createUser(t);
    ({ browser, close: closeBrowser } = await launchChromium());
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    page.setDefaultTimeout(20_000);
    page.on('pageerror', (err) => pageErrors.push(err.message));
    await page.goto(`${t.url}/dashboard/login`);
    await page.getByRole('textbox', { name: 'Email' }).fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('button', { name: 'New agent' }).waitFor();
  }, 240_000);
  afterAll(async () => {
    await closeBrowser?.();
    await t?.close();
  });

  it(
    'shows each key’s models ("All models") and limits, and lets an admin edit them',
    async () => {
      await page.goto(`${t.url}/dashboard/keys`);
      const row = page.locator(`tr[data-uuid="${user.keyUuid}"]`);
      await row.locator('.key-models', { hasText: 'All models' }).waitFor();
      await row.locator('.key-limits', { hasText: 'No limits' }).waitFor();
      await row.getByRole('button', { name: 'Edit models and limits of test key' }).click();
      await page.getByLabel('Models', { exact: true }).fill('fake/*, route:chat');
      await page.getByLabel('Requests per minute').fill('30');
      await page.getByLabel('Tokens per minute').fill('1000');
      await page.getByRole('button', { name: 'Save' }).click();
      await row.locator('.key-models', { hasText: 'fake/*, route:chat' }).waitFor();
      await row.locator('.key-limits', { hasText: '30 requests / 1,000 tokens per minute' }).waitFor();
      const keys: { keys: Array<{ uuid: string; models: unknown }> } = await get('/auth/platform_keys');
      expect(keys.keys.find((k) => k.uuid === user.keyUuid)?.models).toEqual(['fake/*', 'route:chat']);
      const limits: { limits: unknown } = await get(`/spotlight/rate_limits/platform_keys/${user.keyUuid}`);
      expect(limits.limits).toEqual({ rpm: 30, tpm: 1000 });
      expect(pageErrors).toEqual([]);
    },
    STEP,
  );

  it(
    'shows an agent’s limits on its page and lets an admin edit them',
    async () => {
      const agent = await createAgent(t, user, { name: 'limited agent' });
      await page.goto(`${t.url}/dashboard/agents/${agent.uuid}`);
      await page.locator('.agent-limits', { hasText: 'No limits' }).waitFor();
      await page.getByRole('button', { name: 'Edit limits' }).click();
      await page.getByLabel('Requests per minute').fill('5');
      await page.getByRole('button', { name: 'Save' }).click();
      await page.locator('.agent-limits', { hasText: '5 requests per minute' }).waitFor();
      const limits: { limits: unknown } = await get(`/spotlight/rate_limits/agents/${agent.uuid}`);
      expect(limits.limits).toEqual({ rpm: 5, tpm: null });
      expect(pageErrors).toEqual([]);
    },
    STEP,
  );
});
