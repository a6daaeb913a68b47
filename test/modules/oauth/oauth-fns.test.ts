import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config.js';
import {
  callbackOutcome,
  isEmailVerifiedClaim,
  oauthErrorCode,
  pkceChallenge,
  randomToken,
  redirectUriFor,
  wantsJson,
  withParams,
} from '../../../src/modules/oauth/oauth-fns.js';

describe('OAuth pure functions', () => {
  it('computes the S256 challenge of RFC 7636 appendix B', () => {
    expect(pkceChallenge('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk')).toBe(
      'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    );
  });

  it('makes state, nonce and verifier of 43 unreserved characters, all different', () => {
    const seen = new Set(Array.from({ length: 200 }, randomToken));
    expect(seen.size).toBe(200);
    for (const token of seen) expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it.each([
    [undefined, undefined, false],
    [undefined, '*/*', false],
    [undefined, 'text/html,*/*;q=0.8', false],
    [undefined, 'application/json', true],
    [undefined, 'text/html, application/json;q=0.5', true],
    [undefined, 'application/json;q=0', false],
    [undefined, 'application/json; q=0.0', false],
    [undefined, 'application/*', false],
    ['json', undefined, true],
    ['redirect', 'application/json', false],
  ] as const)('mode %s with Accept %s wants JSON: %s', (mode, accept, expected) => {
    expect(wantsJson(mode, accept)).toBe(expected);
  });

  it('fills in the redirect URL, or falls back to the API callback', () => {
    expect(redirectUriFor('github', 'https://app.test/dashboard/oauth/{provider}', 'https://api.test')).toBe(
      'https://app.test/dashboard/oauth/github',
    );
    expect(redirectUriFor('google', undefined, 'https://api.test')).toBe('https://api.test/auth/oauth/google/callback');
  });

  it('keeps the query an endpoint already has', () => {
    expect(withParams('https://idp.test/auth?tenant=a', { state: 's t' })).toBe(
      'https://idp.test/auth?tenant=a&state=s+t',
    );
  });

  it('reads claims and outcomes strictly', () => {
    expect([true, 'true', 'TRUE', 1, false, 'false', undefined].map(isEmailVerifiedClaim)).toEqual([
      true,
      true,
      false,
      false,
      false,
      false,
      false,
    ]);
    expect(oauthErrorCode('invalid_grant')).toBe('invalid_grant');
    expect(oauthErrorCode('a\nb')).toBeNull();
    expect(oauthErrorCode(42)).toBeNull();
    expect(callbackOutcome({ code: 'c' })).toEqual({ code: 'c' });
    expect(callbackOutcome({ error: 'e' })).toEqual({ error: 'e' });
    expect(callbackOutcome({})).toBeNull();
    expect(callbackOutcome({ code: 'c', error: 'e' })).toBeNull();
  });
});

describe('OAuth and CORS configuration', () => {
  it('is off by default, with the public endpoints of both providers', () => {
    const config = loadConfig({});
    expect(config.oauth).toEqual({
      google: undefined,
      github: undefined,
      redirectUrl: undefined,
      stateTtlSeconds: 600,
    });
    expect(config.corsOrigins).toEqual([]);
  });

  it('turns a provider on with both halves of its client and drops trailing slashes', () => {
    const config = loadConfig({
      TASKHOOK_OAUTH_GOOGLE_CLIENT_ID: 'gid',
      TASKHOOK_OAUTH_GOOGLE_CLIENT_SECRET: 'gsecret',
      TASKHOOK_OAUTH_GITHUB_CLIENT_ID: 'hid',
      TASKHOOK_OAUTH_GITHUB_CLIENT_SECRET: 'hsecret',
      TASKHOOK_OAUTH_GITHUB_BASE_URL: 'https://ghe.example.test/',
      TASKHOOK_OAUTH_GITHUB_API_URL: 'https://ghe.example.test/api/v3/',
      TASKHOOK_OAUTH_REDIRECT_URL: 'https://app.test/dashboard/oauth/{provider}',
      TASKHOOK_OAUTH_STATE_TTL_SECONDS: '120',
      TASKHOOK_CORS_ORIGINS: 'https://app.test, http://localhost:5173/',
    });
    expect(config.oauth).toEqual({
      google: { clientId: 'gid', clientSecret: 'gsecret', issuer: 'https://accounts.google.com' },
      github: {
        clientId: 'hid',
        clientSecret: 'hsecret',
        baseUrl: 'https://ghe.example.test',
        apiUrl: 'https://ghe.example.test/api/v3',
      },
      redirectUrl: 'https://app.test/dashboard/oauth/{provider}',
      stateTtlSeconds: 120,
    });
    expect(config.corsOrigins).toEqual(['https://app.test', 'http://localhost:5173']);
  });

  it.each([
    [{ TASKHOOK_OAUTH_GOOGLE_CLIENT_ID: 'x' }, 'TASKHOOK_OAUTH_GOOGLE_CLIENT_SECRET'],
    [{ TASKHOOK_OAUTH_GITHUB_CLIENT_SECRET: 'x' }, 'TASKHOOK_OAUTH_GITHUB_CLIENT_ID'],
    [{ TASKHOOK_OAUTH_GOOGLE_ISSUER: 'accounts.google.com' }, 'TASKHOOK_OAUTH_GOOGLE_ISSUER'],
    [{ TASKHOOK_OAUTH_GITHUB_API_URL: 'ftp://x.test' }, 'TASKHOOK_OAUTH_GITHUB_API_URL'],
    [{ TASKHOOK_OAUTH_REDIRECT_URL: '/dashboard/oauth' }, 'TASKHOOK_OAUTH_REDIRECT_URL'],
    [{ TASKHOOK_OAUTH_STATE_TTL_SECONDS: '0' }, 'TASKHOOK_OAUTH_STATE_TTL_SECONDS'],
    [{ TASKHOOK_OAUTH_STATE_TTL_SECONDS: '3601' }, 'TASKHOOK_OAUTH_STATE_TTL_SECONDS'],
    [{ TASKHOOK_CORS_ORIGINS: 'https://app.test/path' }, 'TASKHOOK_CORS_ORIGINS'],
  ])('refuses %j naming %s', (env, name) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(name);
  });
});
