import { createHmac } from 'node:crypto';
import type { RunningWorker } from '@taskhook/sdk';
import { runWorker } from '@taskhook/sdk';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEventStream } from '../../sdks/typescript/src/sse.js';
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
/** The contract's bound: a task's status on screen follows the API within 2 s (plus slack for a loaded CI machine). */
const LIVE_MS = 10_000;

function deferred() {
  let release: () => void = () => undefined;
  const promise = new Promise<void>((resolve) => {
    release = resolve;
  });
  return { promise, release };
}

describe.skipIf(!chromiumAvailable()).each(DATABASES)('dashboard in Chromium ($name)', (db) => {
  let t: TestApp & { url: string };
  let user: TestUser;
  let browser: Browser;
  let closeBrowser: () => Promise<void>;
  let page: Page;
  let agentId = '';
  let worker: RunningWorker | undefined;
  const gate = deferred();
  const cspErrors: string[] = [];
  const pageErrors: string[] = [];
  const a11y: Record<string, unknown[]> = {};

  const api = (method: string, path: string, body?: unknown, key = user.key) =>
    fetch(`${t.url}${path}`, {
      method,
      headers: { 'x-api-key': key, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
  const submit = async (message: string) => {
    const res = await api('POST', `/agent/request/${agentId}`, { message });
    expect(res.status).toBe(202);
    return ((await res.json()) as { task_id: string }).task_id;
  };
  const heading = (text: string) => page.locator('h1').getByText(text, { exact: true });
  const audit = async (screen: string) => {
    a11y[screen] = await seriousViolations(page);
  };

  beforeAll(async () => {
    ensureDashboardBuilt();
    t = await startDashboardServer(db);
    user = await createUser(t);
    ({ browser, close: closeBrowser } = await launchChromium());
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    page.setDefaultTimeout(20_000);
    page.on('dialog', (dialog) => void dialog.accept());
    page.on('console', (msg) => {
      if (/Content Security Policy/i.test(msg.text())) cspErrors.push(msg.text());
    });
    page.on('pageerror', (err) => pageErrors.push(err.message));
  }, 240_000);

  afterAll(async () => {
    await worker?.stop();
    await closeBrowser?.();
    await t?.close();
  }, 60_000);

  it(
    'logs in (a protected page first sends the user to the login screen)',
    async () => {
      await page.goto(`${t.url}/dashboard/keys`);
      await page.getByRole('button', { name: 'Log in' }).waitFor();
      expect(new URL(page.url()).pathname).toBe('/dashboard/login');
      await audit('login');
      await screenshot(page, `${db.name}-login`);
      await page.getByRole('textbox', { name: 'Email' }).fill(user.email);
      await page.getByLabel('Password').fill('wrong password');
      await page.getByRole('button', { name: 'Log in' }).click();
      await page.getByRole('alert').getByText('Invalid email or password').waitFor();
      await page.getByLabel('Password').fill(user.password);
      await page.getByRole('button', { name: 'Log in' }).click();
      await page.getByRole('button', { name: 'New agent' }).waitFor();
      const token = await page.evaluate('sessionStorage.getItem("taskhook.token")');
      expect(typeof token).toBe('string');
      expect(await page.evaluate('document.cookie + localStorage.length')).toBe('0');
      await page.getByText('No agents yet').waitFor();
      await audit('agents-empty');
    },
    STEP,
  );

  it(
    'creates an agent',
    async () => {
      await page.getByRole('button', { name: 'New agent' }).click();
      await page.getByLabel('Name').fill('reviewer');
      await page.getByLabel('Description').fill('Reviews diffs');
      await page.getByRole('button', { name: 'Create' }).click();
      await page.getByRole('button', { name: 'Submit task' }).waitFor();
      agentId = new URL(page.url()).pathname.split('/')[3] as string;
      const res = await api('GET', `/agent/${agentId}`);
      expect(res.status).toBe(200);
      expect(((await res.json()) as { name: string }).name).toBe('reviewer');
      await page.getByText('No tasks yet').waitFor();
      await audit('agent-tasks');
    },
    STEP,
  );

  it(
    'shows a submitted task go from queued to running to completed without a reload',
    async () => {
      const taskId = await submit('review this diff: +console.log(x)');
      const row = page.locator(`tr[data-task-id="${taskId}"]`);
      await row.getByText('queued', { exact: true }).waitFor({ timeout: LIVE_MS });
      await row.getByRole('link').click();
      await heading('queued').waitFor();
      worker = runWorker({
        baseUrl: t.url,
        apiKey: user.key,
        agentId,
        waitSeconds: 1,
        leaseSeconds: 6,
        handleSignals: false,
        gracePeriodMs: 1000,
        log: () => undefined,
        handler: async (task, ctx) => {
          if (task.message.startsWith('ask')) {
            const last = task.messages[task.messages.length - 1];
            if (task.messages.length < 2 || last?.role !== 'user') await ctx.askForInput('Which file should I review?');
            return { summary: `Reviewed ${last?.content}`, findings: [] };
          }
          if (task.message.startsWith('hold')) {
            await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
            return { summary: 'never reported', findings: [] };
          }
          await ctx.progress('reading the diff', 1, 3, true);
          await gate.promise;
          return {
            summary: 'One finding: leftover debug output.',
            findings: [{ file: 'src/app.ts', line: 12, severity: 'warning', message: 'console.log left in' }],
          };
        },
      });
      await heading('running').waitFor({ timeout: LIVE_MS });
      await page.getByText('reading the diff').waitFor({ timeout: LIVE_MS });
      gate.release();
      await heading('completed').waitFor({ timeout: LIVE_MS });
      await page.getByRole('cell', { name: 'console.log left in' }).waitFor();
      await page.getByText('One finding: leftover debug output.').waitFor();
      expect(await page.getByRole('button', { name: 'Cancel task' }).count()).toBe(0);
      await audit('task');
      await screenshot(page, `${db.name}-task`);
    },
    STEP,
  );

  it(
    'answers an awaiting_input task from the reply box',
    async () => {
      const taskId = await submit('ask me which file');
      await page.goto(`${t.url}/dashboard/agents/${agentId}/tasks/${taskId}`);
      await heading('awaiting_input').waitFor({ timeout: LIVE_MS });
      await page.getByText('Which file should I review?').first().waitFor();
      await audit('task-awaiting-input');
      await page.getByLabel('Reply', { exact: true }).fill('src/routes.ts');
      await page.getByRole('button', { name: 'Send reply' }).click();
      await heading('completed').waitFor({ timeout: LIVE_MS });
      await page.getByText('Reviewed src/routes.ts').waitFor();
    },
    STEP,
  );

  it(
    'cancels a running task',
    async () => {
      const taskId = await submit('hold until cancelled');
      await page.goto(`${t.url}/dashboard/agents/${agentId}/tasks/${taskId}`);
      await heading('running').waitFor({ timeout: LIVE_MS });
      await page.getByRole('button', { name: 'Cancel task' }).click();
      await heading('cancelled').waitFor({ timeout: LIVE_MS });
      const res = await api('GET', `/agent/${agentId}/task/${taskId}`);
      expect(((await res.json()) as { status: string }).status).toBe('cancelled');
      // A final task offers a rerun: a new task of the same message, whose page says what it reruns.
      await page.getByRole('button', { name: 'Rerun' }).click();
      await page.waitForURL((url) => !url.pathname.endsWith(taskId), { timeout: LIVE_MS });
      const rerunId = page.url().split('/').at(-1) as string;
      await heading('running').waitFor({ timeout: LIVE_MS });
      await page.getByText('Rerun of').waitFor();
      const made = (await (await api('GET', `/agent/${agentId}/task/${rerunId}`)).json()) as Record<string, unknown>;
      expect(made).toMatchObject({ rerun_of: taskId, message: 'hold until cancelled' });
      await page.getByRole('button', { name: 'Cancel task' }).click();
      await heading('cancelled').waitFor({ timeout: LIVE_MS });
    },
    STEP,
  );

  it(
    'reopens a dropped event stream with Last-Event-ID and keeps following the task',
    async () => {
      const taskId = await submit('hold until cancelled, over a dropped stream');
      const path = `/agent/${agentId}/task/${taskId}/events`;
      await expect
        .poll(
          async () =>
            ((await (await api('GET', `/agent/${agentId}/task/${taskId}`)).json()) as { status: string }).status,
          { timeout: LIVE_MS },
        )
        .toBe('running');
      // The first connection carries the server's real first event, then drops (ends without a final state).
      const real = await fetch(`${t.url}${path}`, { headers: { 'x-api-key': user.key } });
      let first: { id: string | undefined; data: string } | undefined;
      for await (const event of parseEventStream(real.body as ReadableStream<Uint8Array>)) {
        first = event;
        break;
      }
      expect(first?.id).toMatch(/^\d+$/);
      const resumedWith: (string | undefined)[] = [];
      await page.route(`**${path}`, (route) => {
        resumedWith.push(route.request().headers()['last-event-id']);
        if (resumedWith.length > 1) return route.continue();
        return route.fulfill({
          status: 200,
          headers: { 'content-type': 'text/event-stream' },
          body: `id: ${first?.id}\nevent: task\ndata: ${first?.data}\n\n`,
        });
      });
      try {
        await page.goto(`${t.url}/dashboard/agents/${agentId}/tasks/${taskId}`);
        await heading('running').waitFor({ timeout: LIVE_MS });
        await expect.poll(() => resumedWith.length, { timeout: LIVE_MS }).toBeGreaterThanOrEqual(2);
        expect(resumedWith.slice(0, 2)).toEqual([undefined, first?.id]);
        expect((await api('POST', `/agent/${agentId}/task/${taskId}/cancel`)).status).toBe(200);
        await heading('cancelled').waitFor({ timeout: LIVE_MS });
      } finally {
        await page.unroute(`**${path}`);
      }
    },
    STEP,
  );

  it(
    'creates a trigger, shows its secret once, and lists a delivery fired at it',
    async () => {
      await page.getByRole('link', { name: 'Triggers', exact: true }).first().click();
      await page.getByRole('button', { name: 'New trigger' }).click();
      await page.getByLabel('Name').fill('github pushes');
      await page.getByLabel('Template').fill('Review {{payload.ref}} by {{payload.pusher.name}}');
      await page.getByRole('button', { name: 'Create' }).click();
      const secret = (await page.getByLabel('Secret', { exact: true }).textContent())?.trim() ?? '';
      expect(secret).toMatch(/^whs_/);
      await screenshot(page, `${db.name}-trigger-created`);
      const url = (await page.locator('.fresh code').textContent())?.trim() ?? '';
      expect(url).toMatch(new RegExp(`^${t.url}/v1/webhooks/triggers/`));
      const fired = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-webhook-secret': secret, 'x-github-delivery': 'delivery-1' },
        body: JSON.stringify({ ref: 'refs/heads/main', pusher: { name: 'ada' } }),
      });
      expect(fired.status).toBe(202);
      await audit('triggers');
      await page.getByRole('link', { name: 'github pushes' }).click();
      await page.getByText('delivery-1').waitFor();
      await page.getByRole('cell', { name: '202' }).waitFor();
      expect(await page.getByLabel('Secret', { exact: true }).count()).toBe(0);
      await page.reload();
      await page.getByText('delivery-1').waitFor();
      expect(await page.getByText(secret).count()).toBe(0);
      await audit('trigger');
      await screenshot(page, `${db.name}-trigger`);
      await page.getByRole('button', { name: 'Disable' }).click();
      await page.getByRole('button', { name: 'Enable' }).waitFor();
    },
    STEP,
  );

  it(
    'creates a Stripe trigger with its signing secret, never shows the secret, and lists a signed delivery',
    async () => {
      const stripeSecret = 'whsec_dashboard_test_secret';
      await page.getByRole('link', { name: 'Triggers', exact: true }).first().click();
      await page.getByRole('button', { name: 'New trigger' }).click();
      await page.getByLabel('Name').fill('stripe events');
      await page.getByLabel('Template').fill('Handle {{payload.type}}');
      await page.getByLabel('Verification').selectOption('stripe');
      await page.getByLabel('Signing secret').fill(stripeSecret);
      await page.getByRole('button', { name: 'Create' }).click();
      await page.getByRole('link', { name: 'stripe events' }).click();
      await page.getByText('Stripe (timestamps within 300 s)').waitFor();
      expect(await page.getByLabel('Secret', { exact: true }).count()).toBe(0);
      expect(await page.content()).not.toContain(stripeSecret);
      const url = (await page.locator('dd.mono').first().textContent())?.trim() ?? '';
      const body = JSON.stringify({ id: 'evt_dashboard_1', type: 'charge.succeeded' });
      const ts = Math.floor(Date.now() / 1000);
      const v1 = createHmac('sha256', stripeSecret).update(`${ts}.${body}`).digest('hex');
      const fired = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'stripe-signature': `t=${ts},v1=${v1}` },
        body,
      });
      expect(fired.status).toBe(202);
      await page.getByRole('button', { name: 'Refresh' }).click();
      await page.getByText('evt_dashboard_1').waitFor();
      await audit('trigger-stripe');
    },
    STEP,
  );

  it(
    'creates a schedule every 5 minutes with a payload, previews its next runs, pauses, resumes and deletes it',
    async () => {
      await page.getByRole('link', { name: 'Schedules', exact: true }).first().click();
      await page.getByText('No schedules yet').waitFor();
      await page.getByRole('button', { name: 'New schedule' }).click();
      await page.getByLabel('Name').fill('standup');
      await page.getByLabel('Repeat').selectOption('interval');
      await page.getByLabel('Every', { exact: true }).fill('5');
      await page.getByLabel('Time zone').fill('Europe/Berlin');
      await page.getByLabel('Message').fill('Post the standup for {{schedule.local_date}}');
      await page.getByLabel('Payload (JSON)').fill('{"channel": "#team"}');
      await page.getByRole('button', { name: 'Preview next runs' }).click();
      await expect.poll(() => page.getByLabel('Next runs').locator('li').count()).toBe(5);
      await page.getByRole('button', { name: 'Create' }).click();
      const row = page.locator('tr', { hasText: 'standup' });
      await row.getByText('*/5 * * * *').waitFor();
      await row.getByText('active', { exact: true }).waitFor();
      await audit('schedules');
      await screenshot(page, `${db.name}-schedules`);
      const res = await api('GET', `/v1/agent/${agentId}/schedules`);
      const [created] = ((await res.json()) as { schedules: Array<Record<string, unknown>> }).schedules;
      expect(created).toMatchObject({ cron: '*/5 * * * *', timezone: 'Europe/Berlin', metadata: { channel: '#team' } });
      await page.getByRole('button', { name: 'Pause standup' }).click();
      await row.getByText('paused', { exact: true }).waitFor();
      await page.getByRole('button', { name: 'Resume standup' }).click();
      await row.getByText('active', { exact: true }).waitFor();
      await page.getByRole('link', { name: 'standup' }).click();
      await page.locator('h1').getByText('standup').waitFor();
      await expect.poll(() => page.getByLabel('Next runs').locator('li').count()).toBe(5);
      await page.getByText('No runs yet').waitFor();
      await audit('schedule');
      await page.getByRole('button', { name: 'Delete' }).click();
      await page.getByText('No schedules yet').waitFor();
    },
    STEP,
  );

  it(
    'creates a platform key, shows last_used_at once it is used, and revokes it',
    async () => {
      await page.getByRole('link', { name: 'Keys' }).click();
      await page.getByRole('button', { name: 'New key' }).click();
      await page.getByLabel('Name').fill('ci');
      await page.getByRole('button', { name: 'Create' }).click();
      const key = (await page.getByLabel('Secret', { exact: true }).textContent())?.trim() ?? '';
      expect(key).toMatch(/^sk_service_/);
      const row = page.locator('tr', { hasText: 'ci' }).filter({ hasText: key.slice(0, 16) });
      expect((await row.locator('.last-used').textContent())?.trim()).toBe('never');
      expect((await api('GET', '/agent/list', undefined, key)).status).toBe(200);
      await page.reload();
      await page
        .locator('tr', { hasText: key.slice(0, 16) })
        .locator('.last-used time')
        .waitFor();
      await audit('keys');
      await screenshot(page, `${db.name}-keys`);
      await page.getByRole('button', { name: 'Revoke ci' }).click();
      await page
        .locator('tr', { hasText: key.slice(0, 16) })
        .getByText('revoked', { exact: true })
        .waitFor();
      expect((await api('GET', '/agent/list', undefined, key)).status).toBe(401);
    },
    STEP,
  );

  it(
    'shows Telemetry and Providers exactly when the server offers their APIs (404: hidden)',
    async () => {
      const session = String(await page.evaluate('sessionStorage.getItem("taskhook.token")'));
      const offered = async (path: string) =>
        (await fetch(`${t.url}${path}`, { headers: { authorization: `Bearer ${session}` } })).status !== 404;
      // The app asks both APIs once per page load; wait for both answers before judging the navigation.
      const probes = Promise.all(
        ['/telemetry/fetch_traces', '/user/provider_credentials'].map((p) =>
          page.waitForResponse((r) => new URL(r.url()).pathname === p),
        ),
      );
      await page.goto(`${t.url}/dashboard/`);
      await probes;
      await page.getByRole('link', { name: 'Keys' }).waitFor();
      for (const [label, path, screen] of [
        ['Telemetry', '/telemetry/fetch_traces?limit=1', '/telemetry'],
        ['Providers', '/user/provider_credentials', '/providers'],
        // Routes and Budgets go with the model proxy: shown and hidden with Providers.
        ['Routes', '/user/provider_credentials', '/routes'],
        ['Budgets', '/user/provider_credentials', '/budgets'],
      ] as const) {
        const nav = page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: label });
        if (await offered(path)) {
          await nav.click();
          await page.locator('main h1').getByText(label).waitFor();
          await audit(screen);
        } else {
          await page.waitForTimeout(200);
          expect(await nav.count()).toBe(0);
        }
      }
    },
    STEP,
  );

  it(
    'is readable at phone width: no page-wide horizontal scrolling on any screen',
    async () => {
      await page.setViewportSize({ width: 390, height: 844 });
      const overflow = () => page.evaluate('document.documentElement.scrollWidth - window.innerWidth');
      try {
        for (const path of ['/', `/agents/${agentId}`, `/agents/${agentId}/triggers`, '/keys']) {
          await page.goto(`${t.url}/dashboard${path}`);
          await page.locator('main table').first().waitFor();
          expect(await overflow(), path).toBeLessThanOrEqual(0);
        }
        await page.goto(`${t.url}/dashboard/agents/${agentId}`);
        await page.locator('tr[data-task-id] a').first().click();
        await page.locator('.conversation').waitFor();
        expect(await overflow()).toBeLessThanOrEqual(0);
        await screenshot(page, `${db.name}-phone-task`);
      } finally {
        await page.setViewportSize({ width: 1280, height: 800 });
      }
    },
    STEP,
  );

  it(
    'sends the user back to the login screen when the API answers 401',
    async () => {
      await page.evaluate('sessionStorage.setItem("taskhook.token", "not-a-valid-token")');
      await page.goto(`${t.url}/dashboard/agents/${agentId}`);
      await page.getByRole('button', { name: 'Log in' }).waitFor();
      expect(new URL(page.url()).pathname).toBe('/dashboard/login');
      // The page that was open is where logging in leads back to.
      expect(new URL(page.url()).searchParams.get('next')).toBe(`/agents/${agentId}`);
      expect(await page.evaluate('sessionStorage.getItem("taskhook.token")')).toBeNull();
    },
    STEP,
  );

  it(
    'logs in with the keyboard alone, then logs out, forgetting the session',
    async () => {
      await page.getByRole('textbox', { name: 'Email' }).focus();
      await page.keyboard.type(user.email);
      await page.keyboard.press('Tab');
      await page.keyboard.type(user.password);
      await page.keyboard.press('Enter');
      await page.getByRole('button', { name: 'Submit task' }).waitFor();
      expect(new URL(page.url()).pathname).toBe(`/dashboard/agents/${agentId}`);
      await page.getByRole('button', { name: 'Log out' }).click();
      await page.getByRole('button', { name: 'Log in' }).waitFor();
      expect(await page.evaluate('sessionStorage.getItem("taskhook.token")')).toBeNull();
      await page.goto(`${t.url}/dashboard/`);
      await page.getByRole('button', { name: 'Log in' }).waitFor();
    },
    STEP,
  );

  it(
    'finishes an OAuth login only when the state is the one this tab stored (no login CSRF)',
    async () => {
      const posted: unknown[] = [];
      const pattern = '**/auth/oauth/*/callback';
      await page.route(pattern, (route) => {
        posted.push(route.request().postDataJSON());
        return route.continue();
      });
      try {
        await page.goto(`${t.url}/dashboard/oauth/google?code=attacker-code&state=attacker-state`);
        await page.getByRole('alert').getByText('not started from this browser tab').waitFor();
        await audit('oauth-finish');
        expect(posted).toEqual([]);
        await page.evaluate('sessionStorage.setItem("taskhook.oauth.google", "state-stored-by-this-tab")');
        await page.goto(`${t.url}/dashboard/oauth/google?code=the-code&state=state-stored-by-this-tab`);
        // Whatever the server answers (no provider is configured here), the page shows it.
        await page.getByRole('alert').waitFor();
        expect(posted).toEqual([{ code: 'the-code', state: 'state-stored-by-this-tab' }]);
        expect(await page.evaluate('sessionStorage.getItem("taskhook.oauth.google")')).toBeNull();
        expect(await page.evaluate('sessionStorage.getItem("taskhook.token")')).toBeNull();
      } finally {
        await page.unroute(pattern);
      }
    },
    STEP,
  );

  it('had no accessibility violations of serious impact, no CSP refusals and no script errors on any screen', () => {
    expect(Object.keys(a11y).length).toBeGreaterThanOrEqual(8);
    expect(Object.fromEntries(Object.entries(a11y).filter(([, v]) => v.length > 0))).toEqual({});
    expect(cspErrors).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});
