import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser } from '../../helpers/factories.js';
import { createCredential } from '../../helpers/spotlight.js';

// A literal public address: accepted without DNS; nothing here calls it.
const BASE_URL = 'https://93.184.215.14/v1';

describe.each(DATABASES)('model proxy routes on $name', (database) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp(database);
  });
  afterAll(() => t.close());

  it('creates, lists, reads, changes and deletes a route, audited', async () => {
    const user = await createUser(t);
    const a = await createCredential(t, user, { name: 'a', base_url: BASE_URL });
    const b = await createCredential(t, user, { name: 'b', base_url: BASE_URL });
    const created = await call(t.app, 'POST', '/spotlight/routes', {
      token: user.token,
      body: {
        name: 'main',
        targets: [
          { provider_credential_uuid: a.uuid, model: 'gpt-4o' },
          { provider_credential_uuid: b.uuid, model: 'llama' },
        ],
        retry_on: ['connection', '429'],
      },
    });
    expect(created.statusCode).toBe(201);
    const route = created.json();
    expect(route).toMatchObject({ name: 'main', retry_on: ['429', 'connection'], cache_ttl_seconds: null });
    expect(route.targets).toHaveLength(2);

    const dup = await call(t.app, 'POST', '/spotlight/routes', {
      token: user.token,
      body: { name: 'main', targets: [{ provider_credential_uuid: a.uuid, model: 'm' }] },
    });
    expect(dup.statusCode).toBe(400);
    expect(dup.json().error.details.field).toBe('name');

    const list = await call(t.app, 'GET', '/spotlight/routes', { token: user.token });
    expect(list.json().routes.map((r: { uuid: string }) => r.uuid)).toEqual([route.uuid]);

    const patched = await call(t.app, 'PATCH', `/spotlight/routes/${route.uuid}`, {
      token: user.token,
      body: { targets: [{ provider_credential_uuid: b.uuid, model: 'x' }], cache_ttl_seconds: 30 },
    });
    expect(patched.statusCode).toBe(200);
    expect(patched.json()).toMatchObject({ cache_ttl_seconds: 30, retry_on: ['429', 'connection'] });
    expect(patched.json().targets).toEqual([{ provider_credential_uuid: b.uuid, model: 'x' }]);

    // A credential a route names cannot be deleted; one it no longer names can.
    const inUse = await call(t.app, 'DELETE', `/user/provider_credentials/${b.uuid}`, { token: user.token });
    expect(inUse.statusCode).toBe(409);
    expect(inUse.json().error.code).toBe('CREDENTIAL_IN_USE');
    expect(
      (await call(t.app, 'DELETE', `/user/provider_credentials/${a.uuid}`, { token: user.token })).statusCode,
    ).toBe(204);

    expect((await call(t.app, 'DELETE', `/spotlight/routes/${route.uuid}`, { token: user.token })).statusCode).toBe(
      204,
    );
    expect((await call(t.app, 'GET', `/spotlight/routes/${route.uuid}`, { token: user.token })).statusCode).toBe(404);

    const audit = await call(t.app, 'GET', `/workspaces/${user.uuid}/audit_log?limit=100`, { token: user.token });
    const actions = audit.json().entries.map((e: { action: string }) => e.action);
    expect(actions).toEqual(expect.arrayContaining(['route.create', 'route.update', 'route.delete']));
  });

  it('names the bad target by its index', async () => {
    const user = await createUser(t);
    const a = await createCredential(t, user, { name: 'a', base_url: BASE_URL });
    const res = await call(t.app, 'POST', '/spotlight/routes', {
      token: user.token,
      body: {
        name: 'r',
        targets: [
          { provider_credential_uuid: a.uuid, model: 'ok' },
          { provider_credential_uuid: a.uuid, model: 'x'.repeat(257) },
        ],
      },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.details.field).toBe('targets[1].model');
  });

  it('refuses writes with a platform key and serves reads', async () => {
    const user = await createUser(t);
    const key = (await call(t.app, 'POST', '/auth/platform_keys', { token: user.token, body: { name: 'k' } })).json()
      .key;
    const a = await createCredential(t, user, { name: 'a', base_url: BASE_URL });
    const write = await call(t.app, 'POST', '/spotlight/routes', {
      headers: { authorization: `Bearer ${key}` },
      body: { name: 'r', targets: [{ provider_credential_uuid: a.uuid, model: 'm' }] },
    });
    expect(write.statusCode).toBe(403);
    expect(write.json()).toEqual({ error: 'This endpoint requires a user session' });
    const read = await call(t.app, 'GET', '/spotlight/routes', { headers: { authorization: `Bearer ${key}` } });
    expect(read.statusCode).toBe(200);
  });
});
