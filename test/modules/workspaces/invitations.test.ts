import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { buildTestApp, call, manualClock, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser, type TestUser } from '../../helpers/factories.js';
import {
  auditOf,
  captureLog,
  createWorkspace,
  invitationLinks,
  invite,
  join,
  tokenOfLink,
} from './workspace-helpers.js';

const TTL_SECONDS = 3600;

/*
 * Invitations: made by admins (owners for owner invitations), mailed as a link (logged here, no
 * SMTP), listed while pending, revoked, replaced, and accepted once by the invitee.
 */
describe.each(DATABASES)('workspace invitations on $name', (database) => {
  let t: TestApp;
  let logged: Array<Record<string, unknown>>;
  const clock = manualClock();

  beforeAll(async () => {
    // Owning is capped lower by default (TASKHOOK_MAX_WORKSPACES_PER_USER, owning.test.ts); here the membership cap.
    t = await buildTestApp(database, {
      clock,
      config: { invitationTtlSeconds: TTL_SECONDS, maxWorkspacesPerUser: 100 },
    });
    logged = captureLog(t);
  });
  afterAll(() => t.close());

  const accept = (user: TestUser, token: string) =>
    call(t.app, 'POST', '/invitations/accept', { token: user.token, body: { token } });
  const pending = async (ws: string, as: TestUser) =>
    (await call(t.app, 'GET', `/workspaces/${ws}/invitations`, { token: as.token })).json().invitations;

  it('end to end: invite, the mailed link, accept; the invitee joins with the role, audited', async () => {
    const owner = await createUser(t);
    const invitee = await createUser(t);
    const ws = (await createWorkspace(t, owner, 'Crew')).uuid;
    const given = invitee.email.toUpperCase();
    const res = await call(t.app, 'POST', `/workspaces/${ws}/invitations`, {
      token: owner.token,
      body: { email: given, role: 'admin' },
    });
    expect(res.statusCode).toBe(201);
    const invitation = res.json();
    expect(invitation).toMatchObject({
      email: given,
      role: 'admin',
      invited_by: { uuid: owner.uuid, email: owner.email },
    });
    expect(Object.keys(invitation).sort()).toEqual(['created_at', 'email', 'expires_at', 'invited_by', 'role', 'uuid']);
    expect(Date.parse(invitation.expires_at) - Date.parse(invitation.created_at)).toBe(TTL_SECONDS * 1000);

    const [link] = invitationLinks(logged, given);
    expect(link).toMatch(new RegExp(`^${t.config.publicUrl}/dashboard/invitations/[A-Za-z0-9_-]{43,128}$`));
    const token = tokenOfLink(link as string);
    expect(JSON.stringify(await pending(ws, owner))).not.toContain(token);
    expect((await pending(ws, owner)).map((i: { uuid: string }) => i.uuid)).toEqual([invitation.uuid]);

    const joined = await accept(invitee, token);
    expect(joined.statusCode).toBe(200);
    expect(joined.json()).toMatchObject({ uuid: ws, name: 'Crew', personal: false, role: 'admin' });
    expect(await pending(ws, owner)).toEqual([]);
    const members = (await call(t.app, 'GET', `/workspaces/${ws}/members`, { token: invitee.token })).json().members;
    expect(members.map((m: { user_uuid: string; role: string }) => [m.user_uuid, m.role])).toEqual([
      [owner.uuid, 'owner'],
      [invitee.uuid, 'admin'],
    ]);
    const entries = await auditOf(t, ws);
    expect(entries.filter((e) => e.action.startsWith('invitation.'))).toEqual([
      {
        action: 'invitation.create',
        actor: owner.uuid,
        target: { type: 'invitation', uuid: invitation.uuid },
        details: { email: given, role: 'admin' },
      },
      {
        action: 'invitation.accept',
        actor: invitee.uuid,
        target: { type: 'member', uuid: invitee.uuid },
        details: { invitation_uuid: invitation.uuid, role: 'admin' },
      },
    ]);
    // Used up.
    const again = await accept(invitee, token);
    expect(again.statusCode).toBe(400);
    expect(again.json().error.code).toBe('INVITATION_INVALID');
    expect(JSON.stringify(entries)).not.toContain(token);
  });

  it('who may invite: admins and owners; owner invitations only by owners; bad bodies 400', async () => {
    const owner = await createUser(t);
    const admin = await createUser(t);
    const member = await createUser(t);
    const ws = (await createWorkspace(t, owner)).uuid;
    await join(t, logged, ws, owner, admin, 'admin');
    await join(t, logged, ws, owner, member, 'member');
    const post = (as: TestUser, body: unknown) =>
      call(t.app, 'POST', `/workspaces/${ws}/invitations`, { token: as.token, body });
    const email = `x-${randomUUID()}@example.test`;
    expect((await post(member, { email, role: 'viewer' })).statusCode).toBe(403);
    expect((await call(t.app, 'GET', `/workspaces/${ws}/invitations`, { token: member.token })).statusCode).toBe(403);
    const ownerByAdmin = await post(admin, { email, role: 'owner' });
    expect(ownerByAdmin.statusCode).toBe(403);
    expect(ownerByAdmin.json().error.message).toBe('This operation requires the owner role in this workspace');
    expect((await post(admin, { email, role: 'viewer' })).statusCode).toBe(201);
    clock.advance(600_000); // one invitation e-mail per address per 10 minutes
    expect((await post(owner, { email, role: 'owner' })).statusCode).toBe(201);
    for (const body of [
      { email, role: 'boss' },
      { email: 'not an address', role: 'member' },
      { email },
      { email, role: 'member', x: 1 },
    ]) {
      expect((await post(owner, body)).statusCode, JSON.stringify(body)).toBe(400);
    }
    // A member's e-mail (any case) is a conflict.
    const conflict = await post(owner, { email: member.email.toUpperCase(), role: 'viewer' });
    expect(conflict.statusCode).toBe(409);
    expect(conflict.json().error.code).toBe('CONFLICT');
  });

  it('a new invitation for the same address replaces the pending one (its token stops working)', async () => {
    const owner = await createUser(t);
    const invitee = await createUser(t);
    const ws = (await createWorkspace(t, owner)).uuid;
    const first = await invite(t, logged, ws, owner, invitee.email, 'viewer');
    clock.advance(600_000); // one invitation e-mail per address per 10 minutes
    const second = await invite(t, logged, ws, owner, invitee.email.toUpperCase(), 'member');
    expect((await pending(ws, owner)).map((i: { role: string }) => i.role)).toEqual(['member']);
    expect((await accept(invitee, first)).json().error.code).toBe('INVITATION_INVALID');
    expect((await accept(invitee, second)).json().role).toBe('member');
  });

  it('revoke: 204, its token stops working, audited; unknown or no longer pending 404', async () => {
    const owner = await createUser(t);
    const invitee = await createUser(t);
    const ws = (await createWorkspace(t, owner)).uuid;
    const token = await invite(t, logged, ws, owner, invitee.email, 'viewer');
    const [inv] = await pending(ws, owner);
    const url = `/workspaces/${ws}/invitations/${inv.uuid}`;
    expect((await call(t.app, 'DELETE', url, { token: owner.token })).statusCode).toBe(204);
    expect((await call(t.app, 'DELETE', url, { token: owner.token })).statusCode).toBe(404);
    expect(
      (await call(t.app, 'DELETE', `/workspaces/${ws}/invitations/${randomUUID()}`, { token: owner.token })).statusCode,
    ).toBe(404);
    expect((await accept(invitee, token)).json().error.code).toBe('INVITATION_INVALID');
    expect((await auditOf(t, ws)).filter((e) => e.action === 'invitation.revoke')).toEqual([
      {
        action: 'invitation.revoke',
        actor: owner.uuid,
        target: { type: 'invitation', uuid: inv.uuid },
        details: { email: invitee.email, role: 'viewer' },
      },
    ]);
    // Another workspace's invitation is 404 here.
    const other = (await createWorkspace(t, owner)).uuid;
    await invite(t, logged, other, owner, invitee.email, 'viewer');
    const [foreign] = await pending(other, owner);
    expect(
      (await call(t.app, 'DELETE', `/workspaces/${ws}/invitations/${foreign.uuid}`, { token: owner.token })).statusCode,
    ).toBe(404);
  });

  it('accept, in order: unknown or expired 400, another e-mail 403 (stays pending), already a member 409 (used up)', async () => {
    const owner = await createUser(t);
    const invitee = await createUser(t);
    const someoneElse = await createUser(t);
    const ws = (await createWorkspace(t, owner)).uuid;
    expect((await accept(invitee, 'x'.repeat(43))).json().error.code).toBe('INVITATION_INVALID');

    const token = await invite(t, logged, ws, owner, invitee.email, 'viewer');
    const mismatch = await accept(someoneElse, token);
    expect(mismatch.statusCode).toBe(403);
    expect(mismatch.json().error.code).toBe('INVITATION_EMAIL_MISMATCH');
    expect(await pending(ws, owner)).toHaveLength(1);

    clock.advance(TTL_SECONDS * 1000);
    expect(await pending(ws, owner)).toEqual([]);
    const expired = await accept(invitee, token);
    expect(expired.statusCode).toBe(400);
    expect(expired.json().error.code).toBe('INVITATION_INVALID');

    // Already a member (here written straight into the table, as if they had joined some other
    // way meanwhile): 409, and the invitation is used up.
    const member = await createUser(t);
    const other = (await createWorkspace(t, owner)).uuid;
    const secondWs = await invite(t, logged, other, owner, member.email, 'viewer');
    await t.runtime.db.kysely
      .insertInto('workspace_members')
      .values({
        workspace_uuid: other,
        user_uuid: member.uuid,
        role: 'viewer',
        joined_at: new Date(clock.now()).toISOString(),
      })
      .execute();
    const conflict = await accept(member, secondWs);
    expect(conflict.statusCode).toBe(409);
    expect(conflict.json().error.code).toBe('CONFLICT');
    expect(await pending(other, owner)).toEqual([]);
    expect((await accept(member, secondWs)).json().error.code).toBe('INVITATION_INVALID');
  });

  it('a workspace has at most 100 pending invitations', async () => {
    const owner = await createUser(t);
    const ws = (await createWorkspace(t, owner)).uuid;
    for (let i = 0; i < 100; i++) {
      const res = await call(t.app, 'POST', `/workspaces/${ws}/invitations`, {
        token: owner.token,
        body: { email: `n${i}-${randomUUID()}@example.test`, role: 'viewer' },
      });
      expect(res.statusCode).toBe(201);
    }
    const res = await call(t.app, 'POST', `/workspaces/${ws}/invitations`, {
      token: owner.token,
      body: { email: `last-${randomUUID()}@example.test`, role: 'viewer' },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatchObject({ code: 'LIMIT_EXCEEDED', details: { field: 'invitations' } });
    expect(await pending(ws, owner)).toHaveLength(100);
    // Revoked ones do not count.
    const [one] = (await pending(ws, owner)) as [{ uuid: string }];
    await call(t.app, 'DELETE', `/workspaces/${ws}/invitations/${one.uuid}`, { token: owner.token });
    const after = await call(t.app, 'POST', `/workspaces/${ws}/invitations`, {
      token: owner.token,
      body: { email: `again-${randomUUID()}@example.test`, role: 'viewer' },
    });
    expect(after.statusCode).toBe(201);
    // A hundred requests in a row: more than the default 30 s on a loaded two-core machine.
  }, 120_000);

  it('accepting beyond 100 workspaces is 400 LIMIT_EXCEEDED and leaves the invitation pending', async () => {
    const owner = await createUser(t);
    const invitee = await createUser(t);
    const ws = (await createWorkspace(t, owner)).uuid;
    for (let i = 1; i < 100; i++) await createWorkspace(t, invitee, `W${i}`);
    const token = await invite(t, logged, ws, owner, invitee.email, 'viewer');
    const res = await accept(invitee, token);
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('LIMIT_EXCEEDED');
    expect(await pending(ws, owner)).toHaveLength(1);
    // A hundred requests in a row: more than the default 30 s on a loaded two-core machine.
  }, 120_000);
});

describe('TASKHOOK_INVITATION_TTL_SECONDS', () => {
  it('defaults to 7 days, takes 1 to 2592000, and a malformed value stops the start naming it', () => {
    expect(loadConfig({}).invitationTtlSeconds).toBe(604_800);
    expect(loadConfig({ TASKHOOK_INVITATION_TTL_SECONDS: '60' }).invitationTtlSeconds).toBe(60);
    for (const value of ['0', '2592001', '1.5', 'week']) {
      expect(() => loadConfig({ TASKHOOK_INVITATION_TTL_SECONDS: value }), value).toThrow(
        /TASKHOOK_INVITATION_TTL_SECONDS/,
      );
    }
  });
});
