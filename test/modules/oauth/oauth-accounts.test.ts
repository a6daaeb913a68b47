import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { uniqueEmail } from '../../helpers/factories.js';
import { type GithubLike, startGithubLike } from '../../helpers/github-like.js';
import { type GoogleLike, startGoogleLike } from '../../helpers/google-like.js';
import { buildOAuthApp, consentAt, postCallback, spaLogin, startLogin } from '../../helpers/oauth.js';

describe.each(DATABASES)('OAuth accounts on $name', (database) => {
  let google: GoogleLike;
  let github: GithubLike;
  let t: TestApp;

  beforeAll(async () => {
    google = await startGoogleLike();
    github = await startGithubLike();
    t = await buildOAuthApp(database, { google, github });
  });
  afterAll(async () => {
    await t.close();
    await Promise.all([google.close(), github.close()]);
  });
  beforeEach(() => {
    google.identity = { sub: `g-${randomUUID()}`, email: uniqueEmail(), email_verified: true };
  });

  const githubWith = (email: string, verified = true) => {
    github.account = {
      id: Math.floor(Math.random() * 2 ** 40),
      login: 'octo',
      email: null,
      emails: [{ email, primary: true, verified, visibility: 'private' }],
    };
  };

  it('lists the configured providers in order; an unknown or unconfigured one is 404', async () => {
    expect((await call(t.app, 'GET', '/auth/oauth/providers')).json()).toEqual({ providers: ['google', 'github'] });
    const only = await buildOAuthApp(database, { github });
    try {
      expect((await call(only.app, 'GET', '/auth/oauth/providers')).json()).toEqual({ providers: ['github'] });
      for (const [method, url] of [
        ['GET', '/auth/oauth/google'],
        ['GET', '/auth/oauth/google/callback?state=s&code=c'],
        ['POST', '/auth/oauth/google/callback'],
      ] as const) {
        const res = await call(only.app, method, url, { body: method === 'POST' ? { bad: 1 } : undefined });
        expect(res.statusCode, url).toBe(404);
        expect(res.json().error).toMatchObject({
          code: 'NOT_FOUND',
          message: 'OAuth provider google is not configured',
        });
      }
      const unknown = await call(only.app, 'GET', '/auth/oauth/gitlab');
      expect(unknown.statusCode).toBe(404);
      expect(unknown.json().error.code).toBe('NOT_FOUND');
    } finally {
      await only.close();
    }
  });

  it('documents the OAuth endpoints in the OpenAPI document', async () => {
    const doc = (await call(t.app, 'GET', '/openapi.json')).json();
    expect(Object.keys(doc.paths['/auth/oauth/{provider}/callback'] ?? {}).sort()).toEqual(['get', 'post']);
    expect(doc.paths['/auth/oauth/{provider}']?.get).toBeDefined();
    expect(doc.paths['/auth/oauth/providers']?.get).toBeDefined();
  });

  it('links a provider to an existing verified account (e-mail compared case-insensitively)', async () => {
    const email = uniqueEmail();
    const existing = await t.accounts.createUser({
      email,
      password: 'password-123',
      verified: true,
      agentsEnabled: true,
    });
    google.identity = { sub: `g-${randomUUID()}`, email: email.toUpperCase(), email_verified: true };
    const res = await spaLogin(t, 'google');
    expect(res.json()).toEqual({ token: expect.any(String), user: { uuid: existing.uuid, email }, created: false });
    githubWith(email);
    expect((await spaLogin(t, 'github')).json().user.uuid).toBe(existing.uuid);
    const login = await call(t.app, 'POST', '/auth/login', { body: { email, password: 'password-123' } });
    expect(login.statusCode).toBe(200);
  });

  it('takes over an unverified account of the same e-mail: its password cleared, its links void, verified and linked', async () => {
    const email = uniqueEmail();
    const squatter = await call(t.app, 'POST', '/auth/register', { body: { email, password: 'squatter-password' } });
    expect(squatter.statusCode).toBe(201);
    const existing = squatter.json().user as { uuid: string };
    const pending = await t.runtime.db.kysely
      .selectFrom('email_verifications')
      .select('token_hash')
      .where('user_uuid', '=', existing.uuid)
      .execute();
    expect(pending).toHaveLength(1);
    google.identity = { sub: `g-${randomUUID()}`, email, email_verified: true };
    const taken = await spaLogin(t, 'google');
    expect(taken.statusCode, taken.body).toBe(200);
    expect(taken.json()).toMatchObject({ created: false, user: { uuid: existing.uuid, email } });
    const links = await t.runtime.db.kysely
      .selectFrom('email_verifications')
      .select('token_hash')
      .where('user_uuid', '=', existing.uuid)
      .execute();
    expect(links).toEqual([]);
    const squatterLogin = await call(t.app, 'POST', '/auth/login', { body: { email, password: 'squatter-password' } });
    expect(squatterLogin.statusCode).toBe(401);
    const linked = await spaLogin(t, 'google');
    expect(linked.json()).toMatchObject({ created: false, user: { uuid: existing.uuid } });
  });

  it('refuses a disabled account with 403 "This account is disabled"', async () => {
    const email = uniqueEmail();
    await t.accounts.createUser({ email, password: 'password-123', verified: true, agentsEnabled: true });
    await t.accounts.disableByEmail(email);
    google.identity = { sub: `g-${randomUUID()}`, email, email_verified: true };
    const refused = await spaLogin(t, 'google');
    expect([refused.statusCode, refused.json()]).toEqual([403, { error: 'This account is disabled' }]);
  });

  it('a linked identity logs in whatever its e-mail claims say later, and never changes the e-mail', async () => {
    const first = await spaLogin(t, 'google');
    const other = await t.accounts.createUser({
      email: uniqueEmail(),
      password: 'password-123',
      verified: true,
      agentsEnabled: true,
    });
    google.identity = { ...google.identity, email: other.email, email_verified: false };
    const again = await spaLogin(t, 'google');
    expect(again.statusCode).toBe(200);
    expect(again.json().user).toEqual(first.json().user);
  });

  it('an unverified provider e-mail never reaches an existing account', async () => {
    const victim = await t.accounts.createUser({
      email: uniqueEmail(),
      password: 'password-123',
      verified: true,
      agentsEnabled: true,
    });
    google.identity = { sub: `g-${randomUUID()}`, email: victim.email, email_verified: false };
    expect((await spaLogin(t, 'google')).statusCode).toBe(403);
    githubWith(victim.email, false);
    expect((await spaLogin(t, 'github')).statusCode).toBe(403);
  });

  it('an OAuth account has no password until it sets one without the current one', async () => {
    const created = (await spaLogin(t, 'google')).json();
    const email = created.user.email;
    for (const password of ['', 'anything-at-all']) {
      const res = await call(t.app, 'POST', '/auth/login', { body: { email, password: password || 'x' } });
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual({ error: 'Invalid email or password' });
    }
    const wrong = await call(t.app, 'POST', '/auth/change_password', {
      token: created.token,
      body: { current_password: 'guess-guess', new_password: 'first-password' },
    });
    expect(wrong.statusCode).toBe(400);
    const set = await call(t.app, 'POST', '/auth/change_password', {
      token: created.token,
      body: { new_password: 'first-password' },
    });
    expect(set.statusCode).toBe(204);
    expect((await call(t.app, 'GET', '/auth/platform_keys', { token: created.token })).statusCode).toBe(401);
    const login = await call(t.app, 'POST', '/auth/login', { body: { email, password: 'first-password' } });
    expect(login.statusCode).toBe(200);
    const again = await call(t.app, 'POST', '/auth/change_password', {
      token: login.json().token,
      body: { new_password: 'second-password' },
    });
    expect(again.statusCode).toBe(400);
    expect(again.json().error.details).toEqual({ field: 'current_password', reason: 'is required' });
    // The identity stays linked.
    expect((await spaLogin(t, 'google')).json().user.uuid).toBe(created.user.uuid);
  });

  it('an account with the agents feature disabled still logs in', async () => {
    const email = uniqueEmail();
    await t.accounts.createUser({ email, password: 'password-123', verified: true, agentsEnabled: false });
    google.identity = { sub: `g-${randomUUID()}`, email, email_verified: true };
    const res = await spaLogin(t, 'google');
    expect(res.statusCode).toBe(200);
    const agents = await call(t.app, 'GET', '/agent/list', { token: res.json().token });
    expect(agents.statusCode).toBe(403);
  });

  it('refuses a state issued for the other provider, and that spends it', async () => {
    const { url, state } = await startLogin(t, 'google');
    const code = (await consentAt(url)).searchParams.get('code');
    const crossed = await postCallback(t, 'github', { code, state });
    expect(crossed.statusCode).toBe(400);
    expect(crossed.json().error.code).toBe('OAUTH_STATE_INVALID');
    const spent = await postCallback(t, 'google', { code, state });
    expect(spent.json().error.code).toBe('OAUTH_STATE_INVALID');
  });

  it('two concurrent first logins of one person end on one account', async () => {
    const [a, b] = await Promise.all([startLogin(t, 'google'), startLogin(t, 'google')]);
    const [ca, cb] = await Promise.all([consentAt(a.url), consentAt(b.url)]);
    const [ra, rb] = await Promise.all([
      postCallback(t, 'google', { code: ca.searchParams.get('code'), state: a.state }),
      postCallback(t, 'google', { code: cb.searchParams.get('code'), state: b.state }),
    ]);
    expect([ra.statusCode, rb.statusCode]).toEqual([200, 200]);
    expect(ra.json().user.uuid).toBe(rb.json().user.uuid);
    expect([ra.json().created, rb.json().created].filter(Boolean)).toHaveLength(1);
  });
});
