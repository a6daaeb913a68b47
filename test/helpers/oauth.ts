import type { LightMyRequestResponse } from 'fastify';
import type { Config } from '../../src/config.js';
import type { Clock } from '../../src/lib/time.js';
import { buildTestApp, call, type TestApp } from './app.js';
import type { TestDatabase } from './databases.js';
import type { GithubLike } from './github-like.js';
import type { GoogleLike } from './google-like.js';

export const GOOGLE_CLIENT_ID = 'taskhook-test.apps.example';
export const GOOGLE_CLIENT_SECRET = 'google-client-secret';

/** The OAuth configuration for the given local providers (a provider left out is not configured). */
export function oauthConfig(idps: { google?: GoogleLike; github?: GithubLike }, extra: Partial<Config['oauth']> = {}) {
  const { google, github } = idps;
  return {
    google: google && { clientId: GOOGLE_CLIENT_ID, clientSecret: GOOGLE_CLIENT_SECRET, issuer: google.issuer },
    github: github && {
      clientId: github.clientId,
      clientSecret: github.clientSecret,
      baseUrl: github.baseUrl,
      apiUrl: github.apiUrl,
    },
    stateTtlSeconds: 600,
    ...extra,
  } satisfies Config['oauth'];
}

/** The production app with OAuth login against local providers. */
export function buildOAuthApp(
  db: TestDatabase,
  idps: { google?: GoogleLike; github?: GithubLike },
  opts: { clock?: Clock; oauth?: Partial<Config['oauth']> } = {},
): Promise<TestApp> {
  return buildTestApp(db, { clock: opts.clock, config: { oauth: oauthConfig(idps, opts.oauth) } });
}

/** Step 1 as a single-page app does it: the authorization URL and the state. */
export async function startLogin(t: TestApp, provider: string): Promise<{ url: URL; state: string }> {
  const res = await call(t.app, 'GET', `/auth/oauth/${provider}?mode=json`);
  if (res.statusCode !== 200) throw new Error(`step 1 failed: ${res.statusCode} ${res.body}`);
  return { url: new URL(res.json().authorization_url), state: res.json().state };
}

/** The user consents at the provider, which redirects back: the URL it sends the browser to. */
export async function consentAt(url: URL): Promise<URL> {
  const res = await fetch(url, { redirect: 'manual' });
  const location = res.headers.get('location');
  if (res.status !== 302 || !location) throw new Error(`provider did not redirect: ${res.status} ${await res.text()}`);
  return new URL(location);
}

/** The provider's redirect arriving at the API's GET callback. */
export function arriveAt(t: TestApp, redirected: URL, headers: Record<string, string> = {}) {
  return call(t.app, 'GET', `${redirected.pathname}${redirected.search}`, { headers });
}

/** The whole login as a browser does it: 302 to the provider, consent, redirect back to the GET callback. */
export async function browserLogin(t: TestApp, provider: string): Promise<LightMyRequestResponse> {
  const first = await call(t.app, 'GET', `/auth/oauth/${provider}`, {
    headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' },
  });
  if (first.statusCode !== 302) throw new Error(`step 1 did not redirect: ${first.statusCode} ${first.body}`);
  return arriveAt(t, await consentAt(new URL(String(first.headers.location))));
}

/** Step 2 as a front-end forwards it (POST). */
export function postCallback(t: TestApp, provider: string, body: unknown) {
  return call(t.app, 'POST', `/auth/oauth/${provider}/callback`, { body });
}

/** A login from step 1 to a front-end's POST of the code. */
export async function spaLogin(t: TestApp, provider: string): Promise<LightMyRequestResponse> {
  const { url, state } = await startLogin(t, provider);
  const back = await consentAt(url);
  return postCallback(t, provider, { code: back.searchParams.get('code'), state });
}
