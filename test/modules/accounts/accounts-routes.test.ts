import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser, uniqueEmail } from '../../helpers/factories.js';

describe.each(DATABASES)('accounts on $name', (database) => {
  let t: TestApp;
  const logged: Array<Record<string, unknown>> = [];

  beforeAll(async () => {
    t = await buildTestApp(database);
    // Capture the logged verification link (no SMTP configured).
    const original = t.runtime.logger.info.bind(t.runtime.logger);
    t.runtime.logger.info = ((obj: unknown, ...rest: unknown[]) => {
      if (obj && typeof obj === 'object') logged.push(obj as Record<string, unknown>);
      return (original as (...a: unknown[]) => void)(obj, ...rest);
    }) as typeof t.runtime.logger.info;
  });
  afterAll(() => t.close());

  it('registers, refuses login until verified, verifies through the logged link, then logs in', async () => {
    const email = uniqueEmail();
    const reg = await call(t.app, 'POST', '/auth/register', { body: { email, password: 'correct horse' } });
    expect(reg.statusCode).toBe(201);
    expect(reg.json().user).toMatchObject({ email, email_verified: false });

    const early = await call(t.app, 'POST', '/auth/login', { body: { email, password: 'correct horse' } });
    expect(early.statusCode).toBe(403);
    expect(early.json()).toEqual({
      error: 'Please verify your e-mail address: check your inbox for the verification e-mail',
    });

    const entry = logged.find((l) => l.to === email);
    const link = String(entry?.verification_link);
    expect(link).toContain('/auth/verify_email?token=');
    const path = link.slice(link.indexOf('/auth/'));
    const verified = await call(t.app, 'GET', path);
    expect(verified.statusCode).toBe(200);
    expect(verified.json()).toEqual({ verified: true });
    expect((await call(t.app, 'GET', path)).statusCode).toBe(400);

    const login = await call(t.app, 'POST', '/auth/login', { body: { email, password: 'correct horse' } });
    expect(login.statusCode).toBe(200);
    expect(login.json().user).toEqual({ uuid: reg.json().user.uuid, email });
    expect(login.json().token.split('.')).toHaveLength(3);

    // Once verified, the address is taken: registering it again is the duplicate 400.
    const dup = await call(t.app, 'POST', '/auth/register', {
      body: { email: email.toUpperCase(), password: 'correct horse' },
    });
    expect(dup.statusCode).toBe(400);
    expect(dup.json().error.code).toBe('INVALID_REQUEST');
  });

  it('refuses a short password at registration and wrong credentials at login', async () => {
    const short = await call(t.app, 'POST', '/auth/register', { body: { email: uniqueEmail(), password: 'short' } });
    expect(short.statusCode).toBe(400);
    expect(short.json().error.details.field).toBe('password');
    const user = await createUser(t);
    const wrong = await call(t.app, 'POST', '/auth/login', { body: { email: user.email, password: 'nope-nope-nope' } });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json()).toEqual({ error: 'Invalid email or password' });
    const unknown = await call(t.app, 'POST', '/auth/login', { body: { email: uniqueEmail(), password: 'whatever1' } });
    expect(unknown.statusCode).toBe(401);
    expect(unknown.json()).toEqual({ error: 'Invalid email or password' });
  });

  it('change_password voids earlier session tokens but not platform keys', async () => {
    const user = await createUser(t);
    const wrong = await call(t.app, 'POST', '/auth/change_password', {
      token: user.token,
      body: { current_password: 'not-my-password', new_password: 'a new password' },
    });
    expect(wrong.statusCode).toBe(400);
    const tooShort = await call(t.app, 'POST', '/auth/change_password', {
      token: user.token,
      body: { current_password: user.password, new_password: 'short' },
    });
    expect(tooShort.statusCode).toBe(400);
    const ok = await call(t.app, 'POST', '/auth/change_password', {
      token: user.token,
      body: { current_password: user.password, new_password: 'a new password' },
    });
    expect(ok.statusCode).toBe(204);
    const old = await call(t.app, 'GET', '/agent/list', { token: user.token });
    expect(old.statusCode).toBe(401);
    expect(old.json()).toEqual({ error: 'Invalid or expired token' });
    expect((await call(t.app, 'GET', '/agent/list', { token: user.key })).statusCode).toBe(200);
    const relogin = await call(t.app, 'POST', '/auth/login', {
      body: { email: user.email, password: 'a new password' },
    });
    expect(relogin.statusCode).toBe(200);
    expect((await call(t.app, 'GET', '/agent/list', { token: relogin.json().token })).statusCode).toBe(200);
  });

  it('creates, lists and revokes platform keys; a revoked key stops at once', async () => {
    const user = await createUser(t);
    const created = await call(t.app, 'POST', '/auth/platform_keys', { token: user.token, body: { name: 'deploy' } });
    expect(created.statusCode).toBe(201);
    const { key, uuid } = created.json();
    expect(key).toMatch(/^sk_service_[0-9A-Za-z]{49}$/);
    const variants: Array<Record<string, string>> = [
      { 'x-service-api-key': key },
      { 'x-api-key': key },
      { authorization: `Bearer ${key}` },
    ];
    for (const headers of variants) {
      expect((await call(t.app, 'GET', '/agent/list', { headers })).statusCode).toBe(200);
    }
    const list = await call(t.app, 'GET', '/auth/platform_keys', { token: user.token });
    const listed = list.json().keys.find((k: { uuid: string }) => k.uuid === uuid);
    expect(listed).toMatchObject({ name: 'deploy', prefix: key.slice(0, 16), revoked_at: null });
    expect(listed.last_used_at).not.toBeNull();
    expect(JSON.stringify(list.json())).not.toContain(key);

    expect((await call(t.app, 'DELETE', `/auth/platform_keys/${uuid}`, { token: user.token })).statusCode).toBe(204);
    const after = await call(t.app, 'GET', '/agent/list', { headers: { 'x-api-key': key } });
    expect(after.statusCode).toBe(401);
    const relisted = (await call(t.app, 'GET', '/auth/platform_keys', { token: user.token })).json();
    expect(relisted.keys.find((k: { uuid: string }) => k.uuid === uuid).revoked_at).not.toBeNull();
  });

  it('creates, lists and revokes ingest tokens, which no agent or auth route accepts', async () => {
    const user = await createUser(t);
    const created = await call(t.app, 'POST', '/auth/generate_ingest_token', { token: user.token });
    expect(created.statusCode).toBe(201);
    const { token, uuid } = created.json();
    expect(token).toMatch(/^[0-9a-f-]{36}$/);
    for (const url of ['/agent/list', '/auth/platform_keys', '/auth/ingest_tokens']) {
      const res = await call(t.app, 'GET', url, { headers: { authorization: token } });
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual({ error: 'Invalid or expired token' });
    }
    const list = await call(t.app, 'GET', '/auth/ingest_tokens', { token: user.token });
    expect(list.json().tokens).toEqual([
      {
        uuid,
        prefix: token.slice(0, 8),
        created_at: created.json().created_at,
        last_used_at: null,
        revoked_at: null,
        // Added by workspaces: the token's workspace (the personal one: the user's uuid) and its creator.
        workspace_uuid: user.uuid,
        created_by: { uuid: user.uuid, email: user.email },
      },
    ]);
    expect((await call(t.app, 'DELETE', `/auth/ingest_tokens/${uuid}`, { token: user.token })).statusCode).toBe(204);
    const revoked = await call(t.app, 'GET', '/auth/ingest_tokens', { token: user.token });
    expect(revoked.json().tokens[0].revoked_at).not.toBeNull();
  });

  it('gets and rotates the callback signing secret, keeping the old one active for 24 h', async () => {
    const user = await createUser(t);
    const first = await call(t.app, 'GET', '/auth/webhook_signing_secret', { token: user.token });
    expect(first.statusCode).toBe(200);
    expect(first.json().secret).toMatch(/^whsec_/);
    const rotated = await call(t.app, 'POST', '/auth/webhook_signing_secret/rotate', { token: user.token });
    expect(rotated.statusCode).toBe(200);
    expect(rotated.json().secret).not.toBe(first.json().secret);
    const now = await call(t.app, 'GET', '/auth/webhook_signing_secret', { token: user.token });
    expect(now.json().secret).toBe(rotated.json().secret);
    expect(await t.accounts.activeSigningSecrets(user.uuid)).toEqual([rotated.json().secret, first.json().secret]);
  });
});
