import { randomInt, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { type GithubAccount, type GithubLike, startGithubLike } from '../../helpers/github-like.js';
import { browserLogin, buildOAuthApp, consentAt, postCallback, spaLogin, startLogin } from '../../helpers/oauth.js';

function account(overrides: Partial<GithubAccount> = {}): GithubAccount {
  const email = `gh-${randomUUID()}@example.test`;
  return {
    id: randomInt(1, 2 ** 40),
    login: `octo-${randomUUID().slice(0, 8)}`,
    email: null,
    emails: [
      { email: `other-${randomUUID()}@example.test`, primary: false, verified: true, visibility: null },
      { email, primary: true, verified: true, visibility: 'private' },
    ],
    ...overrides,
  };
}

describe.each(DATABASES)('GitHub login on $name', (database) => {
  let github: GithubLike;
  let t: TestApp;

  beforeAll(async () => {
    github = await startGithubLike();
    t = await buildOAuthApp(database, { github });
  });
  afterAll(async () => {
    await t.close();
    await github.close();
  });
  beforeEach(() => {
    github.account = account();
    github.fail = {};
  });

  it('logs a browser in with the primary verified address, also when it is private', async () => {
    const res = await browserLogin(t, 'github');
    expect(res.statusCode, res.body).toBe(200);
    const primary = github.account.emails.find((e) => e.primary)?.email;
    expect(res.json()).toMatchObject({ created: true, user: { email: primary } });
    expect((await call(t.app, 'GET', '/auth/platform_keys', { token: res.json().token })).statusCode).toBe(200);
    // The API under a path (GitHub Enterprise Server) was used for the identity.
    expect(github.requests).toContain('GET /api/v3/user/emails');
  });

  it('builds the authorization URL on the configured base with the exact scopes and PKCE', async () => {
    const { url, state } = await startLogin(t, 'github');
    expect(`${url.origin}${url.pathname}`).toBe(`${github.baseUrl}/login/oauth/authorize`);
    expect(url.searchParams.get('client_id')).toBe(github.clientId);
    expect(url.searchParams.get('scope')).toBe('read:user user:email');
    expect(url.searchParams.get('state')).toBe(state);
    expect(url.searchParams.get('redirect_uri')).toBe(`${t.config.publicUrl}/auth/oauth/github/callback`);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.has('nonce')).toBe(false);
  });

  it('keys the account on the numeric id: a renamed login with a new address is the same user', async () => {
    const first = await spaLogin(t, 'github');
    github.account = { ...account(), id: github.account.id, login: 'renamed' };
    const second = await spaLogin(t, 'github');
    expect(second.json()).toMatchObject({ created: false, user: first.json().user });
  });

  it('never uses the public /user e-mail nor a verified address that is not primary', async () => {
    const publicEmail = `public-${randomUUID()}@example.test`;
    github.account = account({
      email: publicEmail,
      emails: [
        { email: publicEmail, primary: false, verified: true, visibility: 'public' },
        { email: `p-${randomUUID()}@example.test`, primary: true, verified: false, visibility: 'private' },
      ],
    });
    const res = await spaLogin(t, 'github');
    expect(res.statusCode).toBe(403);
    expect(res.json()).toEqual({ error: 'The e-mail address of your GitHub account is not verified' });
    github.account = account({ email: publicEmail, emails: [] });
    expect((await spaLogin(t, 'github')).statusCode).toBe(403);
  });

  it('reports a refused code (200 with an error field) as 401', async () => {
    const { url, state } = await startLogin(t, 'github');
    await consentAt(url);
    const res = await postCallback(t, 'github', { code: 'not-the-code', state });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ error: 'GitHub login failed: bad_verification_code' });
  });

  it('answers 502 when the token endpoint or the API fails', async () => {
    for (const fail of [{ token: 500 }, { user: 500 }, { emails: 502 }, { user: 404 }]) {
      github.fail = fail;
      const res = await spaLogin(t, 'github');
      expect(res.statusCode, JSON.stringify(fail)).toBe(502);
      expect(res.json().error.code).toBe('OAUTH_PROVIDER_UNAVAILABLE');
    }
  });

  // Provider timeouts are not a storage matter: one database is enough for this 10-second wait.
  it.runIf(database === DATABASES[0])(
    'answers 502 when the provider does not answer within 10 s',
    async () => {
      github.fail = { token: 'hang' };
      const res = await spaLogin(t, 'github');
      expect(res.statusCode).toBe(502);
      expect(res.json().error.code).toBe('OAUTH_PROVIDER_UNAVAILABLE');
    },
    20_000,
  );
});
