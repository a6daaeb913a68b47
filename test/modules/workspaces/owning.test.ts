import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser, type TestUser } from '../../helpers/factories.js';
import { captureLog, createWorkspace, invite, join } from './workspace-helpers.js';

/*
 * A user owns at most TASKHOOK_MAX_WORKSPACES_PER_USER workspaces (default 10) besides their
 * personal one: creating, being made owner of, or accepting an owner invitation to one more is
 * 400 LIMIT_EXCEEDED, and nothing changes. Live workspaces count; a deletion frees room at once.
 */
describe.each(DATABASES)('owning workspaces on $name', (database) => {
  let t: TestApp;
  let logged: Array<Record<string, unknown>>;

  beforeAll(async () => {
    t = await buildTestApp(database, { config: { credentialCacheMs: 0 } });
    logged = captureLog(t);
  });
  afterAll(() => t.close());

  const create = (user: TestUser, name = 'mine') =>
    call(t.app, 'POST', '/workspaces', { token: user.token, body: { name } });
  const listed = async (user: TestUser) =>
    (await call(t.app, 'GET', '/workspaces', { token: user.token })).json().workspaces as Array<{
      uuid: string;
      role: string;
      personal: boolean;
    }>;
  const expectLimit = (res: { statusCode: number; json: () => { error: unknown } }, field: string) => {
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatchObject({ code: 'LIMIT_EXCEEDED', details: { field } });
  };

  /** A user who owns 10 team workspaces (the default maximum); answers their uuids. */
  async function fullOwner(): Promise<{ user: TestUser; owned: string[] }> {
    const user = await createUser(t);
    const owned: string[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await create(user, `ws ${i}`);
      expect(res.statusCode, res.body).toBe(201);
      owned.push(res.json().uuid);
    }
    return { user, owned };
  }

  it('with the default, 10 creates succeed and the 11th is refused on "workspaces"; a deletion frees room', async () => {
    const { user, owned } = await fullOwner();
    expectLimit(await create(user, 'eleventh'), 'workspaces');
    expect(await listed(user)).toHaveLength(11);
    const del = await call(t.app, 'DELETE', `/workspaces/${owned[0]}`, { token: user.token });
    expect(del.statusCode).toBe(204);
    expect((await create(user, 'room again')).statusCode).toBe(201);
    expectLimit(await create(user, 'and one more'), 'workspaces');
  });

  it('making a full owner the owner of one more is refused on "role"; nothing changes', async () => {
    const { user } = await fullOwner();
    const other = await createUser(t);
    const ws = (await createWorkspace(t, other, 'theirs')).uuid;
    await join(t, logged, ws, other, user, 'admin');
    const res = await call(t.app, 'PATCH', `/workspaces/${ws}/members/${user.uuid}`, {
      token: other.token,
      body: { role: 'owner' },
    });
    expectLimit(res, 'role');
    expect((await listed(user)).find((w) => w.uuid === ws)?.role).toBe('admin');
  });

  it('accepting an owner invitation is refused on "workspaces" and the invitation stays pending', async () => {
    const { user, owned } = await fullOwner();
    const other = await createUser(t);
    const ws = (await createWorkspace(t, other, 'theirs')).uuid;
    const token = await invite(t, logged, ws, other, user.email, 'owner');
    const accept = () => call(t.app, 'POST', '/invitations/accept', { token: user.token, body: { token } });
    expectLimit(await accept(), 'workspaces');
    const pending = (await call(t.app, 'GET', `/workspaces/${ws}/invitations`, { token: other.token })).json();
    expect(pending.invitations).toHaveLength(1);
    // Giving up the owner role of one frees room at once.
    const helper = await createUser(t);
    await join(t, logged, owned[0] as string, user, helper, 'owner');
    const stepDown = await call(t.app, 'PATCH', `/workspaces/${owned[0]}/members/${user.uuid}`, {
      token: helper.token,
      body: { role: 'admin' },
    });
    expect(stepDown.statusCode).toBe(200);
    const joined = await accept();
    expect(joined.statusCode, joined.body).toBe(200);
    expect(joined.json().role).toBe('owner');
  });
});

describe('TASKHOOK_MAX_WORKSPACES_PER_USER', () => {
  it('defaults to 10, takes 0 to 100, and a malformed value stops the start naming it', () => {
    expect(loadConfig({}).maxWorkspacesPerUser).toBe(10);
    expect(loadConfig({ TASKHOOK_MAX_WORKSPACES_PER_USER: '0' }).maxWorkspacesPerUser).toBe(0);
    expect(loadConfig({ TASKHOOK_MAX_WORKSPACES_PER_USER: '100' }).maxWorkspacesPerUser).toBe(100);
    for (const value of ['-1', '101', '2.5', 'ten']) {
      expect(() => loadConfig({ TASKHOOK_MAX_WORKSPACES_PER_USER: value }), value).toThrow(
        /TASKHOOK_MAX_WORKSPACES_PER_USER/,
      );
    }
  });
});
