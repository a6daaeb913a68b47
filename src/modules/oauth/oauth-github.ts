import type { Dispatcher } from 'undici';
import { GITHUB_SCOPE, pkceChallenge, withParams } from './oauth-fns.js';
import { asObject, callProvider, readTokenAnswer, unavailable } from './oauth-http.js';
import type { LoginAttempt, ProviderClient, ProviderIdentity } from './oauth-types.js';

const LABEL = 'GitHub';

/** The subject of a `/user` answer: its numeric id as text (logins can change, ids do not). */
function subjectOf(json: unknown): string | null {
  const id = asObject(json)?.id;
  if (typeof id === 'number' && Number.isSafeInteger(id)) return String(id);
  if (typeof id === 'string' && /^\d{1,20}$/.test(id)) return id;
  return null;
}

/** The primary address of a `/user/emails` answer; `/user`'s public `email` is never used. */
function primaryEmail(json: unknown): { email: string | null; verified: boolean } | null {
  if (!Array.isArray(json)) return null;
  const primary = json.map(asObject).find((entry) => entry?.primary === true);
  if (!primary || typeof primary.email !== 'string' || primary.email === '') return { email: null, verified: false };
  return { email: primary.email, verified: primary.verified === true };
}

/**
 * GitHub login over the OAuth 2.0 web flow (with PKCE, which GitHub accepts): `{base}/login/oauth/*`
 * for the code, `{api}/user` and `{api}/user/emails` for the identity.
 */
export function createGithubClient(deps: {
  clientId: string;
  clientSecret: string;
  baseUrl: string;
  apiUrl: string;
  dispatcher: Dispatcher;
}): ProviderClient {
  async function api(path: string, accessToken: string): Promise<unknown> {
    const answer = await callProvider(deps.dispatcher, LABEL, `${deps.apiUrl}${path}`, {
      method: 'GET',
      headers: {
        accept: 'application/vnd.github+json',
        authorization: `Bearer ${accessToken}`,
        'x-github-api-version': '2022-11-28',
      },
    });
    if (answer.status < 200 || answer.status > 299 || answer.json === undefined) {
      throw unavailable(LABEL, `${path} answered ${answer.status}`);
    }
    return answer.json;
  }

  return {
    name: 'github',
    async authorizationUrl(attempt: LoginAttempt): Promise<string> {
      return withParams(`${deps.baseUrl}/login/oauth/authorize`, {
        response_type: 'code',
        client_id: deps.clientId,
        redirect_uri: attempt.redirectUri,
        scope: GITHUB_SCOPE,
        state: attempt.state,
        code_challenge: pkceChallenge(attempt.codeVerifier),
        code_challenge_method: 'S256',
      });
    },

    async identify(code: string, attempt: LoginAttempt): Promise<ProviderIdentity> {
      const answer = await callProvider(deps.dispatcher, LABEL, `${deps.baseUrl}/login/oauth/access_token`, {
        method: 'POST',
        headers: { accept: 'application/json' },
        form: {
          client_id: deps.clientId,
          client_secret: deps.clientSecret,
          code,
          redirect_uri: attempt.redirectUri,
          code_verifier: attempt.codeVerifier,
        },
      });
      const token = readTokenAnswer(LABEL, answer).access_token;
      if (typeof token !== 'string' || token === '') throw unavailable(LABEL, 'no access token in the answer');
      const subject = subjectOf(await api('/user', token));
      if (subject === null) throw unavailable(LABEL, 'unreadable /user answer');
      const primary = primaryEmail(await api('/user/emails?per_page=100', token));
      if (primary === null) throw unavailable(LABEL, 'unreadable /user/emails answer');
      return { subject, email: primary.email, emailVerified: primary.verified };
    },
  };
}
