import { randomUUID } from 'node:crypto';
import { type JWTPayload, SignJWT, UnsecuredJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, manualClock, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser, type TestUser } from '../../helpers/factories.js';

const INVALID = { error: 'Invalid or expired token' };
const DAY_SECONDS = 24 * 60 * 60;

interface Claims extends JWTPayload {
  tv?: unknown;
}

/** The claims the app issues for `user` now (sub, iat, exp, iss, aud, tv). */
function validClaims(user: TestUser, nowMs = Date.now()): Claims {
  const iat = Math.floor(nowMs / 1000);
  return { sub: user.uuid, iat, exp: iat + DAY_SECONDS, iss: 'taskhook', aud: 'taskhook-api', tv: 0 };
}

function sign(claims: Claims, secret: string, alg = 'HS256'): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg, typ: 'JWT' }).sign(new TextEncoder().encode(secret));
}

describe.each(DATABASES)('session JWTs on $name', (database) => {
  let t: TestApp;
  let secret: string;

  const agentList = (token: string) => call(t.app, 'GET', '/agent/list', { token });

  beforeAll(async () => {
    t = await buildTestApp(database);
    secret = t.runtime.secrets.jwtSecret;
  });
  afterAll(() => t.close());

  it('accepts a hand-made token with the claims the app issues', async () => {
    const user = await createUser(t);
    const res = await agentList(await sign(validClaims(user), secret));
    expect({ status: res.statusCode, body: res.json() }).toMatchObject({ status: 200, body: { agents: [] } });
    const keys = await call(t.app, 'GET', '/auth/platform_keys', { token: await sign(validClaims(user), secret) });
    expect(keys.statusCode).toBe(200);
  });

  it('refuses tokens that are forged, foreign or carry the wrong claims', async () => {
    const user = await createUser(t);
    const claims = validClaims(user);
    const { exp: _exp, ...withoutExp } = claims;
    const { tv: _tv, ...withoutTv } = claims;
    const { sub: _sub, ...withoutSub } = claims;
    const forged: Record<string, string> = {
      'alg none': new UnsecuredJWT(claims).encode(),
      'another secret': await sign(claims, `another-secret-${randomUUID()}`),
      'wrong aud': await sign({ ...claims, aud: 'someone-else' }, secret),
      'no aud': await sign({ ...claims, aud: undefined }, secret),
      'wrong iss': await sign({ ...claims, iss: 'not-taskhook' }, secret),
      HS512: await sign(claims, secret, 'HS512'),
      HS384: await sign(claims, secret, 'HS384'),
      'nonexistent sub': await sign({ ...claims, sub: randomUUID() }, secret),
      'no sub': await sign(withoutSub, secret),
      'no exp': await sign(withoutExp, secret),
      'exp in the past': await sign({ ...claims, exp: (claims.iat ?? 0) - 1 }, secret),
      'no tv': await sign(withoutTv, secret),
      'tv as a string': await sign({ ...claims, tv: '0' }, secret),
      'tv ahead of the account': await sign({ ...claims, tv: 1 }, secret),
      'tampered payload': tamper(await sign(claims, secret)),
    };
    for (const [name, token] of Object.entries(forged)) {
      const res = await agentList(token);
      expect({ name, status: res.statusCode, body: res.json() }).toEqual({ name, status: 401, body: INVALID });
    }
    // The account itself is fine: the same claims, properly signed, still work.
    expect((await agentList(await sign(claims, secret))).statusCode).toBe(200);
  });

  it('refuses a token once its 24 hours are over, while platform keys keep working', async () => {
    const clock = manualClock();
    const timed = await buildTestApp(database, { clock });
    try {
      const user = await createUser(timed);
      const list = (headers: Record<string, string>) => call(timed.app, 'GET', '/agent/list', { headers });
      expect((await list({ authorization: `Bearer ${user.token}` })).statusCode).toBe(200);
      clock.advance(DAY_SECONDS * 1000 - 1000);
      expect((await list({ authorization: `Bearer ${user.token}` })).statusCode).toBe(200);
      clock.advance(2000);
      const expired = await list({ authorization: `Bearer ${user.token}` });
      expect({ status: expired.statusCode, body: expired.json() }).toEqual({ status: 401, body: INVALID });
      expect((await list({ 'x-api-key': user.key })).statusCode).toBe(200);
      const relogin = await call(timed.app, 'POST', '/auth/login', {
        body: { email: user.email, password: user.password },
      });
      expect((await list({ authorization: `Bearer ${relogin.json().token}` })).statusCode).toBe(200);
    } finally {
      await timed.close();
    }
  });

  it('refuses a hand-made token that outlived its exp on the app clock', async () => {
    const clock = manualClock();
    const timed = await buildTestApp(database, { clock });
    try {
      const user = await createUser(timed);
      const token = await sign(validClaims(user, clock.now()), timed.runtime.secrets.jwtSecret);
      clock.advance((DAY_SECONDS + 1) * 1000);
      const res = await call(timed.app, 'GET', '/agent/list', { token });
      expect({ status: res.statusCode, body: res.json() }).toEqual({ status: 401, body: INVALID });
    } finally {
      await timed.close();
    }
  });
});

/** The token with a later `exp` in its payload and the original signature. */
function tamper(token: string): string {
  const [header, payload, signature] = token.split('.');
  const claims = JSON.parse(Buffer.from(payload ?? '', 'base64url').toString());
  const changed = Buffer.from(JSON.stringify({ ...claims, exp: claims.exp + DAY_SECONDS })).toString('base64url');
  return [header, changed, signature].join('.');
}
