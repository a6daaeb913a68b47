import { Type } from '@sinclair/typebox';
import { HTTP_URL, setting, stripSlashes } from './settings-fns.js';

/**
 * Log in with Google or GitHub: the providers' clients, addresses and the redirect.
 * Spread into `SETTINGS` (settings.ts) at their place in the README's order.
 */
export const OAUTH_SETTINGS = {
  oauthGoogleClientId: setting({
    env: 'TASKHOOK_OAUTH_GOOGLE_CLIENT_ID',
    schema: Type.Optional(Type.String()),
    doc: 'Google login: the OAuth client id (with its secret, turns the provider on).',
  }),
  oauthGoogleClientSecret: setting({
    env: 'TASKHOOK_OAUTH_GOOGLE_CLIENT_SECRET',
    schema: Type.Optional(Type.String()),
    doc: 'Google login: the OAuth client secret.',
  }),
  oauthGoogleIssuer: setting({
    env: 'TASKHOOK_OAUTH_GOOGLE_ISSUER',
    schema: Type.String({ pattern: HTTP_URL }),
    default: 'https://accounts.google.com',
    normalize: stripSlashes,
    doc: 'The OpenID issuer whose discovery document and keys Google login uses (any compatible provider).',
  }),
  oauthGithubClientId: setting({
    env: 'TASKHOOK_OAUTH_GITHUB_CLIENT_ID',
    schema: Type.Optional(Type.String()),
    doc: 'GitHub login: the OAuth app client id (with its secret, turns the provider on).',
  }),
  oauthGithubClientSecret: setting({
    env: 'TASKHOOK_OAUTH_GITHUB_CLIENT_SECRET',
    schema: Type.Optional(Type.String()),
    doc: 'GitHub login: the OAuth app client secret.',
  }),
  oauthGithubBaseUrl: setting({
    env: 'TASKHOOK_OAUTH_GITHUB_BASE_URL',
    schema: Type.String({ pattern: HTTP_URL }),
    default: 'https://github.com',
    normalize: stripSlashes,
    doc: "GitHub's web address (GitHub Enterprise: your server).",
  }),
  oauthGithubApiUrl: setting({
    env: 'TASKHOOK_OAUTH_GITHUB_API_URL',
    schema: Type.String({ pattern: HTTP_URL }),
    default: 'https://api.github.com',
    normalize: stripSlashes,
    doc: "GitHub's API address (GitHub Enterprise: `https://host/api/v3`).",
  }),
  oauthRedirectUrl: setting({
    env: 'TASKHOOK_OAUTH_REDIRECT_URL',
    schema: Type.Optional(Type.String({ pattern: HTTP_URL })),
    normalize: stripSlashes,
    defaultText: '`$TASKHOOK_PUBLIC_URL/auth/oauth/{provider}/callback`',
    doc: 'The `redirect_uri` given to both providers; `{provider}` becomes `google` or `github`.',
  }),
  oauthStateTtlSeconds: setting({
    env: 'TASKHOOK_OAUTH_STATE_TTL_SECONDS',
    schema: Type.Integer({ minimum: 1, maximum: 3600 }),
    default: 600,
    doc: 'How long a started login may take to finish.',
  }),
};
