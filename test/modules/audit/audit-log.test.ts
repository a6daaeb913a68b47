import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, manualClock, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';

const DAY = 86_400_000;
const PUBLIC_URL = 'https://93.184.216.34/run';

interface Entry {
  id: string;
  at: string;
  actor: Record<string, string>;
  action: string;
  target: { type: string; uuid: string };
  details: Record<string, unknown>;
  ip: string | null;
  request_id: string | null;
  client_request_id: string | null;
}

describe.each(DATABASES)('audit log on $name', (database) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp(database);
  });
  afterAll(async () => t.close());

  /** Every entry of the user's personal workspace, newest first. */
  async function entries(user: TestUser, query = ''): Promise<Entry[]> {
    const res = await call(t.app, 'GET', `/workspaces/${user.uuid}/audit_log?limit=100${query}`, { token: user.token });
    expect(res.statusCode).toBe(200);
    return res.json().entries;
  }

  /** Sends a request with its own X-Request-Id, as a session or with the user's platform key. */
  async function act(user: TestUser, method: 'POST' | 'PATCH' | 'DELETE', url: string, body?: object, asKey = false) {
    const requestId = `req-${randomUUID()}`;
    const headers: Record<string, string> = { 'x-request-id': requestId };
    if (asKey) headers['x-api-key'] = user.key;
    const res = await call(t.app, method, url, { headers, ...(asKey ? {} : { token: user.token }), body });
    expect(res.statusCode, res.body).toBeLessThan(300);
    expect(res.headers['x-request-id']).toBe(requestId);
    return { res, requestId };
  }

  /** The newest entry, checked against what the request should have written. */
  async function expectEntry(
    user: TestUser,
    requestId: string,
    want: { action: string; target: { type: string; uuid: string }; details: Record<string, unknown> },
    asKey = false,
  ) {
    const [entry] = await entries(user);
    expect(entry).toMatchObject({ ...want, client_request_id: requestId, ip: '127.0.0.1' });
    expect(entry?.request_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(Object.keys(entry?.details ?? {}).sort()).toEqual(Object.keys(want.details).sort());
    expect(entry?.details).toEqual(want.details);
    expect(entry?.actor).toEqual(
      asKey
        ? { type: 'key', uuid: user.keyUuid, name: 'test key' }
        : { type: 'user', uuid: user.uuid, email: user.email },
    );
    expect(entry?.id).toMatch(/^[0-9a-f-]{36}$/);
  }

  it('records each agent action with its details, actor, ip and request id', async () => {
    const user = await createUser(t);
    const created = await act(user, 'POST', '/agent', { name: 'audited' }, true);
    const agent = created.res.json().uuid as string;
    await expectEntry(
      user,
      created.requestId,
      { action: 'agent.create', target: { type: 'agent', uuid: agent }, details: { name: 'audited' } },
      true,
    );
    const patched = await act(user, 'PATCH', `/agent/${agent}`, { status: 'paused', name: 'audited' });
    await expectEntry(user, patched.requestId, {
      action: 'agent.update',
      target: { type: 'agent', uuid: agent },
      details: { fields: ['status'] },
    });
    const before = (await entries(user)).length;
    await act(user, 'PATCH', `/agent/${agent}`, { status: 'paused' });
    expect((await entries(user)).length).toBe(before); // nothing changed, nothing recorded
    const removed = await act(user, 'DELETE', `/agent/${agent}`);
    await expectEntry(user, removed.requestId, {
      action: 'agent.delete',
      target: { type: 'agent', uuid: agent },
      details: { name: 'audited' },
    });
  });

  it('names a changed runtime but never its header values', async () => {
    const user = await createUser(t);
    const headerValue = `hv-${randomUUID()}`;
    const runtime = { type: 'http', url: PUBLIC_URL, headers: { 'X-Auth': headerValue } };
    const agent = (await act(user, 'POST', '/agent', { name: 'http', runtime })).res.json().uuid as string;
    const masked = { ...runtime, headers: { 'X-Auth': '********' } };
    const same = await act(user, 'PATCH', `/agent/${agent}`, { runtime: masked, concurrency: 3 });
    await expectEntry(user, same.requestId, {
      action: 'agent.update',
      target: { type: 'agent', uuid: agent },
      details: { fields: ['concurrency'] },
    });
    const changed = await act(user, 'PATCH', `/agent/${agent}`, {
      runtime: { ...runtime, headers: { 'X-Auth': 'x' } },
    });
    await expectEntry(user, changed.requestId, {
      action: 'agent.update',
      target: { type: 'agent', uuid: agent },
      details: { fields: ['runtime'] },
    });
    expect(JSON.stringify(await entries(user))).not.toContain(headerValue);
  });

  it('records each trigger action', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const base = `/v1/agent/${agent}/triggers`;
    const created = await act(user, 'POST', base, { name: 'hook', message_template: 'x' }, true);
    const trigger = created.res.json();
    const target = { type: 'trigger', uuid: trigger.uuid };
    await expectEntry(
      user,
      created.requestId,
      { action: 'trigger.create', target, details: { agent_uuid: agent, name: 'hook' } },
      true,
    );
    const patched = await act(user, 'PATCH', `${base}/${trigger.uuid}`, { enabled: false, name: 'hook' });
    await expectEntry(user, patched.requestId, {
      action: 'trigger.update',
      target,
      details: { agent_uuid: agent, fields: ['enabled'] },
    });
    const rotated = await act(user, 'POST', `${base}/${trigger.uuid}/rotate_secret`);
    await expectEntry(user, rotated.requestId, {
      action: 'trigger.rotate_secret',
      target,
      details: { agent_uuid: agent, name: 'hook' },
    });
    const removed = await act(user, 'DELETE', `${base}/${trigger.uuid}`);
    await expectEntry(user, removed.requestId, {
      action: 'trigger.delete',
      target,
      details: { agent_uuid: agent, name: 'hook' },
    });
    const text = JSON.stringify(await entries(user));
    expect(text).not.toContain(trigger.webhook_secret);
    expect(text).not.toContain(rotated.res.json().webhook_secret);
  });

  it('records each provider credential action, naming api_key but never its value', async () => {
    const user = await createUser(t);
    const apiKey = `sk-${randomUUID()}`;
    const body = { name: 'openai', provider: 'openai', api_key: apiKey, base_url: 'https://93.184.216.34/v1' };
    const created = await act(user, 'POST', '/user/provider_credentials', body);
    const uuid = created.res.json().uuid as string;
    const target = { type: 'provider_credential', uuid };
    await expectEntry(user, created.requestId, {
      action: 'provider_credential.create',
      target,
      details: { name: 'openai' },
    });
    const newKey = `sk-${randomUUID()}`;
    const patched = await act(user, 'PATCH', `/user/provider_credentials/${uuid}`, { api_key: newKey, name: 'openai' });
    await expectEntry(user, patched.requestId, {
      action: 'provider_credential.update',
      target,
      details: { fields: ['api_key'] },
    });
    const removed = await act(user, 'DELETE', `/user/provider_credentials/${uuid}`);
    await expectEntry(user, removed.requestId, {
      action: 'provider_credential.delete',
      target,
      details: { name: 'openai' },
    });
    const text = JSON.stringify(await entries(user));
    expect(text).not.toContain(apiKey);
    expect(text).not.toContain(newKey);
  });

  it('records keys, ingest tokens and the signing secret', async () => {
    const user = await createUser(t);
    const key = await act(user, 'POST', '/auth/platform_keys', { name: 'ci', role: 'member' });
    const keyUuid = key.res.json().uuid as string;
    await expectEntry(user, key.requestId, {
      action: 'key.create',
      target: { type: 'key', uuid: keyUuid },
      details: { name: 'ci', role: 'member' },
    });
    const revoked = await act(user, 'DELETE', `/auth/platform_keys/${keyUuid}`);
    await expectEntry(user, revoked.requestId, {
      action: 'key.revoke',
      target: { type: 'key', uuid: keyUuid },
      details: { name: 'ci' },
    });
    const token = await act(user, 'POST', '/auth/generate_ingest_token');
    const tokenUuid = token.res.json().uuid as string;
    await expectEntry(user, token.requestId, {
      action: 'ingest_token.create',
      target: { type: 'ingest_token', uuid: tokenUuid },
      details: {},
    });
    const dropped = await act(user, 'DELETE', `/auth/ingest_tokens/${tokenUuid}`);
    await expectEntry(user, dropped.requestId, {
      action: 'ingest_token.revoke',
      target: { type: 'ingest_token', uuid: tokenUuid },
      details: {},
    });
    const rotated = await act(user, 'POST', '/auth/webhook_signing_secret/rotate');
    await expectEntry(user, rotated.requestId, {
      action: 'signing_secret.rotate',
      target: { type: 'signing_secret', uuid: user.uuid },
      details: {},
    });
  });

  it('writes nothing for a refused request', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const before = await entries(user);
    const refused = [
      await call(t.app, 'PATCH', `/agent/${agent}`, { token: user.token, body: { concurrency: 0 } }),
      await call(t.app, 'PATCH', `/agent/${randomUUID()}`, { token: user.token, body: { name: 'x' } }),
      await call(t.app, 'POST', '/agent', {
        token: user.token,
        body: { name: 'bad', runtime: { type: 'http', url: PUBLIC_URL, headers: { 'X-A': '********' } } },
      }),
      await call(t.app, 'POST', `/v1/agent/${agent}/triggers`, {
        token: user.token,
        body: { name: 'bad', message_template: '{{' },
      }),
      await call(t.app, 'POST', '/user/provider_credentials', {
        token: user.token,
        body: { name: 'p', provider: 'openai', api_key: 'k', base_url: 'http://127.0.0.1:9/v1' },
      }),
    ];
    for (const res of refused) expect(res.statusCode, res.body).toBeGreaterThanOrEqual(400);
    expect(await entries(user)).toEqual(before);
  });

  it('pages newest first with a cursor that entries written meanwhile do not shift', async () => {
    const user = await createUser(t);
    for (let i = 0; i < 5; i++) await createAgent(t, user, { name: `a${i}` });
    const url = `/workspaces/${user.uuid}/audit_log`;
    const first = (await call(t.app, 'GET', `${url}?limit=2&action=agent.create`, { token: user.token })).json();
    expect(first.entries.map((e: Entry) => e.details.name)).toEqual(['a4', 'a3']);
    await createAgent(t, user, { name: 'later' });
    const seen: string[] = first.entries.map((e: Entry) => e.details.name);
    let cursor: string | null = first.next_cursor;
    while (cursor) {
      const page = await call(t.app, 'GET', `${url}?limit=2&action=agent.create&cursor=${cursor}`, {
        token: user.token,
      });
      expect(page.statusCode).toBe(200);
      seen.push(...page.json().entries.map((e: Entry) => e.details.name));
      cursor = page.json().next_cursor;
    }
    expect(seen).toEqual(['a4', 'a3', 'a2', 'a1', 'a0']);
    const all = await entries(user);
    const sorted = [...all].sort((a, b) => (a.at === b.at ? b.id.localeCompare(a.id) : b.at.localeCompare(a.at)));
    expect(all).toEqual(sorted);
    expect(all.filter((e) => e.action === 'key.create')).toHaveLength(1); // createUser's key
  });

  it('refuses a bad limit, an unknown action and a cursor it did not issue', async () => {
    const user = await createUser(t);
    const url = `/workspaces/${user.uuid}/audit_log`;
    const forged = Buffer.from(JSON.stringify(['audit_log', '2026-01-01T00:00:00Z', randomUUID()])).toString(
      'base64url',
    );
    for (const [query, field] of [
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=1.5', 'limit'],
      ['action=agent.explode', 'action'],
      ['cursor=abc', 'cursor'],
      [`cursor=${forged}`, 'cursor'],
    ] as const) {
      const res = await call(t.app, 'GET', `${url}?${query}`, { token: user.token });
      expect({ query, status: res.statusCode }).toEqual({ query, status: 400 });
      expect(res.json().error.code).toBe('INVALID_REQUEST');
      expect(res.json().error.details?.field).toBe(field);
    }
    const keyed = await call(t.app, 'GET', url, { headers: { 'x-api-key': user.key } });
    expect(keyed.statusCode).toBe(403);
    const other = await createUser(t);
    expect((await call(t.app, 'GET', url, { token: other.token })).statusCode).toBe(404);
  });
});

describe.each(DATABASES)('audit retention on $name', (database) => {
  const clock = manualClock();
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp(database, { clock, config: { auditRetentionDays: 2 } });
  });
  afterAll(async () => t.close());

  it('never returns entries older than TASKHOOK_AUDIT_RETENTION_DAYS', async () => {
    const user = await createUser(t);
    const read = async (u: TestUser) =>
      (await call(t.app, 'GET', `/workspaces/${u.uuid}/audit_log`, { token: u.token })).json().entries;
    expect(await read(user)).toHaveLength(1);
    clock.advance(3 * DAY);
    const login = await call(t.app, 'POST', '/auth/login', { body: { email: user.email, password: user.password } });
    expect(await read({ ...user, token: login.json().token })).toEqual([]);
  });
});
