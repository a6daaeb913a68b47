import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildTestApp, call, manualClock, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { type GoogleLike, startGoogleLike } from '../../helpers/google-like.js';
import {
  browserLogin,
  buildOAuthApp,
  consentAt,
  GOOGLE_CLIENT_ID,
  GOOGLE_CLIENT_SECRET,
  oauthConfig,
  postCallback,
  spaLogin,
  startLogin,
} from '../../helpers/oauth.js';

const INVALID = { error: 'Google login failed: invalid ID token' };

describe.each(DATABASES)('Google login on $name', (database) => {
  let google: GoogleLike;
  let t: TestApp;
  const clock = manualClock();

  beforeAll(async () => {
    google = await startGoogleLike();
    t = await buildOAuthApp(database, { google }, { clock });
  });
  afterAll(async () => {
    await t.close();
    await google.close();
  });
  beforeEach(() => {
    clock.set(Date.now());
    google.identity = { sub: `g-${randomUUID()}`, email: `G.${randomUUID()}@Example.test`, email_verified: true };
    google.tamper = null;
    google.answer = null;
  });

  it('logs a browser in through the redirect flow and answers like a password login', async () => {
    const res = await browserLogin(t, 'google');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    const body = res.json();
    expect(body.created).toBe(true);
    expect(body.user.email).toBe(String(google.identity.email).toLowerCase());
    expect((await call(t.app, 'GET', '/auth/platform_keys', { token: body.token })).statusCode).toBe(200);

    const again = await browserLogin(t, 'google');
    expect(again.json()).toMatchObject({ created: false, user: body.user });

    // The code went back with the PKCE verifier (the provider checked it) and the client secret.
    const exchange = google.tokenRequests.at(-1);
    expect(exchange?.body).toMatchObject({ grant_type: 'authorization_code' });
    expect(exchange?.body.code_verifier).toMatch(/^[A-Za-z0-9_-]{43,128}$/);
    expect(exchange?.authorization).toBe(
      `Basic ${Buffer.from(`${GOOGLE_CLIENT_ID}:${GOOGLE_CLIENT_SECRET}`).toString('base64')}`,
    );
  });

  it('builds the authorization URL with state, PKCE S256 and a nonce, fresh every time', async () => {
    const a = await startLogin(t, 'google');
    const b = await startLogin(t, 'google');
    const q = a.url.searchParams;
    expect(`${a.url.origin}${a.url.pathname}`).toBe(`${google.issuer}/authorize`);
    expect(q.get('response_type')).toBe('code');
    expect(q.get('client_id')).toBe(GOOGLE_CLIENT_ID);
    expect(q.get('redirect_uri')).toBe(`${t.config.publicUrl}/auth/oauth/google/callback`);
    expect(q.get('scope')).toBe('openid email profile');
    expect(q.get('code_challenge_method')).toBe('S256');
    expect(q.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(q.get('state')).toBe(a.state);
    for (const value of [a.state, q.get('nonce')]) expect(value).toMatch(/^[A-Za-z0-9_-]{22,128}$/);
    expect(q.get('nonce')).not.toBe(a.state);
    expect(b.state).not.toBe(a.state);
    expect(b.url.searchParams.get('nonce')).not.toBe(q.get('nonce'));
  });

  it('answers JSON or a redirect by mode and Accept, never cached', async () => {
    const json = await call(t.app, 'GET', '/auth/oauth/google', { headers: { accept: 'application/json' } });
    expect(json.statusCode).toBe(200);
    expect(Object.keys(json.json()).sort()).toEqual(['authorization_url', 'state']);
    const redirect = await call(t.app, 'GET', '/auth/oauth/google?mode=redirect', {
      headers: { accept: 'application/json' },
    });
    expect(redirect.statusCode).toBe(302);
    expect(redirect.headers.location).toContain(`${google.issuer}/authorize?`);
    expect(redirect.headers['cache-control']).toBe('no-store');
    const wildcard = await call(t.app, 'GET', '/auth/oauth/google?unrelated=1', { headers: { accept: '*/*' } });
    expect(wildcard.statusCode).toBe(302);
    const refused = await call(t.app, 'GET', '/auth/oauth/google', { headers: { accept: 'application/json;q=0' } });
    expect(refused.statusCode).toBe(302);
    const bad = await call(t.app, 'GET', '/auth/oauth/google?mode=popup');
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.code).toBe('INVALID_REQUEST');
  });

  it('refuses a forged state without contacting the provider', async () => {
    const before = google.tokenRequests.length;
    const res = await postCallback(t, 'google', { code: 'whatever', state: 'forged-state-0123456789abcdef' });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatchObject({
      code: 'OAUTH_STATE_INVALID',
      message: 'The login attempt is unknown, expired or already used: start again',
    });
    expect(google.tokenRequests.length).toBe(before);
  });

  it('spends a state once: the replay of a successful callback is refused', async () => {
    const { url, state } = await startLogin(t, 'google');
    const code = (await consentAt(url)).searchParams.get('code');
    expect((await postCallback(t, 'google', { code, state })).statusCode).toBe(200);
    const replay = await postCallback(t, 'google', { code, state });
    expect(replay.statusCode).toBe(400);
    expect(replay.json().error.code).toBe('OAUTH_STATE_INVALID');
  });

  it('refuses an expired state', async () => {
    const { url, state } = await startLogin(t, 'google');
    const code = (await consentAt(url)).searchParams.get('code');
    clock.advance(600_001);
    const res = await postCallback(t, 'google', { code, state });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('OAUTH_STATE_INVALID');
  });

  it("reports the provider's error code, and the attempt is spent", async () => {
    const { state } = await startLogin(t, 'google');
    const res = await call(t.app, 'GET', `/auth/oauth/google/callback?error=access_denied&state=${state}&iss=x&hd=y`);
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ error: 'Google login failed: access_denied' });
    const again = await postCallback(t, 'google', { code: 'c', state });
    expect(again.json().error.code).toBe('OAUTH_STATE_INVALID');
  });

  it('refuses shape errors with 400 and consumes nothing', async () => {
    const { url, state } = await startLogin(t, 'google');
    const code = (await consentAt(url)).searchParams.get('code');
    const bad: unknown[] = [
      { state },
      { code, error: 'access_denied', state },
      { code, state, extra: 1 },
      { code: 5, state },
      { code, state: 'x'.repeat(513) },
      { code: '', state },
    ];
    for (const body of bad) {
      const res = await postCallback(t, 'google', body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error.code).toBe('INVALID_REQUEST');
    }
    const text = await call(t.app, 'POST', '/auth/oauth/google/callback', {
      body: `code=${code}&state=${state}`,
      headers: { 'content-type': 'text/plain' },
    });
    expect(text.statusCode).toBe(415);
    const ok = await postCallback(t, 'google', { code, state });
    expect(ok.statusCode, ok.body).toBe(200);
  });

  it('ignores an Authorization header', async () => {
    const { url, state } = await startLogin(t, 'google');
    const code = (await consentAt(url)).searchParams.get('code');
    const res = await call(t.app, 'POST', '/auth/oauth/google/callback', {
      body: { code, state },
      headers: { authorization: 'Bearer not-a-token' },
    });
    expect(res.statusCode).toBe(200);
  });

  const tampering: Array<[string, (h: Record<string, unknown>, p: Record<string, unknown>) => void]> = [
    ['a wrong nonce', (_h, p) => Object.assign(p, { nonce: 'another-nonce-0123456789abcdef' })],
    ['no nonce', (_h, p) => delete p.nonce],
    ['a wrong audience', (_h, p) => Object.assign(p, { aud: 'someone-else' })],
    ['several audiences without azp', (_h, p) => Object.assign(p, { aud: [GOOGLE_CLIENT_ID, 'other'] })],
    ['several audiences with a foreign azp', (_h, p) => Object.assign(p, { aud: [GOOGLE_CLIENT_ID, 'o'], azp: 'o' })],
    ['a wrong issuer', (_h, p) => Object.assign(p, { iss: 'https://accounts.evil.test' })],
    ['an expired token', (_h, p) => Object.assign(p, { exp: Math.floor(Date.now() / 1000) - 120 })],
    ['no iat', (_h, p) => delete p.iat],
    ['an unknown key id', (h) => Object.assign(h, { kid: 'unknown-kid' })],
  ];
  for (const [what, tamper] of tampering) {
    it(`refuses an ID token with ${what}`, async () => {
      google.tamper = tamper;
      const res = await spaLogin(t, 'google');
      expect(res.statusCode, res.body).toBe(401);
      expect(res.json()).toEqual(INVALID);
    });
  }

  it('accepts several audiences when azp names us, within a minute of clock leeway', async () => {
    google.tamper = (_h, p) =>
      Object.assign(p, {
        aud: [GOOGLE_CLIENT_ID, 'other'],
        azp: GOOGLE_CLIENT_ID,
        exp: Math.floor(Date.now() / 1000) - 30,
      });
    expect((await spaLogin(t, 'google')).statusCode).toBe(200);
  });

  it('refuses ID tokens signed by another key, with HS256 and with alg none', async () => {
    const foreign = await generateKeyPair('RS256');
    const jwk = await exportJWK(foreign.publicKey);
    const claims = (nonce: string) => ({ ...google.identity, nonce, aud: GOOGLE_CLIENT_ID, iss: google.issuer });
    const kid = google.server.issuer.keys.toJSON()[0]?.kid as string;
    const forgeries: Array<(nonce: string) => Promise<string>> = [
      (n) =>
        new SignJWT(claims(n))
          .setProtectedHeader({ alg: 'RS256', kid })
          .setIssuedAt()
          .setExpirationTime('5m')
          .sign(foreign.privateKey),
      (n) =>
        new SignJWT(claims(n))
          .setProtectedHeader({ alg: 'HS256' })
          .setIssuedAt()
          .setExpirationTime('5m')
          .sign(new TextEncoder().encode(GOOGLE_CLIENT_SECRET)),
      async (n) => {
        const enc = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
        const now = Math.floor(Date.now() / 1000);
        return `${enc({ alg: 'none' })}.${enc({ ...claims(n), iat: now, exp: now + 300 })}.`;
      },
    ];
    expect(jwk.kty).toBe('RSA');
    for (const forge of forgeries) {
      const { url, state } = await startLogin(t, 'google');
      const nonce = url.searchParams.get('nonce') as string;
      const idToken = await forge(nonce);
      google.answer = (body) => ({ status: 200, body: { ...body, id_token: idToken } });
      const code = (await consentAt(url)).searchParams.get('code');
      const res = await postCallback(t, 'google', { code, state });
      expect(res.statusCode, res.body).toBe(401);
      expect(res.json()).toEqual(INVALID);
    }
  });

  it('reports a refused code as 401 and a failing token endpoint as 502', async () => {
    google.answer = () => ({ status: 400, body: { error: 'invalid_grant', error_description: 'Bad code' } });
    const refused = await spaLogin(t, 'google');
    expect(refused.statusCode).toBe(401);
    expect(refused.json()).toEqual({ error: 'Google login failed: invalid_grant' });
    google.answer = () => ({ status: 503, body: {} });
    const failing = await spaLogin(t, 'google');
    expect(failing.statusCode).toBe(502);
    expect(failing.json().error.code).toBe('OAUTH_PROVIDER_UNAVAILABLE');
    google.answer = (body) => ({ status: 200, body: { ...body, id_token: undefined } });
    expect((await spaLogin(t, 'google')).json()).toEqual(INVALID);
  });

  it('never logs in from an unverified e-mail, and creates nothing', async () => {
    for (const flag of [false, 'false', undefined]) {
      google.identity = { sub: `g-${randomUUID()}`, email: `u-${randomUUID()}@example.test`, email_verified: flag };
      const res = await spaLogin(t, 'google');
      expect(res.statusCode).toBe(403);
      expect(res.json()).toEqual({ error: 'The e-mail address of your Google account is not verified' });
      const login = await call(t.app, 'POST', '/auth/login', { body: { email: google.identity.email, password: 'x' } });
      expect(login.statusCode).toBe(401);
      await expect(t.accounts.verifyByEmail(String(google.identity.email))).rejects.toThrow('not found');
    }
    google.identity = { sub: `g-${randomUUID()}`, email: `s-${randomUUID()}@example.test`, email_verified: 'true' };
    expect((await spaLogin(t, 'google')).json().created).toBe(true);
  });

  it('refuses a discovery document that names another issuer (502) and so does not start', async () => {
    const impostor = await startGoogleLike();
    impostor.server.issuer.url = 'https://accounts.google.com';
    const mismatched = await buildTestApp(database, { config: { oauth: oauthConfig({ google: impostor }) } });
    try {
      const res = await call(mismatched.app, 'GET', '/auth/oauth/google?mode=json');
      expect(res.statusCode).toBe(502);
      expect(res.json().error.code).toBe('OAUTH_PROVIDER_UNAVAILABLE');
      // The same provider naming itself correctly works: the issuer was the only difference.
      impostor.server.issuer.url = impostor.issuer;
      expect((await call(mismatched.app, 'GET', '/auth/oauth/google?mode=json')).statusCode).toBe(200);
    } finally {
      await mismatched.close();
      await impostor.close();
    }
  });
});
