import { randomUUID } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callsRepo } from '../../src/modules/spotlight/usage/calls-repo.js';
import type { CallRow } from '../../src/modules/spotlight/usage/calls-rows.js';
import type { TestApp } from '../helpers/app.js';
import { DATABASES } from '../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../helpers/factories.js';
import { createCredential } from '../helpers/spotlight.js';
import { captureLog, createWorkspace, join } from '../modules/workspaces/workspace-helpers.js';
import {
  chromiumAvailable,
  ensureDashboardBuilt,
  launchChromium,
  screenshot,
  seriousViolations,
  startDashboardServer,
} from './browser.js';

const STEP = 60_000;
// Never called: the credentials only have to exist (private addresses are allowed in this app).
const BASE_URL = 'http://127.0.0.1:9/v1';

describe.skipIf(!chromiumAvailable()).each(DATABASES)('dashboard routes and model usage in Chromium ($name)', (db) => {
  let t: TestApp & { url: string };
  let user: TestUser;
  let primary: { uuid: string };
  let backup: { uuid: string };
  let browser: Browser;
  let closeBrowser: () => Promise<void>;
  let page: Page;
  const pageErrors: string[] = [];

  const api = async (who: TestUser, method: string, path: string, body?: unknown, workspace?: string) => {
    const res = await fetch(`${t.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${who.token}`,
        ...(workspace ? { 'x-taskhook-workspace': workspace } : {}),
        ...(body ? { 'content-type': 'application/json' } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  const login = async (p: Page, who: TestUser) => {
    await p.goto(`${t.url}/dashboard/login`);
    await p.getByRole('textbox', { name: 'Email' }).fill(who.email);
    await p.getByLabel('Password').fill(who.password);
    await p.getByRole('button', { name: 'Log in' }).click();
    await p.getByRole('link', { name: 'Agents' }).first().waitFor();
  };
  const targetsOf = (name: string) =>
    page
      .getByRole('list', { name: `Targets of ${name}` })
      .getByRole('listitem')
      .allTextContents();

  beforeAll(async () => {
    ensureDashboardBuilt();
    t = await startDashboardServer(db);
    user = await createUser(t);
    primary = await createCredential(t, user, { name: 'primary', base_url: BASE_URL });
    backup = await createCredential(t, user, { name: 'backup', base_url: BASE_URL });
    ({ browser, close: closeBrowser } = await launchChromium());
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    page.setDefaultTimeout(20_000);
    page.on('pageerror', (err) => pageErrors.push(err.message));
    page.on('dialog', (dialog) => void dialog.accept());
  }, 240_000);
  afterAll(async () => {
    await closeBrowser?.();
    await t?.close();
  });

  it(
    'creates a route with two targets, lists it, edits it, shows a refused delete and deletes it',
    async () => {
      await login(page, user);
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Routes' }).click();
      await page.getByText('No routes yet').waitFor();

      await page.getByRole('button', { name: 'New route' }).click();
      await page.getByLabel('Name').fill('chat');
      await page.getByLabel('Target 1 credential').selectOption({ label: 'primary' });
      await page.getByLabel('Target 1 model').fill('gpt-4o-mini');
      await page.getByRole('button', { name: 'Add target' }).click();
      await page.getByLabel('Target 2 credential').selectOption({ label: 'backup' });
      await page.getByLabel('Target 2 model').fill('llama-3.1-8b');
      await page.getByLabel('timeout').uncheck();
      await page.getByLabel('Cache answers for (seconds)').fill('300');
      await page.getByRole('button', { name: 'Create' }).click();
      await page.getByRole('list', { name: 'Targets of chat' }).waitFor();
      expect(await targetsOf('chat')).toEqual(['primary · gpt-4o-mini', 'backup · llama-3.1-8b']);
      const row = page.locator('tr[data-route="chat"]');
      await row.getByText('model: "route:chat"').waitFor();
      await row.getByText('429 (rate limited), 5xx (server error), connection failure').waitFor();
      await row.getByText('300 s').waitFor();
      const created = (await api(user, 'GET', '/spotlight/routes')).body.routes;
      expect(created).toEqual([
        expect.objectContaining({
          name: 'chat',
          targets: [
            { provider_credential_uuid: primary.uuid, model: 'gpt-4o-mini' },
            { provider_credential_uuid: backup.uuid, model: 'llama-3.1-8b' },
          ],
          retry_on: ['429', '5xx', 'connection'],
          cache_ttl_seconds: 300,
        }),
      ]);
      const uuid = created[0].uuid as string;

      // The server's refusal is shown in the form: a second route of the same name.
      await page.getByRole('button', { name: 'New route' }).click();
      await page.getByLabel('Name').fill('chat');
      await page.getByLabel('Target 1 model').fill('gpt-4o');
      await page.getByRole('button', { name: 'Create' }).click();
      await page.getByRole('alert').getByText('is already used by another of your routes', { exact: false }).waitFor();
      await page.getByRole('button', { name: 'Close' }).click();

      // Edit: rename, put the second target first, no default cache.
      await page.getByRole('button', { name: 'Edit chat' }).click();
      await page.getByLabel('Name').fill('chat-v2');
      await page.getByRole('button', { name: 'Move target 2 up' }).click();
      await page.getByLabel('Cache answers for (seconds)').fill('');
      await page.getByRole('button', { name: 'Save' }).click();
      await page.getByRole('list', { name: 'Targets of chat-v2' }).waitFor();
      expect(await targetsOf('chat-v2')).toEqual(['backup · llama-3.1-8b', 'primary · gpt-4o-mini']);
      await page.locator('tr[data-route="chat-v2"]').getByText('only when a call asks').waitFor();
      expect((await api(user, 'GET', `/spotlight/routes/${uuid}`)).body).toMatchObject({
        name: 'chat-v2',
        targets: [
          { provider_credential_uuid: backup.uuid, model: 'llama-3.1-8b' },
          { provider_credential_uuid: primary.uuid, model: 'gpt-4o-mini' },
        ],
        cache_ttl_seconds: null,
      });

      // An agent whose model runtime names the route keeps it: 409 ROUTE_IN_USE, its message shown.
      const agent = await createAgent(t, user, {
        name: 'routed agent',
        runtime: { type: 'openai', route_uuid: uuid },
      });
      await page.getByRole('button', { name: 'Delete chat-v2' }).click();
      await page.getByRole('alert').getByText('ROUTE_IN_USE', { exact: false }).waitFor();
      await page.getByRole('alert').getByText('routed agent', { exact: false }).waitFor();
      expect((await api(user, 'DELETE', `/agent/${agent.uuid}`)).status).toBe(204);

      await page.getByRole('button', { name: 'Delete chat-v2' }).click();
      await page.getByText('No routes yet').waitFor();
      expect(await page.getByRole('alert').count()).toBe(0);
      expect((await api(user, 'GET', '/spotlight/routes')).body.routes).toEqual([]);
      expect(pageErrors).toEqual([]);
    },
    STEP,
  );

  it(
    'shows model usage per credential and model with the cache hit rate and totals',
    async () => {
      const at = new Date().toISOString();
      const call = (c: Partial<CallRow>): CallRow => ({
        uuid: randomUUID(),
        workspaceUuid: user.uuid,
        createdAt: at,
        source: 'api',
        api: 'chat.completions',
        model: 'route:chat',
        upstreamModel: 'gpt-4o-mini',
        responseModel: 'gpt-4o-mini',
        providerCredentialUuid: primary.uuid,
        stream: false,
        statusCode: 200,
        error: null,
        latencyMs: 120,
        timeToFirstTokenMs: null,
        inputTokens: 1000,
        outputTokens: 200,
        cacheReadTokens: null,
        cacheWriteTokens: null,
        costNanos: 270_000,
        agentUuid: null,
        taskUuid: null,
        platformKeyUuid: null,
        route: { uuid: randomUUID(), name: 'chat' },
        attempts: [],
        cacheHit: false,
        usageEstimated: false,
        ...c,
      });
      const attempt = { providerCredentialUuid: primary.uuid, upstreamModel: 'gpt-4o-mini', latencyMs: 120 };
      const rows = [
        call({ attempts: [{ ...attempt, statusCode: 200, error: null }] }),
        // A cache hit costs nothing: nothing went upstream.
        call({ cacheHit: true, latencyMs: 2, costNanos: 0 }),
        call({ cacheHit: true, latencyMs: 3, costNanos: 0 }),
        call({
          providerCredentialUuid: backup.uuid,
          upstreamModel: 'llama-3.1-8b',
          responseModel: null,
          statusCode: 502,
          error: { code: 'upstream_unreachable', message: 'connection refused' },
          inputTokens: null,
          outputTokens: null,
          costNanos: null,
          attempts: [
            {
              providerCredentialUuid: backup.uuid,
              upstreamModel: 'llama-3.1-8b',
              statusCode: null,
              error: { code: 'upstream_unreachable', message: 'connection refused' },
              latencyMs: 5,
            },
          ],
        }),
      ];
      for (const r of rows) await callsRepo.insert(t.runtime.db.kysely, r);

      await page.goto(`${t.url}/dashboard/routes`);
      const table = page.getByRole('table', { name: 'Model usage' });
      await table.waitFor();
      const cells = async (tr: ReturnType<Page['locator']>) =>
        (await tr.getByRole('cell').allTextContents()).map((s) => s.trim());
      const body = table.locator('tbody tr');
      expect(await body.count()).toBe(2);
      // Sorted by credential name: backup, then primary.
      expect(await cells(body.nth(0))).toEqual(['backup', 'llama-3.1-8b', '1', '1', '0', '0', '$0.00', '0', '0.0%']);
      expect(await cells(body.nth(1))).toEqual([
        'primary',
        'gpt-4o-mini',
        '3',
        '0',
        '3,000',
        '600',
        '$0.0003',
        '2',
        '66.7%',
      ]);
      expect(await cells(table.locator('tfoot tr'))).toEqual([
        'Total',
        '4',
        '1',
        '3,000',
        '600',
        '$0.0003',
        '2',
        '50.0%',
      ]);
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, `routes-usage-${db.name}`);
      expect(pageErrors).toEqual([]);
    },
    STEP,
  );

  it(
    'shows a viewer the routes without New, Edit or Delete (the API refuses the viewer too)',
    async () => {
      const logged = captureLog(t);
      const team = await createWorkspace(t, user, 'Acme');
      const credential = await api(
        user,
        'POST',
        '/user/provider_credentials',
        { name: 'team-openai', provider: 'openai', api_key: 'sk-team-key-0000', base_url: BASE_URL },
        team.uuid,
      );
      expect(credential.status).toBe(201);
      const route = await api(
        user,
        'POST',
        '/spotlight/routes',
        { name: 'team-chat', targets: [{ provider_credential_uuid: credential.body.uuid, model: 'gpt-4o-mini' }] },
        team.uuid,
      );
      expect(route.status).toBe(201);
      const viewer = await createUser(t);
      await join(t, logged, team.uuid, user, viewer, 'viewer');

      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      try {
        const p = await context.newPage();
        p.setDefaultTimeout(20_000);
        p.on('pageerror', (err) => pageErrors.push(err.message));
        await login(p, viewer);
        await p.getByRole('combobox', { name: 'Workspace' }).selectOption({ label: 'Acme' });
        await p.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Routes' }).click();
        await p.getByRole('list', { name: 'Targets of team-chat' }).getByText('team-openai · gpt-4o-mini').waitFor();
        await p.getByRole('heading', { name: 'Model usage, last 30 days' }).waitFor();
        expect(await p.getByRole('button', { name: 'New route' }).count()).toBe(0);
        expect(await p.getByRole('button', { name: /^(Edit|Delete) / }).count()).toBe(0);
        const refused = await api(viewer, 'DELETE', `/spotlight/routes/${route.body.uuid}`, undefined, team.uuid);
        expect(refused.status).toBe(403);
      } finally {
        await context.close();
      }
      expect(pageErrors).toEqual([]);
    },
    STEP,
  );
});
