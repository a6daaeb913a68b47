import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { A2A_METHOD_ROLES, PERMISSIONS } from '../../src/http/permissions.js';
import { isRole, ROLES, type Role, roleAtLeast } from '../../src/lib/principal.js';
import { buildTestApp, call, type TestApp } from '../helpers/app.js';
import { DATABASES } from '../helpers/databases.js';
import { createUser, type TestUser } from '../helpers/factories.js';

/** A team workspace with one member per role, written straight into the tables the app reads. */
async function teamWithEveryRole(t: TestApp): Promise<{ uuid: string; members: Record<Role, TestUser> }> {
  const uuid = randomUUID();
  const at = new Date().toISOString();
  const db = t.runtime.db.kysely;
  await db
    .insertInto('workspaces')
    .values({ uuid, name: 'Team', personal: 0, created_at: at, updated_at: at, deleted_at: null })
    .execute();
  const members = {} as Record<Role, TestUser>;
  for (const role of ROLES) {
    members[role] = await createUser(t);
    await db
      .insertInto('workspace_members')
      .values({ workspace_uuid: uuid, user_uuid: members[role].uuid, role, joined_at: at })
      .execute();
  }
  return { uuid, members };
}

/** The route's path with every parameter a fresh uuid (the team's for `/workspaces/:id`). */
function urlOf(path: string, workspace: string): string {
  // `::` is a literal colon (A2A's `message:send`), not a parameter.
  return path
    .replace(/^\/workspaces\/:id/, `/workspaces/${workspace}`)
    .replace(/(?<!:):[A-Za-z_]+/g, () => randomUUID())
    .replace(/::/g, ':');
}

