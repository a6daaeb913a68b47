import { createHash, randomBytes } from 'node:crypto';

/** The identity providers there are; nothing else is a provider. */
export const PROVIDERS = ['google', 'github'] as const;
export type ProviderName = (typeof PROVIDERS)[number];

export const PROVIDER_LABELS: Record<ProviderName, string> = { google: 'Google', github: 'GitHub' };

export const GOOGLE_SCOPE = 'openid email profile';
export const GITHUB_SCOPE = 'read:user user:email';

/** True for the names of providers that exist (configured or not). */
export function isProviderName(name: string): name is ProviderName {
  return (PROVIDERS as readonly string[]).includes(name);
}

/**
 * A `state`, `nonce` or PKCE `code_verifier`: 32 bytes (256 bits) from the CSPRNG, written as 43
 * characters of base64url, which fits both the 22–128 characters of state and nonce and the 43–128
 * unreserved characters RFC 7636 asks of a verifier.
 */
export function randomToken(): string {
  return randomBytes(32).toString('base64url');
}

/** The S256 PKCE challenge of a verifier: BASE64URL(SHA-256(verifier)) without padding. */
export function pkceChallenge(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}

/**
 * Whether step 1 answers with JSON: `mode` decides when given; otherwise an `Accept` header that
 * names `application/json` with q > 0 (a wildcard range such as a browser sends does not count).
 */
export function wantsJson(mode: 'json' | 'redirect' | undefined, accept: string | undefined): boolean {
  if (mode) return mode === 'json';
  if (!accept) return false;
  return accept.split(',').some((range) => {
    const [type, ...params] = range.split(';').map((p) => p.trim().toLowerCase());
    if (type !== 'application/json') return false;
    const q = params.find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

/** The `redirect_uri` of a provider: the configured one with `{provider}` filled in, or the API's own callback. */
export function redirectUriFor(provider: ProviderName, configured: string | undefined, publicUrl: string): string {
  if (configured) return configured.replaceAll('{provider}', provider);
  return `${publicUrl}/auth/oauth/${provider}/callback`;
}

/** `url` with the parameters added, any query it already has kept. */
export function withParams(url: string, params: Record<string, string>): string {
  const out = new URL(url);
  for (const [name, value] of Object.entries(params)) out.searchParams.set(name, value);
  return out.toString();
}

/** OpenID's `email_verified`: a boolean, though some providers send the string "true". */
export function isEmailVerifiedClaim(value: unknown): boolean {
  return value === true || value === 'true';
}

/** An OAuth error code as a provider sends it: printable ASCII, bounded, else not an error code at all. */
export function oauthErrorCode(value: unknown): string | null {
  return typeof value === 'string' && /^[\x20-\x7e]{1,256}$/.test(value) ? value : null;
}

/**
 * The two ways step 2 may be called (the provider's redirect, or the front-end forwarding it):
 * exactly one of `code` and `error`; null when neither or both are given.
 */
export function callbackOutcome(input: { code?: string; error?: string }): { code: string } | { error: string } | null {
  if (input.code !== undefined && input.error === undefined) return { code: input.code };
  if (input.error !== undefined && input.code === undefined) return { error: input.error };
  return null;
}
