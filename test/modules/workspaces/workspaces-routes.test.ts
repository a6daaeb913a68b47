import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser } from '../../helpers/factories.js';
import { WORKSPACE_ROUTES } from '../../helpers/routes.js';
import { auditOf, captureLog, createWorkspace, invite, join, keyIn, WORKSPACE_HEADER } from './workspace-helpers.js';

/*
 * Team workspaces: creating, listing, reading, renaming and deleting them, with their audit
 * entries, and what a session acting in one (X-Taskhook-Workspace) sees.
 */
describe.each(DATABASES)('workspaces on $name', (database) => {
  let t: TestApp;
  let logged: Array<Record<string, unknown>>;

  beforeAll(async () => {
    // Callbacks go to 127.0.0.1 (where nothing listens), so they stay pending until dropped.
    // Owning is capped lower by default (TASKHOOK_MAX_WORKSPACES_PER_USER, owning.test.ts); here the membership cap.
    t = await buildTestApp(database, { config: { allowPrivateUrls: true, maxWorkspacesPerUser: 100 } });
    logged = captureLog(t);
  });
  afterAll(() => t.close());

  it('POST /workspaces makes a team workspace with the caller as owner, a signing secret and an audit entry', async () => {
    const owner = await createUser(t);
    const res = await call(t.app, 'POST', '/workspaces', { token: owner.token, body: { name: '  Платформа  ' } });
    expect(res.statusCode).toBe(201);
    const created = res.json();
    expect(created).toMatchObject({ name: '  Платформа  ', personal: false, role: 'owner' });
    expect(Object.keys(created).sort()).toEqual(['created_at', 'name', 'personal', 'role', 'updated_at', 'uuid']);
    const secret = await call(t.app, 'GET', '/auth/webhook_signing_secret', {
      token: owner.token,
      headers: { [WORKSPACE_HEADER]: created.uuid },
    });
    expect(secret.statusCode).toBe(200);
    const entries = await auditOf(t, created.uuid);
    expect(entries).toEqual([
      {
        action: 'workspace.create',
        actor: owner.uuid,
        target: { type: 'workspace', uuid: created.uuid },
        details: { name: '  Платформа  ' },
      },
    ]);
  });

  it('refuses names that are empty, only whitespace, too long, or not strings, and unknown fields', async () => {
    const owner = await createUser(t);
    for (const body of [
      { name: '' },
      { name: ' \t ' },
      { name: 'x'.repeat(101) },
      { name: 5 },
      {},
      { name: 'a', x: 1 },
    ]) {
      const res = await call(t.app, 'POST', '/workspaces', { token: owner.token, body });
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error.code).toBe('INVALID_REQUEST');
    }
    expect(
      (await call(t.app, 'POST', '/workspaces', { token: owner.token, body: { name: 'x'.repeat(100) } })).statusCode,
    ).toBe(201);
  });

  it('takes a session only: a platform key is refused with 403, no credential with 401', async () => {
    const user = await createUser(t);
    const byKey = await call(t.app, 'GET', '/workspaces', { headers: { 'x-api-key': user.key } });
    expect(byKey.statusCode).toBe(403);
    expect(byKey.json()).toEqual({ error: 'This endpoint requires a user session' });
    expect((await call(t.app, 'GET', '/workspaces')).statusCode).toBe(401);
  });

  it('GET /workspaces lists the personal workspace first, then by creation', async () => {
    const user = await createUser(t);
    const first = await createWorkspace(t, user, 'First');
    const second = await createWorkspace(t, user, 'Second');
    const res = await call(t.app, 'GET', '/workspaces', { token: user.token });
    expect(res.statusCode).toBe(200);
    expect(res.json().workspaces.map((w: { uuid: string }) => w.uuid)).toEqual([user.uuid, first.uuid, second.uuid]);
    expect(res.json().workspaces[0]).toMatchObject({ name: 'Personal', personal: true, role: 'owner' });
  });

  it('GET and PATCH /workspaces/:id: members read, admins rename (audited), others get 403 or 404', async () => {
    const owner = await createUser(t);
    const viewer = await createUser(t);
    const stranger = await createUser(t);
    const ws = await createWorkspace(t, owner, 'Old');
    await join(t, logged, ws.uuid, owner, viewer, 'viewer');
    const seen = await call(t.app, 'GET', `/workspaces/${ws.uuid}`, { token: viewer.token });
    expect(seen.statusCode).toBe(200);
    expect(seen.json()).toMatchObject({ uuid: ws.uuid, name: 'Old', role: 'viewer' });
    expect((await call(t.app, 'GET', `/workspaces/${ws.uuid}`, { token: stranger.token })).statusCode).toBe(404);
    const refused = await call(t.app, 'PATCH', `/workspaces/${ws.uuid}`, { token: viewer.token, body: { name: 'N' } });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.message).toBe('This operation requires the admin role in this workspace');
    const renamed = await call(t.app, 'PATCH', `/workspaces/${ws.uuid}`, { token: owner.token, body: { name: 'New' } });
    expect(renamed.statusCode).toBe(200);
    expect(renamed.json()).toMatchObject({ name: 'New', role: 'owner' });
    expect((await auditOf(t, ws.uuid)).filter((e) => e.action === 'workspace.rename')).toEqual([
      {
        action: 'workspace.rename',
        actor: owner.uuid,
        target: { type: 'workspace', uuid: ws.uuid },
        details: { name: 'New' },
      },
    ]);
    const blank = await call(t.app, 'PATCH', `/workspaces/${ws.uuid}`, { token: owner.token, body: { name: '  ' } });
    expect(blank.statusCode).toBe(400);
    // The personal workspace can be renamed.
    const personal = await call(t.app, 'PATCH', `/workspaces/${owner.uuid}`, {
      token: owner.token,
      body: { name: 'Mine' },
    });
    expect(personal.json()).toMatchObject({ name: 'Mine', personal: true });
  });

  it('an unknown workspace id is 404, a malformed one 400 (as every path id)', async () => {
    const user = await createUser(t);
    const unknown = await call(t.app, 'GET', '/workspaces/00000000-0000-4000-8000-000000000000', { token: user.token });
    expect(unknown.statusCode).toBe(404);
    const malformed = await call(t.app, 'GET', '/workspaces/not-a-uuid', { token: user.token });
    expect(malformed.statusCode).toBe(400);
    expect(malformed.json().error).toMatchObject({ code: 'INVALID_REQUEST', details: { field: 'id' } });
  });

  it('an agent made in a team workspace is seen by another member and is 404 to a non-member', async () => {
    const owner = await createUser(t);
    const member = await createUser(t);
    const stranger = await createUser(t);
    const ws = await createWorkspace(t, owner);
    await join(t, logged, ws.uuid, owner, member, 'member');
    const headers = { [WORKSPACE_HEADER]: ws.uuid };
    const made = await call(t.app, 'POST', '/agent', { token: owner.token, headers, body: { name: 'team agent' } });
    expect(made.statusCode).toBe(201);
    const agent = made.json().uuid as string;
    const listed = await call(t.app, 'GET', '/agent/list', { token: member.token, headers });
    expect(listed.json().agents.map((a: { uuid: string }) => a.uuid)).toEqual([agent]);
    expect((await call(t.app, 'GET', `/agent/${agent}`, { token: member.token, headers })).statusCode).toBe(200);
    // Not in the member's personal workspace, and not reachable by a non-member at all.
    expect((await call(t.app, 'GET', `/agent/${agent}`, { token: member.token })).statusCode).toBe(404);
    expect((await call(t.app, 'GET', `/agent/${agent}`, { token: stranger.token })).statusCode).toBe(404);
    expect((await call(t.app, 'GET', `/agent/${agent}`, { token: stranger.token, headers })).statusCode).toBe(404);
  });

  it('the personal workspace cannot be deleted; only an owner deletes a team workspace', async () => {
    const owner = await createUser(t);
    const admin = await createUser(t);
    const personal = await call(t.app, 'DELETE', `/workspaces/${owner.uuid}`, { token: owner.token });
    expect(personal.statusCode).toBe(409);
    expect(personal.json().error.code).toBe('PERSONAL_WORKSPACE');
    const ws = await createWorkspace(t, owner);
    await join(t, logged, ws.uuid, owner, admin, 'admin');
    const refused = await call(t.app, 'DELETE', `/workspaces/${ws.uuid}`, { token: admin.token });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.message).toBe('This operation requires the owner role in this workspace');
  });

  it('DELETE /workspaces/:id: from the 204 on nothing of it is reachable, tasks are cancelled, invitations void', async () => {
    const owner = await createUser(t);
    const member = await createUser(t);
    const invitee = await createUser(t);
    const ws = await createWorkspace(t, owner, 'Doomed');
    await join(t, logged, ws.uuid, owner, member, 'admin');
    const memberKey = await keyIn(t, member, ws.uuid);
    const headers = { [WORKSPACE_HEADER]: ws.uuid };
    const agent = (await call(t.app, 'POST', '/agent', { token: owner.token, headers, body: { name: 'a' } })).json();
    const submitted = await call(t.app, 'POST', `/agent/request/${agent.uuid}`, {
      headers: { 'x-api-key': memberKey.key },
      body: { message: 'work' },
    });
    expect(submitted.statusCode).toBe(202);
    const trigger = await call(t.app, 'POST', `/v1/agent/${agent.uuid}/triggers`, {
      headers: { 'x-api-key': memberKey.key },
      body: { name: 'hook', message_template: 'go' },
    });
    expect(trigger.statusCode).toBe(201);
    const token = await invite(t, logged, ws.uuid, owner, invitee.email, 'member');
    // A cancelled task's callback, not yet delivered.
    const hooked = await call(t.app, 'POST', `/agent/request/${agent.uuid}`, {
      headers: { 'x-api-key': memberKey.key },
      body: { message: 'call me', callback_mode: 'webhook', webhook_url: 'http://127.0.0.1:9/hook' },
    });
    expect(hooked.statusCode).toBe(202);
    const cancelUrl = `/agent/${agent.uuid}/task/${hooked.json().task_id}/cancel`;
    expect((await call(t.app, 'POST', cancelUrl, { headers: { 'x-api-key': memberKey.key } })).statusCode).toBe(200);
    const pendingCallbacks = () =>
      t.runtime.db.kysely
        .selectFrom('callbacks')
        .select('uuid')
        .where('workspace_uuid', '=', ws.uuid)
        .where('status', '=', 'pending')
        .execute();
    expect(await pendingCallbacks()).toHaveLength(1);

    const deleted = await call(t.app, 'DELETE', `/workspaces/${ws.uuid}`, { token: owner.token });
    expect(deleted.statusCode).toBe(204);

    for (const user of [owner, member]) {
      expect((await call(t.app, 'GET', `/workspaces/${ws.uuid}`, { token: user.token })).statusCode).toBe(404);
      expect((await call(t.app, 'GET', '/agent/list', { token: user.token, headers })).statusCode).toBe(404);
    }
    const listed = await call(t.app, 'GET', '/workspaces', { token: member.token });
    expect(listed.json().workspaces.map((w: { uuid: string }) => w.uuid)).toEqual([member.uuid]);
    expect((await call(t.app, 'GET', '/agent/list', { headers: { 'x-api-key': memberKey.key } })).statusCode).toBe(401);
    const hook = await t.app.inject({
      method: 'POST',
      url: `/v1/webhooks/triggers/${trigger.json().uuid}`,
      headers: { 'content-type': 'application/json', 'x-webhook-secret': trigger.json().webhook_secret },
      payload: '{}',
    });
    expect(hook.statusCode).toBe(404);
    const task = await t.runtime.db.kysely
      .selectFrom('tasks')
      .select('status')
      .where('uuid', '=', submitted.json().task_id)
      .executeTakeFirstOrThrow();
    expect(task.status).toBe('cancelled');
    expect(await pendingCallbacks()).toEqual([]);
    const accept = await call(t.app, 'POST', '/invitations/accept', { token: invitee.token, body: { token } });
    expect(accept.statusCode).toBe(400);
    expect(accept.json().error.code).toBe('INVITATION_INVALID');
    // The entry is in the deleting owner's personal log.
    expect((await auditOf(t, owner.uuid)).filter((e) => e.action === 'workspace.delete')).toEqual([
      {
        action: 'workspace.delete',
        actor: owner.uuid,
        target: { type: 'workspace', uuid: ws.uuid },
        details: { name: 'Doomed' },
      },
    ]);
    // Deleting again: it is gone.
    expect((await call(t.app, 'DELETE', `/workspaces/${ws.uuid}`, { token: owner.token })).statusCode).toBe(404);
  });

  it('a user belongs to at most 100 workspaces: one more POST /workspaces is 400 LIMIT_EXCEEDED', async () => {
    const user = await createUser(t);
    for (let i = 1; i < 100; i++) await createWorkspace(t, user, `W${i}`);
    const res = await call(t.app, 'POST', '/workspaces', { token: user.token, body: { name: 'one too many' } });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('LIMIT_EXCEEDED');
    expect((await call(t.app, 'GET', '/workspaces', { token: user.token })).json().workspaces).toHaveLength(100);
    // A hundred requests in a row: more than the default 30 s on a loaded two-core machine.
  }, 120_000);

  it('the OpenAPI document lists every workspace endpoint under the workspaces tag', async () => {
    const doc = (await call(t.app, 'GET', '/openapi.json')).json();
    const expected = [
      ['post', '/workspaces'],
      ['get', '/workspaces'],
      ['get', '/workspaces/{id}'],
      ['patch', '/workspaces/{id}'],
      ['delete', '/workspaces/{id}'],
      ['post', '/workspaces/{id}/leave'],
      ['get', '/workspaces/{id}/members'],
      ['patch', '/workspaces/{id}/members/{userUuid}'],
      ['delete', '/workspaces/{id}/members/{userUuid}'],
      ['post', '/workspaces/{id}/invitations'],
      ['get', '/workspaces/{id}/invitations'],
      ['delete', '/workspaces/{id}/invitations/{uuid}'],
      ['post', '/invitations/accept'],
    ];
    for (const [method, path] of expected) {
      const op = doc.paths[path as string]?.[method as string];
      expect(op, `${method} ${path}`).toBeDefined();
      expect(op.tags).toEqual(['workspaces']);
      expect(op.summary).toBeTruthy();
    }
    expect(Object.keys(doc.paths['/workspaces/{id}/members/{userUuid}'].patch.responses)).toEqual(
      expect.arrayContaining(['200', '403', '404', '409']),
    );
  });
});

describe.each(DATABASES)('workspace routes take a session only, on $name', (database) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp(database);
  });
  afterAll(() => t.close());

  it.each(WORKSPACE_ROUTES)('$method $path: none 401, an ingest token 401, a platform key 403', async (route) => {
    const user = await createUser(t);
    const ingest = await call(t.app, 'POST', '/auth/generate_ingest_token', { token: user.token });
    const url = route.path.replace(':id', user.uuid).replace(/:[A-Za-z]+/g, () => randomUUID());
    const send = (headers: Record<string, string>) =>
      call(t.app, route.method as 'GET', url, {
        headers,
        ...(route.method === 'GET' || route.method === 'DELETE' ? {} : { body: {} }),
      });
    const none = await send({});
    expect(none.statusCode).toBe(401);
    expect(none.json()).toEqual({ error: 'Authorization header is required' });
    const byToken = await send({ authorization: `Bearer ${ingest.json().token}` });
    expect(byToken.statusCode).toBe(401);
    expect(byToken.json()).toEqual({ error: 'Invalid or expired token' });
    const byKey = await send({ 'x-api-key': user.key });
    expect(byKey.statusCode).toBe(403);
    expect(byKey.json()).toEqual({ error: 'This endpoint requires a user session' });
  });
});