describe('the permission table', () => {
  it('names a role, "session" or "token" on every line, and A2A methods by role', () => {
    for (const [line, permission] of Object.entries(PERMISSIONS)) {
      expect(line).toMatch(/^(GET|POST|PATCH|PUT|DELETE) \//);
      expect(isRole(permission) || permission === 'session' || permission === 'token').toBe(true);
    }
    expect(A2A_METHOD_ROLES.SendMessage).toBe('member');
    expect(A2A_METHOD_ROLES.GetTask).toBe('viewer');
  });
});

describe.each(DATABASES)('roles decided by method and path on $name', (database) => {
  let t: TestApp;
  let team: Awaited<ReturnType<typeof teamWithEveryRole>>;

  beforeAll(async () => {
    t = await buildTestApp(database);
    team = await teamWithEveryRole(t);
  });
  afterAll(() => t.close());

  const cells = Object.entries(PERMISSIONS).flatMap(([line, needed]) =>
    isRole(needed) ? ROLES.map((held) => ({ line, needed, held })) : [],
  );

  it('has a line for exactly the routes that take a credential', () => {
    for (const line of Object.keys(PERMISSIONS)) {
      const [method, url] = line.split(' ') as [string, string];
      expect(t.app.hasRoute({ method: method as 'GET', url }), line).toBe(true);
    }
  });

  // Lines that succeed with an empty body and end the caller's membership (or the workspace) run
  // on a team of their own, so the other cells still find theirs.
  const ENDS_MEMBERSHIP = new Set(['DELETE /workspaces/:id', 'POST /workspaces/:id/leave']);

  it.each(cells)('$line as $held (needs $needed)', async ({ line, needed, held }) => {
    const [method, path] = line.split(' ') as [string, string];
    const target = ENDS_MEMBERSHIP.has(line) ? await teamWithEveryRole(t) : team;
    const member = target.members[held];
    const res = await call(t.app, method as 'GET', urlOf(path, target.uuid), {
      token: member.token,
      headers: { 'x-taskhook-workspace': target.uuid },
      // Bodies are checked after the role: an empty one is enough to see which comes first.
      ...(method === 'GET' || method === 'DELETE' ? {} : { body: {} }),
    });
    const message = `This operation requires the ${needed} role in this workspace`;
    if (roleAtLeast(held, needed)) {
      expect(res.statusCode).not.toBe(403);
    } else if (path.startsWith('/spotlight/v1/')) {
      // The model proxy speaks OpenAI's error shape.
      expect(res.statusCode).toBe(403);
      expect(res.json()).toMatchObject({ error: { type: 'invalid_request_error', code: 'forbidden', message } });
    } else {
      expect(res.statusCode).toBe(403);
      expect(res.json()).toMatchObject({
        success: false,
        error: { code: 'FORBIDDEN', message },
      });
    }
  });

  it('on /a2a/:agentId the role follows the JSON-RPC method: a viewer may read, not send', async () => {
    const headers = { 'x-taskhook-workspace': team.uuid };
    const made = await call(t.app, 'POST', '/agent', {
      token: team.members.admin.token,
      headers,
      body: { name: 'rpc' },
    });
    const rpc = (method: string, params: unknown) =>
      call(t.app, 'POST', `/a2a/${made.json().uuid}`, {
        token: team.members.viewer.token,
        headers: { ...headers, 'a2a-version': '1.0' },
        body: { jsonrpc: '2.0', id: 1, method, params },
      });
    const send = await rpc('SendMessage', {
      message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hi' }] },
    });
    expect(send.statusCode).toBe(403);
    expect(send.json().error).toMatchObject({ code: 'FORBIDDEN', message: expect.stringContaining('member role') });
    const read = await rpc('ListTasks', {});
    expect(read.statusCode).toBe(200);
    expect(read.json().result).toBeDefined();
  });

  it('on the A2A HTTP+JSON paths the role follows the operation: a viewer may list and subscribe, not send or cancel', async () => {
    const headers = { 'x-taskhook-workspace': team.uuid, 'a2a-version': '1.0' };
    const made = await call(t.app, 'POST', '/agent', {
      token: team.members.admin.token,
      headers,
      body: { name: 'rest' },
    });
    const base = `/a2a/${made.json().uuid}`;
    const as = (role: Role, method: 'GET' | 'POST', path: string, body?: unknown) =>
      call(t.app, method, `${base}${path}`, { token: team.members[role].token, headers, body });
    const message = { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hi' }] };
    const refused = await as('viewer', 'POST', '/message:send', { message });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error).toMatchObject({ code: 'FORBIDDEN', message: expect.stringContaining('member role') });
    const sent = await as('member', 'POST', '/message:send', { message, configuration: { returnImmediately: true } });
    const id = sent.json().task.id;
    expect((await as('viewer', 'POST', `/tasks/${id}:cancel`)).statusCode).toBe(403);
    expect((await as('viewer', 'GET', '/tasks')).statusCode).toBe(200);
    expect((await as('viewer', 'GET', `/tasks/${id}`)).statusCode).toBe(200);
    expect((await as('member', 'POST', `/tasks/${id}:cancel`)).statusCode).toBe(200);
    // A finished task: the viewer's subscribe passes the role and gets A2A's refusal.
    expect((await as('viewer', 'POST', `/tasks/${id}:subscribe`)).statusCode).toBe(400);
  });

  it('a viewer deleting an unknown agent is refused for the role, before any lookup', async () => {
    const res = await call(t.app, 'DELETE', `/agent/${randomUUID()}`, {
      token: team.members.viewer.token,
      headers: { 'x-taskhook-workspace': team.uuid },
    });
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe('FORBIDDEN');
  });

  it('a workspace the caller is not a member of is 404, and a malformed header 400', async () => {
    const outsider = await createUser(t);
    const headers = { 'x-taskhook-workspace': team.uuid };
    const res = await call(t.app, 'GET', '/agent/list', { token: outsider.token, headers });
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe('NOT_FOUND');
    const unknown = await call(t.app, 'GET', '/agent/list', {
      token: outsider.token,
      headers: { 'x-taskhook-workspace': randomUUID() },
    });
    expect(unknown.statusCode).toBe(404);
    const bad = await call(t.app, 'GET', '/agent/list', {
      token: outsider.token,
      headers: { 'x-taskhook-workspace': 'not-a-uuid' },
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toMatchObject({ code: 'INVALID_REQUEST', details: { field: 'X-Taskhook-Workspace' } });
    // Its own personal workspace by uuid, in any case, is the same as no header.
    const own = await call(t.app, 'GET', '/agent/list', {
      token: outsider.token,
      headers: { 'x-taskhook-workspace': outsider.uuid.toUpperCase() },
    });
    expect(own.statusCode).toBe(200);
  });

  it('a platform key reaches only its own workspace, whatever the header says', async () => {
    const admin = team.members.admin;
    const mine = await call(t.app, 'GET', '/agent/list', {
      headers: { 'x-api-key': admin.key, 'x-taskhook-workspace': admin.uuid },
    });
    expect(mine.statusCode).toBe(200);
    const other = await call(t.app, 'GET', '/agent/list', {
      headers: { 'x-api-key': admin.key, 'x-taskhook-workspace': team.uuid },
    });
    expect(other.statusCode).toBe(404);
  });

  it('members of a team share its agents; another workspace of the same user is 404', async () => {
    const { admin, viewer } = team.members;
    const headers = { 'x-taskhook-workspace': team.uuid };
    const made = await call(t.app, 'POST', '/agent', { token: admin.token, headers, body: { name: 'shared' } });
    expect(made.statusCode).toBe(201);
    const agent = made.json().uuid as string;
    expect((await call(t.app, 'GET', `/agent/${agent}`, { token: viewer.token, headers })).statusCode).toBe(200);
    // The admin's personal workspace does not hold it.
    expect((await call(t.app, 'GET', `/agent/${agent}`, { token: admin.token })).statusCode).toBe(404);
    expect((await call(t.app, 'GET', `/agent/${agent}`, { headers: { 'x-api-key': admin.key } })).statusCode).toBe(404);
  });
});
