import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Role } from '../../../src/lib/principal.js';
import { buildTestApp, call, manualClock, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser, type TestUser } from '../../helpers/factories.js';
import { auditOf, captureLog, createWorkspace, invite, join } from './workspace-helpers.js';

/*
 * Invitations follow their inviter's authority: revoked when the inviter is removed, leaves or is
 * demoted below what they granted; re-checked on accept (token → inviter → e-mail → membership →
 * limits). One invitation e-mail per address per workspace per 10 minutes; 100 pending at most.
 */
describe.each(DATABASES)('invitations and their inviter on $name', (database) => {
  let t: TestApp;
  let logged: Array<Record<string, unknown>>;
  const clock = manualClock();

  beforeAll(async () => {
    t = await buildTestApp(database, { clock, config: { credentialCacheMs: 0 } });
    logged = captureLog(t);
  });
  afterAll(() => t.close());

  const accept = (user: TestUser, token: string) =>
    call(t.app, 'POST', '/invitations/accept', { token: user.token, body: { token } });
  const pending = async (ws: string, as: TestUser): Promise<Array<{ uuid: string; email: string; role: string }>> =>
    (await call(t.app, 'GET', `/workspaces/${ws}/invitations`, { token: as.token })).json().invitations;
  const inviteRaw = (ws: string, by: TestUser, email: string, role: Role) =>
    call(t.app, 'POST', `/workspaces/${ws}/invitations`, { token: by.token, body: { email, role } });
  const address = () => `inv-${randomUUID()}@example.test`;
  const expectInvalid = async (user: TestUser, token: string) => {
    const res = await accept(user, token);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().error.code).toBe('INVITATION_INVALID');
  };

  /** A team with an owner and an `inviterRole` member who has invited a fresh address with each role given. */
  async function team(inviterRole: Role, roles: Role[]) {
    const owner = await createUser(t);
    const inviter = await createUser(t);
    const ws = (await createWorkspace(t, owner)).uuid;
    await join(t, logged, ws, owner, inviter, inviterRole);
    const invited: Array<{ role: Role; user: TestUser; token: string }> = [];
    for (const role of roles) {
      const user = await createUser(t);
      invited.push({ role, user, token: await invite(t, logged, ws, inviter, user.email, role) });
    }
    return { owner, inviter, ws, invited };
  }

  it("revokes a removed admin's pending invitations in the same change, each audited by the remover", async () => {
    const { owner, inviter, ws, invited } = await team('admin', ['admin', 'viewer']);
    const before = await pending(ws, owner);
    expect(before).toHaveLength(2);
    const res = await call(t.app, 'DELETE', `/workspaces/${ws}/members/${inviter.uuid}`, { token: owner.token });
    expect(res.statusCode).toBe(204);
    expect(await pending(ws, owner)).toEqual([]);
    for (const { user, token } of invited) await expectInvalid(user, token);
    for (const { uuid } of before) {
      const del = await call(t.app, 'DELETE', `/workspaces/${ws}/invitations/${uuid}`, { token: owner.token });
      expect(del.statusCode).toBe(404);
    }
    const revokes = (await auditOf(t, ws)).filter((e) => e.action === 'invitation.revoke');
    expect(revokes.map((e) => [e.actor, e.target.uuid, e.details]).sort()).toEqual(
      before.map((i) => [owner.uuid, i.uuid, { email: i.email, role: i.role }]).sort(),
    );
  });

  it('revokes them when the inviter leaves, audited as the leaver', async () => {
    const { owner, inviter, ws, invited } = await team('admin', ['member']);
    expect((await call(t.app, 'POST', `/workspaces/${ws}/leave`, { token: inviter.token })).statusCode).toBe(204);
    expect(await pending(ws, owner)).toEqual([]);
    await expectInvalid(invited[0]?.user as TestUser, invited[0]?.token as string);
    const revokes = (await auditOf(t, ws)).filter((e) => e.action === 'invitation.revoke');
    expect(revokes.map((e) => e.actor)).toEqual([inviter.uuid]);
  });

  it('a demotion to member revokes all; the demoted admin cannot be restored through their invitation', async () => {
    const { owner, inviter, ws, invited } = await team('admin', ['admin', 'member', 'viewer']);
    const demote = await call(t.app, 'PATCH', `/workspaces/${ws}/members/${inviter.uuid}`, {
      token: owner.token,
      body: { role: 'member' },
    });
    expect(demote.statusCode).toBe(200);
    expect(await pending(ws, owner)).toEqual([]);
    for (const { user, token } of invited) await expectInvalid(user, token);
    const members = (await call(t.app, 'GET', `/workspaces/${ws}/members`, { token: owner.token })).json().members;
    expect(members.map((m: { role: string }) => m.role).sort()).toEqual(['member', 'owner']);
    // Promoted back, the inviter's old invitations stay revoked.
    await call(t.app, 'PATCH', `/workspaces/${ws}/members/${inviter.uuid}`, {
      token: owner.token,
      body: { role: 'admin' },
    });
    await expectInvalid(invited[0]?.user as TestUser, invited[0]?.token as string);
  });

  it('owner to admin revokes only the owner invitations', async () => {
    const { owner, inviter, ws, invited } = await team('owner', ['owner', 'admin', 'viewer']);
    const res = await call(t.app, 'PATCH', `/workspaces/${ws}/members/${inviter.uuid}`, {
      token: owner.token,
      body: { role: 'admin' },
    });
    expect(res.statusCode).toBe(200);
    expect((await pending(ws, owner)).map((i) => i.role).sort()).toEqual(['admin', 'viewer']);
    const [ownerInv, adminInv] = invited as Array<{ user: TestUser; token: string }>;
    await expectInvalid(ownerInv?.user as TestUser, ownerInv?.token as string);
    expect((await accept(adminInv?.user as TestUser, adminInv?.token as string)).json().role).toBe('admin');
    const revokes = (await auditOf(t, ws)).filter((e) => e.action === 'invitation.revoke');
    expect(revokes.map((e) => e.details)).toEqual([{ email: ownerInv?.user.email, role: 'owner' }]);
  });

  it('accept re-checks the inviter: a disabled inviter voids it for good, before the e-mail check', async () => {
    const { owner, inviter, ws, invited } = await team('admin', ['member']);
    const { user, token } = invited[0] as { user: TestUser; token: string };
    await t.accounts.disableByEmail(inviter.email);
    const stranger = await createUser(t);
    await expectInvalid(stranger, token); // the inviter comes before the e-mail (403)
    expect(await pending(ws, owner)).toEqual([]);
    await t.accounts.enableByEmail(inviter.email);
    await expectInvalid(user, token);
    const members = (await call(t.app, 'GET', `/workspaces/${ws}/members`, { token: owner.token })).json().members;
    expect(members).toHaveLength(2);
  });

  it('one invitation e-mail per address per workspace per 10 minutes: 429 with Retry-After, nothing changes', async () => {
    const owner = await createUser(t);
    const invitee = await createUser(t);
    const ws = (await createWorkspace(t, owner)).uuid;
    const first = await invite(t, logged, ws, owner, invitee.email, 'viewer');
    const created = (await auditOf(t, ws)).filter((e) => e.action === 'invitation.create').length;
    const sent = logged.length;
    clock.advance(100_000);
    const again = await inviteRaw(ws, owner, invitee.email.toUpperCase(), 'member');
    expect(again.statusCode).toBe(429);
    expect(again.json().error).toMatchObject({ code: 'RATE_LIMITED', details: { field: 'email' } });
    expect(again.headers['retry-after']).toBe('500');
    expect(again.headers['x-ratelimit-remaining']).toBeDefined();
    expect(logged.length).toBe(sent);
    expect((await pending(ws, owner)).map((i) => i.role)).toEqual(['viewer']);
    expect((await auditOf(t, ws)).filter((e) => e.action === 'invitation.create')).toHaveLength(created);
    // A revoked invitation still counts; the wait is to the second.
    const { uuid } = (await pending(ws, owner))[0] as { uuid: string };
    await call(t.app, 'DELETE', `/workspaces/${ws}/invitations/${uuid}`, { token: owner.token });
    clock.advance(499_500);
    const late = await inviteRaw(ws, owner, invitee.email, 'member');
    expect(late.statusCode).toBe(429);
    expect(late.headers['retry-after']).toBe('1');
    clock.advance(500);
    expect((await inviteRaw(ws, owner, invitee.email, 'member')).statusCode).toBe(201);
    await expectInvalid(invitee, first);
    // Checks before it: a member's address is 409, an admin's owner invitation 403.
    const member = await createUser(t);
    await join(t, logged, ws, owner, member, 'admin');
    expect((await inviteRaw(ws, owner, member.email, 'viewer')).statusCode).toBe(409);
    const fresh = address();
    expect((await inviteRaw(ws, owner, fresh, 'viewer')).statusCode).toBe(201);
    expect((await inviteRaw(ws, member, fresh, 'owner')).statusCode).toBe(403);
    expect((await inviteRaw(ws, member, fresh, 'viewer')).statusCode).toBe(429);
    // Another workspace may invite the same address.
    const other = (await createWorkspace(t, owner)).uuid;
    expect((await inviteRaw(other, owner, fresh, 'viewer')).statusCode).toBe(201);
  });
});
