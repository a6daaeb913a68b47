import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser, type TestUser } from '../../helpers/factories.js';
import { type FakeOpenAi, startFakeOpenAi } from '../../helpers/fake-openai.js';
import { createCredential } from '../../helpers/spotlight.js';

const chatBody = (model: string) => ({ model, messages: [{ role: 'user', content: 'hi' }] });

describe.each(DATABASES)('model allowlists on platform keys on $name', (database) => {
  let t: TestApp;
  let upstream: FakeOpenAi;

  beforeAll(async () => {
    upstream = await startFakeOpenAi();
    t = await buildTestApp(database, { config: { allowPrivateUrls: true } });
  });
  afterAll(async () => {
    await t.close();
    await upstream.close();
  });

  /** A user with a credential `fake`, a route `r` to it, and a key with `models`. */
  async function setup(models: unknown) {
    const user = await createUser(t);
    await createCredential(t, user, { name: 'fake', base_url: upstream.baseUrl });
    const cred = await createCredential(t, user, { name: 'other', base_url: upstream.baseUrl });
    const route = await call(t.app, 'POST', '/spotlight/routes', {
      token: user.token,
      body: { name: 'r', targets: [{ provider_credential_uuid: cred.uuid, model: 'gpt-4o' }] },
    });
    expect(route.statusCode).toBe(201);
    const created = await call(t.app, 'POST', '/auth/platform_keys', {
      token: user.token,
      body: { name: 'limited', models },
    });
    expect(created.statusCode).toBe(201);
    return { user, key: created.json().key as string, keyUuid: created.json().uuid as string, created: created.json() };
  }

  const chat = (token: string, model: string, headers: Record<string, string> = {}) =>
    call(t.app, 'POST', '/spotlight/v1/chat/completions', { token, body: chatBody(model), headers });
  const calls = (user: TestUser) =>
    call(t.app, 'GET', '/spotlight/calls', { token: user.token }).then((r) => r.json().calls as unknown[]);

  it('keeps models on create, list and PATCH; null by default; PATCH renames, null allows all again, audited', async () => {
    const { user, keyUuid, created } = await setup(['fake/gpt-4o*', 'route:*']);
    expect(created.models).toEqual(['fake/gpt-4o*', 'route:*']);
    const list = (await call(t.app, 'GET', '/auth/platform_keys', { token: user.token })).json().keys;
    expect(list.find((k: { uuid: string }) => k.uuid === keyUuid).models).toEqual(['fake/gpt-4o*', 'route:*']);
    expect(list.find((k: { uuid: string }) => k.uuid === user.keyUuid).models).toBeNull();

    const renamed = await call(t.app, 'PATCH', `/auth/platform_keys/${keyUuid}`, {
      token: user.token,
      body: { name: 'renamed' },
    });
    expect(renamed.statusCode).toBe(200);
    expect(renamed.json()).toMatchObject({ uuid: keyUuid, name: 'renamed', models: ['fake/gpt-4o*', 'route:*'] });
    const cleared = await call(t.app, 'PATCH', `/auth/platform_keys/${keyUuid}`, {
      token: user.token,
      body: { models: null },
    });
    expect(cleared.json()).toMatchObject({ name: 'renamed', models: null });
    const none = await call(t.app, 'PATCH', `/auth/platform_keys/${keyUuid}`, {
      token: user.token,
      body: { models: [] },
    });
    expect(none.json().models).toEqual([]);

    const audit = await call(t.app, 'GET', `/workspaces/${user.uuid}/audit_log?action=key.update`, {
      token: user.token,
    });
    expect(audit.json().entries.map((e: { target: unknown; details: unknown }) => [e.target, e.details])).toEqual([
      [{ type: 'key', uuid: keyUuid }, { fields: ['models'] }],
      [{ type: 'key', uuid: keyUuid }, { fields: ['models'] }],
      [{ type: 'key', uuid: keyUuid }, { fields: ['name'] }],
    ]);
  });

  it('refuses bad allowlists naming the entry, and PATCH refuses unknown fields, keys and other workspaces', async () => {
    const user = await createUser(t);
    const cases: Array<[unknown, string]> = [
      [['a*b'], 'models[0]'],
      [['ok', '*x'], 'models[1]'],
      [['ok', ''], 'models[1]'],
      [['ok', 5], 'models[1]'],
      [['x'.repeat(301)], 'models[0]'],
      [['a', 'b', 'a'], 'models[2]'],
      ['openai/*', 'models'],
      [{}, 'models'],
      [Array.from({ length: 101 }, (_, i) => `m${i}`), 'models'],
    ];
    for (const [models, field] of cases) {
      const res = await call(t.app, 'POST', '/auth/platform_keys', { token: user.token, body: { name: 'k', models } });
      expect(res.statusCode, JSON.stringify(models)).toBe(400);
      expect(res.json().error).toMatchObject({ code: 'INVALID_REQUEST', details: { field } });
      const patched = await call(t.app, 'PATCH', `/auth/platform_keys/${user.keyUuid}`, {
        token: user.token,
        body: { models },
      });
      expect(patched.json().error.details.field).toBe(field);
    }
    const ok = await call(t.app, 'POST', '/auth/platform_keys', {
      token: user.token,
      body: { name: 'k', models: Array.from({ length: 100 }, (_, i) => `m${i}*`) },
    });
    expect(ok.statusCode).toBe(201);

    const role = await call(t.app, 'PATCH', `/auth/platform_keys/${user.keyUuid}`, {
      token: user.token,
      body: { role: 'viewer' },
    });
    expect(role.statusCode).toBe(400);
    expect(role.json().error.details.field).toBe('role');
    const other = await createUser(t);
    const foreign = await call(t.app, 'PATCH', `/auth/platform_keys/${other.keyUuid}`, {
      token: user.token,
      body: { models: [] },
    });
    expect(foreign.statusCode).toBe(404);
    expect(foreign.json().error.code).toBe('NOT_FOUND');
    const unknown = await call(t.app, 'PATCH', `/auth/platform_keys/${randomUUID()}`, {
      token: user.token,
      body: { models: [] },
    });
    expect(unknown.statusCode).toBe(404);
    const byKey = await call(t.app, 'PATCH', `/auth/platform_keys/${user.keyUuid}`, {
      token: user.key,
      body: { models: null },
    });
    expect(byKey.statusCode).toBe(403);

    // A revoked key can still be changed.
    await call(t.app, 'DELETE', `/auth/platform_keys/${other.keyUuid}`, { token: other.token });
    const revoked = await call(t.app, 'PATCH', `/auth/platform_keys/${other.keyUuid}`, {
      token: other.token,
      body: { models: ['x'] },
    });
    expect(revoked.statusCode).toBe(200);
    expect(revoked.json()).toMatchObject({ models: ['x'], revoked_at: expect.any(String) });
  });

  it('refuses a model no pattern matches with 403 model_not_allowed, unrecorded and with nothing sent upstream', async () => {
    const { user, key } = await setup(['fake/gpt-4o*', 'route:r']);
    expect((await chat(key, 'fake/gpt-4o-mini')).statusCode).toBe(200);
    expect((await chat(key, 'fake/gpt-4o')).statusCode).toBe(200);
    expect((await chat(key, 'route:r')).statusCode).toBe(200);
    // X-Taskhook-Credential: the identifier is the credential's name, "/", the body's model.
    expect((await chat(key, 'gpt-4o-mini', { 'x-taskhook-credential': 'fake' })).statusCode).toBe(200);
    const before = upstream.seen.length;
    const recorded = (await calls(user)).length;

    const refused = await chat(key, 'fake/gpt-3.5');
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toEqual({
      error: {
        message: 'This key may not use model "fake/gpt-3.5"',
        type: 'permission_error',
        param: 'model',
        code: 'model_not_allowed',
      },
    });
    expect(refused.headers['x-taskhook-call-id']).toBeUndefined();
    expect((await chat(key, 'other/gpt-4o')).json().error.code).toBe('model_not_allowed');
    expect((await chat(key, 'FAKE/gpt-4o')).json().error.code).toBe('model_not_found');
    const header = await chat(key, 'gpt-3.5', { 'x-taskhook-credential': 'fake' });
    expect(header.json().error.message).toBe('This key may not use model "fake/gpt-3.5"');
    const responses = await call(t.app, 'POST', '/spotlight/v1/responses', {
      token: key,
      body: { model: 'other/gpt-4.1', input: 'hi' },
    });
    expect(responses.statusCode).toBe(403);
    expect(responses.json().error.code).toBe('model_not_allowed');
    expect(upstream.seen.length).toBe(before);
    expect((await calls(user)).length).toBe(recorded);

    // Order: an unknown model or route is refused first; the allowlist before the task.
    expect((await chat(key, 'nope/gpt-4o')).json().error.code).toBe('model_not_found');
    expect((await chat(key, 'route:missing')).json().error.code).toBe('route_not_found');
    const withTask = await chat(key, 'other/gpt-4o', { 'x-taskhook-task-id': randomUUID() });
    expect(withTask.json().error.code).toBe('model_not_allowed');

    // Sessions have no allowlist; a key with [] may call nothing.
    expect((await chat(user.token, 'other/gpt-4o')).statusCode).toBe(200);
    const { key: none } = await setup([]);
    expect((await chat(none, 'fake/gpt-4o')).statusCode).toBe(403);
  });

  it('takes effect on the next request after a PATCH, on the instance that made it', async () => {
    const { user, key, keyUuid } = await setup(['fake/*']);
    expect((await chat(key, 'other/gpt-4o')).statusCode).toBe(403);
    await call(t.app, 'PATCH', `/auth/platform_keys/${keyUuid}`, { token: user.token, body: { models: null } });
    expect((await chat(key, 'other/gpt-4o')).statusCode).toBe(200);
    await call(t.app, 'PATCH', `/auth/platform_keys/${keyUuid}`, { token: user.token, body: { models: ['x'] } });
    expect((await chat(key, 'other/gpt-4o')).statusCode).toBe(403);
  });

  it('filters the model lists by the allowlist, the relayed list of X-Taskhook-Credential included', async () => {
    const { key } = await setup(['fake/gpt-4o', 'other/*']);
    const all = await call(t.app, 'GET', '/spotlight/v1/models', { token: key });
    expect(
      all
        .json()
        .data.map((m: { id: string }) => m.id)
        .sort(),
    ).toEqual(['fake/gpt-4o', 'other/gpt-4o', 'other/gpt-4o-mini']);
    const one = await call(t.app, 'GET', '/spotlight/v1/models', {
      token: key,
      headers: { 'x-taskhook-credential': 'fake' },
    });
    expect(one.json()).toMatchObject({ object: 'list', data: [{ id: 'gpt-4o' }] });
    expect(one.json().data).toHaveLength(1);
    const { key: routes } = await setup(['route:*']);
    const listed = await call(t.app, 'GET', '/spotlight/v1/models', { token: routes });
    expect(listed.json().data.map((m: { id: string }) => m.id)).toEqual(['route:r']);
  });
});
