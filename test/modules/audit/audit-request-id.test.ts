import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser, type TestUser } from '../../helpers/factories.js';

/*
 * An audit entry's request_id is the server's own id for the request, never the client's
 * X-Request-Id; the accepted X-Request-Id is kept apart in client_request_id.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

interface Entry {
  action: string;
  target: { uuid: string };
  request_id: string | null;
  client_request_id: string | null;
}

describe.each(DATABASES)('audit request ids on $name', (database) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp(database);
  });
  afterAll(async () => t.close());

  async function entries(user: TestUser): Promise<Entry[]> {
    const res = await call(t.app, 'GET', `/workspaces/${user.uuid}/audit_log?limit=100`, { token: user.token });
    expect(res.statusCode).toBe(200);
    return res.json().entries;
  }

  /** Creates an agent with the given request headers; answers its uuid and the response's X-Request-Id. */
  async function createAgent(user: TestUser, headers: Record<string, string>) {
    const res = await call(t.app, 'POST', '/agent', { token: user.token, headers, body: { name: 'audited' } });
    expect(res.statusCode).toBe(201);
    return { uuid: res.json().uuid as string, echoed: String(res.headers['x-request-id']) };
  }

  const entryOf = async (user: TestUser, uuid: string) =>
    (await entries(user)).find((e) => e.action === 'agent.create' && e.target.uuid === uuid) as Entry;

  it("records the server's UUID as request_id and the accepted X-Request-Id as client_request_id", async () => {
    const user = await createUser(t);
    const chosen = 'client-chosen.id:1';
    const first = await createAgent(user, { 'x-request-id': chosen });
    expect(first.echoed).toBe(chosen);
    const second = await createAgent(user, { 'x-request-id': chosen });
    const [a, b] = [await entryOf(user, first.uuid), await entryOf(user, second.uuid)];
    for (const entry of [a, b]) {
      expect(entry.client_request_id).toBe(chosen);
      expect(entry.request_id).toMatch(UUID);
      expect(entry.request_id).not.toBe(chosen);
    }
    expect(a.request_id).not.toBe(b.request_id);
  });

  it('uses the id the response carried when the client sent none it accepts; client_request_id is null', async () => {
    const user = await createUser(t);
    const none = await createAgent(user, {});
    expect(await entryOf(user, none.uuid)).toMatchObject({ request_id: none.echoed, client_request_id: null });
    expect(none.echoed).toMatch(UUID);
    for (const bad of ['has space', 'x'.repeat(129), 'semi;colon']) {
      const replaced = await createAgent(user, { 'x-request-id': bad });
      expect(replaced.echoed).toMatch(UUID);
      const entry = await entryOf(user, replaced.uuid);
      expect(entry).toMatchObject({ request_id: replaced.echoed, client_request_id: null });
    }
    const longest = 'a'.repeat(128);
    const kept = await createAgent(user, { 'x-request-id': longest });
    expect(kept.echoed).toBe(longest);
    expect((await entryOf(user, kept.uuid)).client_request_id).toBe(longest);
  });

  it('records a workspace create, written in the new workspace, with the ids of its request', async () => {
    const user = await createUser(t);
    const res = await call(t.app, 'POST', '/workspaces', {
      token: user.token,
      headers: { 'x-request-id': 'make-ws' },
      body: { name: 'team' },
    });
    expect(res.statusCode).toBe(201);
    const ws = res.json().uuid as string;
    const log = await call(t.app, 'GET', `/workspaces/${ws}/audit_log`, { token: user.token });
    const [created] = log.json().entries as Entry[];
    expect(created).toMatchObject({ action: 'workspace.create', client_request_id: 'make-ws' });
    expect(created?.request_id).toMatch(UUID);
  });

  it('writes both as null for entries the CLI makes', async () => {
    const user = await createUser(t);
    const key = await t.accounts.createPlatformKeyByEmail(user.email, 'cli key');
    const entry = (await entries(user)).find((e) => e.action === 'key.create' && e.target.uuid === key.uuid);
    expect(entry).toMatchObject({ request_id: null, client_request_id: null });
  });
});
