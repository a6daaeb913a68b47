import { createHash, randomBytes } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { DATABASES } from '../helpers/databases.js';
import { createUser, type TestUser } from '../helpers/factories.js';
import {
  chromiumAvailable,
  ensureDashboardBuilt,
  launchChromium,
  screenshot,
  seriousViolations,
  startDashboardServer,
} from './browser.js';

if (!chromiumAvailable() && process.env.CI) {
  throw new Error('chromium is missing: CI installs it with apt-get (see .ci/run)');
}

const STEP = 60_000;
/** The client's redirect URI; the browser's request there is answered by the test, never sent. */
const REDIRECT = 'http://127.0.0.1:4567/callback';

// An MCP client's authorization request, answered in the browser: the consent page after logging
// in, "Allow" with a workspace and role, the code exchanged; then "Connected apps" revokes it.
describe.skipIf(!chromiumAvailable()).each(DATABASES)('MCP consent in the dashboard ($name)', (db) => {
  let t: TestApp & { url: string };
  let user: TestUser;
  let browser: Browser;
  let closeBrowser: () => Promise<void>;
  let page: Page;
  let team = '';
  const pageErrors: string[] = [];
  const a11y: Record<string, unknown[]> = {};
  const callbacks: string[] = [];

  const api = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${t.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${user.token}`, 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };

  /** A client registered by DCR and its authorization request: the consent page's URL and the PKCE verifier. */
  async function authorizationRequest(name: string) {
    const registered = await fetch(`${t.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: name, redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' }),
    });
    const clientId = ((await registered.json()) as { client_id: string }).client_id;
    const verifier = randomBytes(32).toString('base64url');
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: REDIRECT,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
      state: 'st-1',
    });
    const res = await fetch(`${t.url}/oauth/authorize?${query}`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    return { clientId, verifier, consentUrl: res.headers.get('location') ?? '' };
  }

  beforeAll(async () => {
    ensureDashboardBuilt();
    t = await startDashboardServer(db);
    user = await createUser(t);
    const created = await api('POST', '/workspaces', { name: 'Acme' });
    expect(created.status).toBe(201);
    team = created.body.uuid;
    ({ browser, close: closeBrowser } = await launchChromium());
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    page.setDefaultTimeout(20_000);
    page.on('dialog', (dialog) => void dialog.accept());
    page.on('pageerror', (err) => pageErrors.push(err.message));
    await page.route(`${REDIRECT}**`, async (route) => {
      callbacks.push(route.request().url());
      await route.fulfill({ status: 200, contentType: 'text/plain', body: 'back at the client' });
    });
  }, 240_000);

  afterAll(async () => {
    await closeBrowser?.();
    await t?.close();
  }, 60_000);

  it(
    'logs in first, shows the client, and Allow sends a working code back to the client',
    async () => {
      const { clientId, verifier, consentUrl } = await authorizationRequest('Browser Client');
      expect(consentUrl).toMatch(/\/dashboard\/mcp\/authorize\?request_id=/);
      await page.goto(consentUrl);
      await page.getByRole('textbox', { name: 'Email' }).fill(user.email);
      await page.getByLabel('Password').fill(user.password);
      await page.getByRole('button', { name: 'Log in' }).click();

      await page.getByRole('heading', { name: 'Allow Browser Client to use taskhook?' }).waitFor();
      expect(await page.getByTestId('redirect-host').textContent()).toBe('127.0.0.1');
      expect(await page.getByText('Registered dynamically').count()).toBe(1);
      const workspace = page.getByRole('combobox', { name: 'Workspace' });
      expect(await workspace.locator('option').allTextContents()).toEqual(['Personal (owner)', 'Acme (owner)']);
      await workspace.selectOption(team);
      const role = page.getByRole('combobox', { name: 'Role' });
      expect(await role.locator('option').allTextContents()).toEqual(['viewer', 'member']);
      await role.selectOption('viewer');
      a11y.consent = await seriousViolations(page);
      await screenshot(page, 'mcp-consent');
      await page.getByRole('button', { name: 'Allow' }).click();

      await page.waitForURL(`${REDIRECT}?**`, { waitUntil: 'load' });
      expect(callbacks).toHaveLength(1);
      const back = new URL(callbacks[0] ?? '');
      expect(back.searchParams.get('state')).toBe('st-1');
      expect(back.searchParams.get('iss')).toBe(t.url);
      const exchanged = await fetch(`${t.url}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code: back.searchParams.get('code') ?? '',
          redirect_uri: REDIRECT,
          code_verifier: verifier,
          client_id: clientId,
        }).toString(),
      });
      expect(exchanged.status).toBe(200);
      const grants = (await api('GET', '/auth/mcp_grants')).body.grants;
      expect(grants[0]).toMatchObject({ client: { client_id: clientId }, workspace: { uuid: team }, role: 'viewer' });
    },
    STEP,
  );

  it(
    'Deny sends access_denied back; Connected apps lists the grant and revokes it',
    async () => {
      const { consentUrl } = await authorizationRequest('Denied Client');
      await page.goto(consentUrl);
      await page.getByRole('button', { name: 'Deny' }).click();
      await page.waitForURL(`${REDIRECT}?**`, { waitUntil: 'load' });
      expect(callbacks).toHaveLength(2);
      expect(new URL(callbacks[1] ?? '').searchParams.get('error')).toBe('access_denied');

      await page.goto(`${t.url}/dashboard/`);
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Connected apps' }).click();
      const row = page.getByRole('row', { name: /Browser Client/ });
      await row.getByText('active').waitFor();
      expect(await row.getByRole('cell', { name: 'Acme' }).count()).toBe(1);
      a11y.connected = await seriousViolations(page);
      await row.getByRole('button', { name: 'Revoke Browser Client' }).click();
      await row.getByText('revoked').waitFor();
      expect((await api('GET', '/auth/mcp_grants')).body.grants[0].revoked_at).not.toBeNull();
    },
    STEP,
  );

  it('had no accessibility violations of serious impact and no script errors', () => {
    expect(Object.keys(a11y)).toEqual(['consent', 'connected']);
    expect(Object.fromEntries(Object.entries(a11y).filter(([, v]) => v.length > 0))).toEqual({});
    expect(pageErrors).toEqual([]);
  });
});
