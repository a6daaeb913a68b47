import type { Browser, BrowserContext, Page } from 'playwright-core';
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

/** The part of a pino logger the capture below replaces. */
interface LogTarget {
  info: (...args: unknown[]) => unknown;
  child: (...args: unknown[]) => LogTarget;
}

/**
 * Keeps every object the app logs (its children's too), whatever the level: with no SMTP the
 * invitation e-mail is a log line holding the invitee's address and the link.
 */
function captureLogs(logger: LogTarget, into: unknown[]): void {
  const info = logger.info.bind(logger);
  logger.info = (obj: unknown, ...rest: unknown[]) => {
    into.push(obj);
    return info(obj, ...rest);
  };
  const child = logger.child.bind(logger);
  logger.child = (...args: unknown[]) => {
    const made = child(...args);
    captureLogs(made, into);
    return made;
  };
}

describe.skipIf(!chromiumAvailable()).each(DATABASES)('workspaces in the dashboard ($name)', (db) => {
  let t: TestApp & { url: string };
  let owner: TestUser;
  let teammate: TestUser;
  let browser: Browser;
  let closeBrowser: () => Promise<void>;
  let ownerPage: Page;
  let teammateContext: BrowserContext;
  let teammatePage: Page;
  let team = '';
  let teamAgent = '';
  let personalAgent = '';
  const logged: unknown[] = [];
  const pageErrors: string[] = [];
  const a11y: Record<string, unknown[]> = {};

  /** An API call with a user's session, acting in `workspace` when given. */
  const api = async (user: TestUser, method: string, path: string, body?: unknown, workspace?: string) => {
    const res = await fetch(`${t.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${user.token}`,
        ...(workspace ? { 'x-taskhook-workspace': workspace } : {}),
        ...(body ? { 'content-type': 'application/json' } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  /** The invitation link last e-mailed (logged) to `email`. */
  const invitationLink = (email: string) => {
    const lines = logged.map((l) => JSON.stringify(l)).filter((l) => l.includes(email));
    const links = lines.flatMap((l) => l.match(/https?:\/\/[^"\s]+\/dashboard\/invitations\/[A-Za-z0-9_-]+/g) ?? []);
    const link = links.at(-1);
    if (!link) throw new Error(`no invitation link was logged for ${email}`);
    return link;
  };
  const logIn = async (page: Page, user: TestUser) => {
    await page.getByRole('textbox', { name: 'Email' }).fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Log in' }).click();
  };
  const workspaceBox = (page: Page) => page.getByRole('combobox', { name: 'Workspace' });
  const nav = (page: Page) => page.getByRole('navigation', { name: 'Main' });
  const audit = async (page: Page, screen: string) => {
    a11y[screen] = await seriousViolations(page);
  };

  beforeAll(async () => {
    ensureDashboardBuilt();
    t = await startDashboardServer(db);
    captureLogs(t.runtime.logger as unknown as LogTarget, logged);
    owner = await createUser(t);
    teammate = await createUser(t);
    const created = await api(owner, 'POST', '/workspaces', { name: 'Acme' });
    expect(created.status).toBe(201);
    team = created.body.uuid;
    const personal = await api(owner, 'POST', '/agent', { name: 'personal agent' });
    expect(personal.status).toBe(201);
    personalAgent = personal.body.uuid;
    const agent = await api(owner, 'POST', '/agent', { name: 'team agent' }, team);
    expect(agent.status).toBe(201);
    teamAgent = agent.body.uuid;
    ({ browser, close: closeBrowser } = await launchChromium());
    ownerPage = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    teammateContext = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    teammatePage = await teammateContext.newPage();
    for (const page of [ownerPage, teammatePage]) {
      page.setDefaultTimeout(20_000);
      page.on('dialog', (dialog) => void dialog.accept());
      page.on('pageerror', (err) => pageErrors.push(err.message));
    }
  }, 240_000);

  afterAll(async () => {
    await closeBrowser?.();
    await t?.close();
  }, 60_000);

  it(
    "switches workspace and sees that workspace's agents, every request naming it",
    async () => {
      const page = ownerPage;
      await page.goto(`${t.url}/dashboard/login`);
      await logIn(page, owner);
      await page.getByRole('link', { name: 'personal agent' }).waitFor();
      const options = await workspaceBox(page).locator('option').allTextContents();
      expect(options).toEqual(['Personal (personal)', 'Acme']);
      const listed = page.waitForRequest((r) => new URL(r.url()).pathname === '/agent/list');
      await workspaceBox(page).selectOption({ label: 'Acme' });
      expect((await listed).headers()['x-taskhook-workspace']).toBe(team);
      await page.getByRole('link', { name: 'team agent' }).waitFor();
      expect(await page.getByRole('link', { name: 'personal agent' }).count()).toBe(0);
      expect(await page.evaluate('sessionStorage.getItem("taskhook.workspace")')).toBe(team);
      // The choice outlives a reload of the tab.
      await page.reload();
      await page.getByRole('link', { name: 'team agent' }).waitFor();
      expect(await workspaceBox(page).inputValue()).toBe(team);
      await audit(page, 'agents-in-team');
    },
    STEP,
  );

  it(
    'creates a workspace from the switcher and acts in it',
    async () => {
      const page = ownerPage;
      await page.getByRole('button', { name: 'New workspace' }).click();
      await page.getByRole('form', { name: 'New workspace' }).getByLabel('Name').fill('Side project');
      await page.getByRole('button', { name: 'Create' }).click();
      await page.getByText('No agents yet').waitFor();
      const list = await api(owner, 'GET', '/workspaces');
      const side = (list.body.workspaces as { uuid: string; name: string }[]).find((w) => w.name === 'Side project');
      expect(side).toBeDefined();
      expect(await workspaceBox(page).inputValue()).toBe(side?.uuid);
      await workspaceBox(page).selectOption({ label: 'Acme' });
      await page.getByRole('link', { name: 'team agent' }).waitFor();
    },
    STEP,
  );

  it(
    "switching workspace on an agent's schedules page shows the new workspace's agent, never asking for the old one's",
    async () => {
      const page = ownerPage;
      await page.goto(`${t.url}/dashboard/agents/${teamAgent}/schedules`);
      await page.getByText('No schedules yet').waitFor();
      const asked: string[] = [];
      const record = (r: { url(): string }) => asked.push(new URL(r.url()).pathname);
      page.on('request', record);
      await workspaceBox(page).selectOption({ label: 'Personal (personal)' });
      await page.waitForURL(`**/dashboard/agents/${personalAgent}/schedules`);
      await page.getByText('No schedules yet').waitFor();
      page.off('request', record);
      expect(asked).toContain(`/v1/agent/${personalAgent}/schedules`);
      expect(asked.filter((p) => p.includes(teamAgent))).toEqual([]);
      await workspaceBox(page).selectOption({ label: 'Acme' });
      await page.waitForURL(`**/dashboard/agents/${teamAgent}/schedules`);
    },
    STEP,
  );

  it(
    'invites a teammate from the Members page; the link goes out in the log',
    async () => {
      const page = ownerPage;
      await nav(page).getByRole('link', { name: 'Members' }).click();
      await page.locator('main h1').getByText('Members of Acme').waitFor();
      await page.getByRole('textbox', { name: 'Email' }).fill(teammate.email);
      await page.getByRole('combobox', { name: 'Role', exact: true }).selectOption('viewer');
      await page.getByRole('button', { name: 'Invite', exact: true }).click();
      const row = page.locator('tr[data-invitation-uuid]', { hasText: teammate.email });
      await row.getByRole('cell', { name: 'viewer', exact: true }).waitFor();
      expect(new URL(invitationLink(teammate.email)).pathname).toMatch(/^\/dashboard\/invitations\/[\w-]{43,128}$/);
      await audit(page, 'members');
      await screenshot(page, `${db.name}-members`);
    },
    STEP,
  );

  it(
    'the teammate opens the link, logs in, accepts and lands in the workspace',
    async () => {
      const page = teammatePage;
      const link = invitationLink(teammate.email);
      await page.goto(link);
      await page.getByRole('button', { name: 'Log in' }).waitFor();
      expect(new URL(page.url()).pathname).toBe('/dashboard/login');
      await logIn(page, teammate);
      await page.getByRole('button', { name: 'Accept invitation' }).waitFor();
      expect(new URL(page.url()).pathname).toBe(new URL(link).pathname);
      await audit(page, 'invitation');
      await page.getByRole('button', { name: 'Accept invitation' }).click();
      await page.getByRole('link', { name: 'team agent' }).waitFor();
      expect(new URL(page.url()).pathname).toBe('/dashboard/');
      expect(await workspaceBox(page).inputValue()).toBe(team);
      expect(await page.evaluate('sessionStorage.getItem("taskhook.workspace")')).toBe(team);
      // The link is used up: opening it again says so plainly.
      await page.goto(link);
      await page.getByRole('button', { name: 'Accept invitation' }).click();
      await page.getByRole('alert').getByText('INVITATION_INVALID', { exact: false }).waitFor();
      await page.getByRole('alert').getByText('ask for a new one', { exact: false }).waitFor();
    },
    STEP,
  );

  it(
    'shows a viewer no create, edit or delete controls, no task submit, and no Keys or Audit log link',
    async () => {
      const page = teammatePage;
      await page.goto(`${t.url}/dashboard/`);
      await page.getByRole('link', { name: 'team agent' }).waitFor();
      expect(await page.getByRole('button', { name: 'New agent' }).count()).toBe(0);
      expect(await page.getByRole('button', { name: /^(Edit|Delete|Pause|Resume) / }).count()).toBe(0);
      await nav(page).getByRole('link', { name: 'Members' }).waitFor();
      expect(await nav(page).getByRole('link', { name: 'Audit log' }).count()).toBe(0);
      expect(await nav(page).getByRole('link', { name: 'Keys' }).count()).toBe(0);
      await page.getByRole('link', { name: 'team agent' }).click();
      await page.getByText('No tasks yet').waitFor();
      expect(await page.getByRole('button', { name: 'Submit task' }).count()).toBe(0);
      await page.getByRole('link', { name: 'Triggers' }).last().click();
      await page.getByText('No triggers yet').waitFor();
      expect(await page.getByRole('button', { name: 'New trigger' }).count()).toBe(0);
      await page.getByRole('link', { name: 'Schedules' }).last().click();
      await page.getByText('No schedules yet').waitFor();
      expect(await page.getByRole('button', { name: 'New schedule' }).count()).toBe(0);
      await nav(page).getByRole('link', { name: 'Members' }).click();
      await page.locator('main h1').getByText('Members of Acme').waitFor();
      await page.getByRole('combobox', { name: owner.email }).waitFor();
      for (const select of await page.locator('main select').all()) expect(await select.isDisabled()).toBe(true);
      expect(await page.getByRole('button', { name: /^(Remove|Revoke|Invite)/ }).count()).toBe(0);
      await page.getByRole('button', { name: 'Leave workspace' }).waitFor();
      await audit(page, 'members-as-viewer');
      // Typed addresses of admin pages say what is missing instead of failing.
      await page.goto(`${t.url}/dashboard/audit-log`);
      await page.getByText('open to admins and owners').waitFor();
    },
    STEP,
  );

  it(
    "changes a member's role from its select: the teammate may then submit tasks",
    async () => {
      await ownerPage.reload();
      await ownerPage.getByRole('combobox', { name: teammate.email }).selectOption('member');
      await expect
        .poll(async () => {
          const members = await api(owner, 'GET', `/workspaces/${team}/members`);
          return (members.body.members as { email: string; role: string }[]).find((m) => m.email === teammate.email)
            ?.role;
        })
        .toBe('member');
      await teammatePage.goto(`${t.url}/dashboard/agents/${teamAgent}`);
      await teammatePage.getByRole('button', { name: 'Submit task' }).waitFor();
      expect(await teammatePage.getByRole('button', { name: 'New agent' }).count()).toBe(0);
    },
    STEP,
  );

  it(
    'lists the invitation in the audit log, newest first, and "Load more" follows next_cursor',
    async () => {
      // More entries than one page: renames, newest last.
      for (let i = 1; i <= 55; i++) {
        expect((await api(owner, 'PATCH', `/workspaces/${team}`, { name: `Acme ${i}` })).status).toBe(200);
      }
      const page = ownerPage;
      await page.goto(`${t.url}/dashboard/`);
      await nav(page).getByRole('link', { name: 'Audit log' }).click();
      const rows = page.locator('tr[data-audit-id]');
      await rows.first().waitFor();
      const first = await rows.count();
      expect(first).toBeLessThan(58);
      expect(await rows.first().textContent()).toContain('Acme 55');
      expect(await rows.first().textContent()).toContain('workspace.rename');
      expect(await page.getByRole('cell', { name: 'invitation.create' }).count()).toBe(0);
      await page.getByRole('button', { name: 'Load more' }).click();
      await page.getByRole('cell', { name: 'invitation.create' }).waitFor();
      expect(await rows.count()).toBeGreaterThan(first);
      const created = rows.filter({ hasText: 'invitation.create' });
      expect(await created.textContent()).toContain(teammate.email);
      expect(await created.textContent()).toContain(owner.email);
      const accepted = rows.filter({ hasText: 'invitation.accept' });
      expect(await accepted.textContent()).toContain(teammate.email);
      const times = await rows.locator('time').evaluateAll((els) => els.map((e) => e.getAttribute('datetime') ?? ''));
      expect([...times].sort().reverse()).toEqual(times);
      await audit(page, 'audit-log');
      await screenshot(page, `${db.name}-audit-log`);
    },
    STEP,
  );

  it(
    'says plainly why the last owner cannot leave, removes a member, and lets a member leave',
    async () => {
      const page = ownerPage;
      await nav(page).getByRole('link', { name: 'Members' }).click();
      await page.getByRole('button', { name: 'Leave workspace' }).click();
      await page.getByRole('alert').getByText('LAST_OWNER', { exact: false }).waitFor();
      await page.getByRole('alert').getByText('make another member owner first', { exact: false }).waitFor();

      // A third member, added over the API, removed from the page.
      const third = await createUser(t);
      expect(
        (await api(owner, 'POST', `/workspaces/${team}/invitations`, { email: third.email, role: 'member' })).status,
      ).toBe(201);
      const token = new URL(invitationLink(third.email)).pathname.split('/').at(-1);
      expect((await api(third, 'POST', '/invitations/accept', { token })).status).toBe(200);
      await page.reload();
      await page.getByRole('button', { name: `Remove ${third.email}` }).click();
      await expect.poll(() => page.getByRole('combobox', { name: third.email }).count()).toBe(0);
      expect((await api(third, 'GET', `/workspaces/${team}`)).status).toBe(404);

      // The teammate leaves and is back in their personal workspace.
      await teammatePage.goto(`${t.url}/dashboard/members`);
      await teammatePage.getByRole('button', { name: 'Leave workspace' }).click();
      await teammatePage
        .getByText('No agents yet')
        .waitFor()
        .catch(async (err: unknown) => {
          // What the page shows instead (an error box, a stale workspace) says why.
          throw new Error(`${String(err)}\nthe page shows: ${await teammatePage.locator('body').textContent()}`);
        });
      expect(await workspaceBox(teammatePage).locator('option').allTextContents()).toEqual(['Personal (personal)']);
      expect((await api(teammate, 'GET', `/workspaces/${team}`)).status).toBe(404);
    },
    STEP,
  );

  it('had no accessibility violations of serious impact and no script errors', () => {
    expect(Object.keys(a11y).length).toBeGreaterThanOrEqual(5);
    expect(Object.fromEntries(Object.entries(a11y).filter(([, v]) => v.length > 0))).toEqual({});
    expect(pageErrors).toEqual([]);
  });
});
