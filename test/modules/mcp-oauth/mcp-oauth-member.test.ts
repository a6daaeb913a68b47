import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser, type TestUser } from '../../helpers/factories.js';
import { auditOf, captureLog, createWorkspace, join, WORKSPACE_HEADER } from '../workspaces/workspace-helpers.js';
import { approveFor, connectClient, exchange, injectForm, modernMcp, registerPublicClient } from './oauth-helpers.js';

// Grants follow the member: removal and leaving end them (audited), a disabled or deleted user's
// tokens stop, and a role change applies to the next request.
describe.each(DATABASES)('MCP OAuth grants follow the member on $name', (database) => {
  let t: TestApp;
  let logged: Array<Record<string, unknown>>;

  beforeAll(async () => {
    t = await buildTestApp(database);
    logged = captureLog(t);
  });
  afterAll(() => t.close());

  /** A team workspace of a new owner with an agent `reviewer`, and a member connected there. */
  async function team(role: 'member' | 'admin' = 'member') {
    const owner = await createUser(t);
    const member = await createUser(t);
    const ws = await createWorkspace(t, owner);
    await join(t, logged, ws.uuid, owner, member, role);
    const agent = await call(t.app, 'POST', '/agent', {
      token: owner.token,
      headers: { [WORKSPACE_HEADER]: ws.uuid },
      body: { name: 'reviewer' },
    });
    expect(agent.statusCode).toBe(201);
    const got = await connectClient(t, member, { workspaceUuid: ws.uuid, role: 'member' });
    return { owner, member, ws, got };
  }

  const grantsOf = async (user: TestUser) =>
    (await call(t.app, 'GET', '/auth/mcp_grants', { token: user.token })).json().grants as Array<{
      uuid: string;
      workspace: { uuid: string };
      revoked_at: string | null;
    }>;

  const callReviewer = (token: string) =>
    modernMcp(t, token, 'tools/call', { name: 'reviewer', arguments: { message: 'hello' } });

  it('removing the member revokes their grants there, audited with the remover, in one step', async () => {
    const { owner, member, ws, got } = await team();
    // A second grant in the personal workspace is not touched; a pending one in the team is ended too.
    const personal = await connectClient(t, member);
    const pendingClient = await registerPublicClient(t);
    const pending = await approveFor(t, member, { clientId: pendingClient, workspaceUuid: ws.uuid });
    expect((await modernMcp(t, got.access_token, 'tools/list')).status).toBe(200);

    const removed = await call(t.app, 'DELETE', `/workspaces/${ws.uuid}/members/${member.uuid}`, {
      token: owner.token,
    });
    expect(removed.statusCode).toBe(204);

    const refused = await modernMcp(t, got.access_token, 'tools/list');
    expect(refused.status).toBe(401);
    expect(refused.headers['www-authenticate']).toContain('error="invalid_token"');
    expect((await modernMcp(t, personal.access_token, 'tools/list')).status).toBe(200);
    const refresh = await injectForm(t, '/oauth/token', {
      grant_type: 'refresh_token',
      refresh_token: got.refresh_token,
      client_id: got.clientId,
    });
    expect(refresh.statusCode).toBe(400);
    expect(refresh.json().error).toBe('invalid_grant');
    expect((await exchange(t, pendingClient, pending)).json().error).toBe('invalid_grant');

    const grants = await grantsOf(member);
    const inTeam = grants.filter((g) => g.workspace.uuid === ws.uuid);
    expect(inTeam).toHaveLength(1);
    expect(inTeam[0]?.revoked_at).not.toBeNull();
    expect(grants.find((g) => g.workspace.uuid === member.uuid)?.revoked_at).toBeNull();

    const audit = await auditOf(t, ws.uuid);
    const revoke = audit.filter((e) => e.action === 'mcp_grant.revoke');
    expect(revoke).toEqual([
      {
        action: 'mcp_grant.revoke',
        actor: owner.uuid,
        target: { type: 'mcp_grant', uuid: inTeam[0]?.uuid },
        details: { client_id: got.clientId, client_name: 'Test client', reason: 'member_removed' },
      },
    ]);
    // Written in the removal's transaction, before its own entry.
    const actions = audit.map((e) => e.action);
    expect(actions.indexOf('mcp_grant.revoke')).toBeLessThan(actions.indexOf('member.remove'));
  });

  it('a member who leaves ends their grants there, audited as the leaving user', async () => {
    const { member, ws, got } = await team();
    const left = await call(t.app, 'POST', `/workspaces/${ws.uuid}/leave`, { token: member.token });
    expect(left.statusCode).toBe(204);
    expect((await modernMcp(t, got.access_token, 'tools/list')).status).toBe(401);
    const revoke = (await auditOf(t, ws.uuid)).filter((e) => e.action === 'mcp_grant.revoke');
    expect(revoke).toHaveLength(1);
    expect(revoke[0]).toMatchObject({ actor: member.uuid, details: { reason: 'member_removed' } });
    expect((await grantsOf(member))[0]?.revoked_at).not.toBeNull();
  });

  it('a refused removal (the last owner leaving) ends nothing', async () => {
    const owner = await createUser(t);
    const ws = await createWorkspace(t, owner);
    const got = await connectClient(t, owner, { workspaceUuid: ws.uuid });
    const left = await call(t.app, 'POST', `/workspaces/${ws.uuid}/leave`, { token: owner.token });
    expect(left.statusCode).toBe(409);
    expect((await modernMcp(t, got.access_token, 'tools/list')).status).toBe(200);
    expect((await grantsOf(owner))[0]?.revoked_at).toBeNull();
  });

  it('a role change applies to the next request: the grant acts with the lower of both roles', async () => {
    const { owner, member, ws, got } = await team('admin');
    const before = await callReviewer(got.access_token);
    expect(before.body.result).toMatchObject({ resultType: 'task', status: 'working' });

    const setRole = (role: string) =>
      call(t.app, 'PATCH', `/workspaces/${ws.uuid}/members/${member.uuid}`, { token: owner.token, body: { role } });
    expect((await setRole('viewer')).statusCode).toBe(200);
    const demoted = await callReviewer(got.access_token);
    expect(demoted.body.result).toMatchObject({ isError: true });
    expect(demoted.body.result.content[0].text).toMatch(/^FORBIDDEN: /);
    expect((await modernMcp(t, got.access_token, 'tools/list')).status).toBe(200);

    // Promoted above the grant's role: the grant's `member` caps it.
    expect((await setRole('owner')).statusCode).toBe(200);
    const after = await callReviewer(got.access_token);
    expect(after.body.result).toMatchObject({ resultType: 'task' });
    const cancel = await modernMcp(t, got.access_token, 'tasks/cancel', { taskId: after.body.result.taskId });
    expect(cancel.body.result).toMatchObject({ resultType: 'complete' });
    expect((await auditOf(t, ws.uuid)).filter((e) => e.action === 'mcp_grant.revoke')).toEqual([]);
  });

  it('disabling the user stops their tokens and refreshes; deleting the user ends the grants', async () => {
    const user = await createUser(t);
    const got = await connectClient(t, user);
    expect((await modernMcp(t, got.access_token, 'tools/list')).status).toBe(200);
    await t.accounts.disableByEmail(user.email);
    expect((await modernMcp(t, got.access_token, 'tools/list')).status).toBe(401);
    const refresh = () =>
      injectForm(t, '/oauth/token', {
        grant_type: 'refresh_token',
        refresh_token: got.refresh_token,
        client_id: got.clientId,
      });
    expect((await refresh()).json().error).toBe('invalid_grant');

    await t.accounts.deleteByEmail(user.email);
    expect((await modernMcp(t, got.access_token, 'tools/list')).status).toBe(401);
    expect((await refresh()).json().error).toBe('invalid_grant');
    const left = await t.runtime.db.kysely
      .selectFrom('mcp_oauth_grants')
      .select('uuid')
      .where('user_uuid', '=', user.uuid)
      .execute();
    expect(left).toEqual([]);
  });
});
