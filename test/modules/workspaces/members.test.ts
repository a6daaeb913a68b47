import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Role } from '../../../src/lib/principal.js';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser, type TestUser } from '../../helpers/factories.js';
import { auditOf, captureLog, createWorkspace, join, keyIn, WORKSPACE_HEADER } from './workspace-helpers.js';

const OWNER_NEEDED = 'This operation requires the owner role in this workspace';

/*
 * Members of a team workspace: who may change whose role or remove whom, the last-owner rule,
 * the personal workspace's refusals, and what a removal or a leave takes away.
 */
describe.each(DATABASES)('workspace members on $name', (database) => {
  let t: TestApp;
  let logged: Array<Record<string, unknown>>;

  beforeAll(async () => {
    t = await buildTestApp(database);
    logged = captureLog(t);
  });
  afterAll(() => t.close());

  /** A workspace with an owner and one member of each role. */
  async function team() {
    const owner = await createUser(t);
    const ws = await createWorkspace(t, owner);
    const by: Record<Role, TestUser> = { owner } as Record<Role, TestUser>;
    for (const role of ['admin', 'member', 'viewer'] as const) {
      by[role] = await createUser(t);
      await join(t, logged, ws.uuid, owner, by[role], role);
    }
    return { ws: ws.uuid, by };
  }

  const setRole = (ws: string, as: TestUser, target: TestUser, role: string) =>
    call(t.app, 'PATCH', `/workspaces/${ws}/members/${target.uuid}`, { token: as.token, body: { role } });
  const remove = (ws: string, as: TestUser, target: TestUser) =>
    call(t.app, 'DELETE', `/workspaces/${ws}/members/${target.uuid}`, { token: as.token });

  it('GET members: every role reads them, oldest first', async () => {
    const { ws, by } = await team();
    for (const role of ['viewer', 'member', 'admin', 'owner'] as const) {
      const res = await call(t.app, 'GET', `/workspaces/${ws}/members`, { token: by[role].token });
      expect(res.statusCode).toBe(200);
      expect(res.json().members.map((m: { user_uuid: string; role: string }) => [m.user_uuid, m.role])).toEqual([
        [by.owner.uuid, 'owner'],
        [by.admin.uuid, 'admin'],
        [by.member.uuid, 'member'],
        [by.viewer.uuid, 'viewer'],
      ]);
      expect(Object.keys(res.json().members[0]).sort()).toEqual(['email', 'joined_at', 'role', 'user_uuid']);
    }
  });

  it('role matrix of PATCH members: viewers and members 403, admins below owner, owners anything', async () => {
    const { ws, by } = await team();
    for (const role of ['viewer', 'member'] as const) {
      const res = await setRole(ws, by[role], by.viewer, 'member');
      expect(res.statusCode).toBe(403);
      expect(res.json().error.message).toBe('This operation requires the admin role in this workspace');
    }
    // An admin changes non-owners to roles below owner…
    const promoted = await setRole(ws, by.admin, by.viewer, 'member');
    expect(promoted.statusCode).toBe(200);
    expect(promoted.json()).toMatchObject({ user_uuid: by.viewer.uuid, role: 'member', email: by.viewer.email });
    // …but neither makes an owner nor touches one.
    for (const [target, role] of [
      [by.member, 'owner'],
      [by.owner, 'admin'],
    ] as const) {
      const res = await setRole(ws, by.admin, target, role);
      expect(res.statusCode).toBe(403);
      expect(res.json().error).toMatchObject({ code: 'FORBIDDEN', message: OWNER_NEEDED });
    }
    expect((await setRole(ws, by.owner, by.member, 'owner')).json().role).toBe('owner');
    expect((await setRole(ws, by.owner, by.member, 'viewer')).json().role).toBe('viewer');
    expect((await setRole(ws, by.owner, by.member, 'boss')).statusCode).toBe(400);
    expect(
      (
        await call(t.app, 'PATCH', `/workspaces/${ws}/members/${by.member.uuid}`, {
          token: by.owner.token,
          body: { role: 'admin', x: 1 },
        })
      ).statusCode,
    ).toBe(400);
    const changes = (await auditOf(t, ws)).filter((e) => e.action === 'member.role_change');
    expect(changes.map((e) => e.details)).toEqual([
      { email: by.viewer.email, from: 'viewer', to: 'member' },
      { email: by.member.email, from: 'member', to: 'owner' },
      { email: by.member.email, from: 'owner', to: 'viewer' },
    ]);
  });

  it('setting the current role again answers 200 and writes nothing', async () => {
    const { ws, by } = await team();
    const before = (await auditOf(t, ws)).length;
    const res = await setRole(ws, by.admin, by.member, 'member');
    expect(res.statusCode).toBe(200);
    expect(res.json().role).toBe('member');
    expect((await auditOf(t, ws)).length).toBe(before);
  });

  it('an unknown member is 404; a non-member of the workspace gets 404 before any role rule', async () => {
    const { ws, by } = await team();
    const stranger = await createUser(t);
    expect((await setRole(ws, by.owner, stranger, 'viewer')).statusCode).toBe(404);
    expect((await remove(ws, by.owner, stranger)).statusCode).toBe(404);
    expect((await setRole(ws, stranger, by.viewer, 'member')).statusCode).toBe(404);
  });

  it('the last owner cannot be demoted, removed or leave; with a second owner they can', async () => {
    const { ws, by } = await team();
    for (const res of [
      await setRole(ws, by.owner, by.owner, 'admin'),
      await remove(ws, by.owner, by.owner),
      await call(t.app, 'POST', `/workspaces/${ws}/leave`, { token: by.owner.token }),
    ]) {
      expect(res.statusCode).toBe(409);
      expect(res.json().error.code).toBe('LAST_OWNER');
    }
    // Role checks come first: an admin removing the only owner is 403, not 409.
    expect((await remove(ws, by.admin, by.owner)).statusCode).toBe(403);
    expect((await setRole(ws, by.owner, by.admin, 'owner')).statusCode).toBe(200);
    expect((await setRole(ws, by.owner, by.owner, 'member')).statusCode).toBe(200);
    // The new only owner is now the last one.
    expect((await call(t.app, 'POST', `/workspaces/${ws}/leave`, { token: by.admin.token })).statusCode).toBe(409);
  });

  it('two owners demoting each other at once leave exactly one owner', async () => {
    const { ws, by } = await team();
    expect((await setRole(ws, by.owner, by.admin, 'owner')).statusCode).toBe(200);
    const [a, b] = await Promise.all([
      setRole(ws, by.owner, by.admin, 'member'),
      setRole(ws, by.admin, by.owner, 'member'),
    ]);
    // The loser is refused either way: 409 LAST_OWNER when both passed the role check before either
    // committed, 403 when the winner committed before the loser's role was read (it is no longer
    // an owner). Which one depends on scheduling; what may never happen is two 200s.
    const codes = [a.statusCode, b.statusCode].sort();
    expect([
      [200, 403],
      [200, 409],
    ]).toContainEqual(codes);
    const members = (await call(t.app, 'GET', `/workspaces/${ws}/members`, { token: by.viewer.token })).json().members;
    expect(members.filter((m: { role: string }) => m.role === 'owner')).toHaveLength(1);
  });

  it('role matrix of DELETE members: admins remove non-owners, only owners remove owners', async () => {
    const { ws, by } = await team();
    for (const role of ['viewer', 'member'] as const) {
      expect((await remove(ws, by[role], by.viewer)).statusCode).toBe(403);
    }
    expect((await remove(ws, by.admin, by.viewer)).statusCode).toBe(204);
    expect((await setRole(ws, by.owner, by.member, 'owner')).statusCode).toBe(200);
    const refused = await remove(ws, by.admin, by.member);
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.message).toBe(OWNER_NEEDED);
    expect((await remove(ws, by.owner, by.member)).statusCode).toBe(204);
    const removals = (await auditOf(t, ws)).filter((e) => e.action === 'member.remove');
    expect(removals).toEqual([
      {
        action: 'member.remove',
        actor: by.admin.uuid,
        target: { type: 'member', uuid: by.viewer.uuid },
        details: { email: by.viewer.email },
      },
      {
        action: 'member.remove',
        actor: by.owner.uuid,
        target: { type: 'member', uuid: by.member.uuid },
        details: { email: by.member.email },
      },
    ]);
  });

  it('removal revokes the keys and tokens the member made there (audited); they get 404 and 401 afterwards', async () => {
    const { ws, by } = await team();
    const adminKey = await keyIn(t, by.admin, ws);
    const headers = { [WORKSPACE_HEADER]: ws };
    const tokenRes = await call(t.app, 'POST', '/auth/generate_ingest_token', { token: by.admin.token, headers });
    expect(tokenRes.statusCode).toBe(201);
    expect((await call(t.app, 'GET', '/agent/list', { headers: { 'x-api-key': adminKey.key } })).statusCode).toBe(200);
    // Another member's key stays.
    const memberKey = await keyIn(t, by.owner, ws, 'member');

    expect((await remove(ws, by.owner, by.admin)).statusCode).toBe(204);

    expect((await call(t.app, 'GET', '/agent/list', { headers: { 'x-api-key': adminKey.key } })).statusCode).toBe(401);
    expect((await call(t.app, 'GET', '/agent/list', { token: by.admin.token, headers })).statusCode).toBe(404);
    expect((await call(t.app, 'GET', `/workspaces/${ws}`, { token: by.admin.token })).statusCode).toBe(404);
    expect((await call(t.app, 'GET', '/agent/list', { headers: { 'x-api-key': memberKey.key } })).statusCode).toBe(200);
    // The admin's personal key is untouched.
    expect((await call(t.app, 'GET', '/agent/list', { headers: { 'x-api-key': by.admin.key } })).statusCode).toBe(200);
    const keys = (await call(t.app, 'GET', '/auth/platform_keys', { token: by.owner.token, headers })).json().keys;
    expect(keys.find((k: { uuid: string }) => k.uuid === adminKey.keyUuid).revoked_at).not.toBeNull();
    const entries = await auditOf(t, ws);
    expect(entries.filter((e) => e.action === 'key.revoke')).toEqual([
      {
        action: 'key.revoke',
        actor: by.owner.uuid,
        target: { type: 'key', uuid: adminKey.keyUuid },
        details: { name: 'team key' },
      },
    ]);
    expect(entries.filter((e) => e.action === 'ingest_token.revoke')).toEqual([
      {
        action: 'ingest_token.revoke',
        actor: by.owner.uuid,
        target: { type: 'ingest_token', uuid: tokenRes.json().uuid },
        details: {},
      },
    ]);
  });

  it('POST leave: any role leaves (member.leave); removing oneself is leaving', async () => {
    const { ws, by } = await team();
    const viewerKey = await keyIn(t, by.admin, ws, 'viewer');
    expect((await call(t.app, 'POST', `/workspaces/${ws}/leave`, { token: by.viewer.token })).statusCode).toBe(204);
    expect((await remove(ws, by.admin, by.admin)).statusCode).toBe(204);
    expect((await call(t.app, 'GET', '/agent/list', { headers: { 'x-api-key': viewerKey.key } })).statusCode).toBe(401);
    const leaves = (await auditOf(t, ws)).filter((e) => e.action === 'member.leave');
    expect(leaves.map((e) => [e.actor, e.target.uuid, e.details])).toEqual([
      [by.viewer.uuid, by.viewer.uuid, { email: by.viewer.email }],
      [by.admin.uuid, by.admin.uuid, { email: by.admin.email }],
    ]);
    const members = (await call(t.app, 'GET', `/workspaces/${ws}/members`, { token: by.owner.token })).json().members;
    expect(members.map((m: { user_uuid: string }) => m.user_uuid)).toEqual([by.owner.uuid, by.member.uuid]);
  });

  it('the personal workspace: leaving, changing or removing its member, inviting to it are 409 PERSONAL_WORKSPACE', async () => {
    const user = await createUser(t);
    const ws = user.uuid;
    for (const res of [
      await call(t.app, 'POST', `/workspaces/${ws}/leave`, { token: user.token }),
      await setRole(ws, user, user, 'admin'),
      await remove(ws, user, user),
      await call(t.app, 'POST', `/workspaces/${ws}/invitations`, {
        token: user.token,
        body: { email: 'friend@example.test', role: 'member' },
      }),
    ]) {
      expect(res.statusCode).toBe(409);
      expect(res.json().error.code).toBe('PERSONAL_WORKSPACE');
    }
    const members = (await call(t.app, 'GET', `/workspaces/${ws}/members`, { token: user.token })).json().members;
    expect(members).toEqual([expect.objectContaining({ user_uuid: user.uuid, role: 'owner' })]);
  });

  it('a demotion takes effect at once on the member’s keys and sessions', async () => {
    const { ws, by } = await team();
    const adminKey = await keyIn(t, by.admin, ws);
    const headers = { [WORKSPACE_HEADER]: ws };
    const made = await call(t.app, 'POST', '/agent', { headers: { 'x-api-key': adminKey.key }, body: { name: 'x' } });
    expect(made.statusCode).toBe(201);
    expect((await setRole(ws, by.owner, by.admin, 'viewer')).statusCode).toBe(200);
    expect(
      (await call(t.app, 'POST', '/agent', { headers: { 'x-api-key': adminKey.key }, body: { name: 'y' } })).statusCode,
    ).toBe(403);
    expect(
      (await call(t.app, 'POST', '/agent', { token: by.admin.token, headers, body: { name: 'y' } })).statusCode,
    ).toBe(403);
    expect((await call(t.app, 'GET', '/agent/list', { headers: { 'x-api-key': adminKey.key } })).statusCode).toBe(200);
  });
});
