import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface GithubEmail {
  email: string;
  primary: boolean;
  verified: boolean;
  visibility: 'public' | 'private' | null;
}

export interface GithubAccount {
  id: number;
  login: string;
  /** The public address of /user: often null, and never to be used for login. */
  email: string | null;
  emails: GithubEmail[];
}

/**
 * A GitHub-shaped OAuth server on 127.0.0.1, strict where GitHub is: client credentials, single-use
 * codes bound to their redirect_uri, PKCE S256, refusals as 200 with an `error` field, a form-encoded
 * answer unless JSON is asked for, and an API (under /api/v3, like GitHub Enterprise Server) that
 * wants a bearer token and a User-Agent.
 */
export interface GithubLike {
  baseUrl: string;
  apiUrl: string;
  clientId: string;
  clientSecret: string;
  /** The account the next authorization signs in. */
  account: GithubAccount;
  /** Status codes to answer instead, per endpoint; `token: 'hang'` never answers the exchange. */
  fail: { token?: number | 'hang'; user?: number; emails?: number };
  requests: string[];
  close(): Promise<void>;
}

interface Grant {
  clientId: string;
  redirectUri: string;
  challenge: string | null;
  account: GithubAccount;
}

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  let text = '';
  for await (const chunk of req) text += chunk;
  return new URLSearchParams(text);
}

/** Starts the server with a client of its own. */
export async function startGithubLike(): Promise<GithubLike> {
  const grants = new Map<string, Grant>();
  const tokens = new Map<string, GithubAccount>();
  const state = {
    baseUrl: '',
    apiUrl: '',
    clientId: `Iv1.${randomUUID().slice(0, 8)}`,
    clientSecret: randomUUID(),
    account: { id: 1, login: 'octocat', email: null, emails: [] } as GithubAccount,
    fail: {} as GithubLike['fail'],
    requests: [] as string[],
  };

  function authorize(url: URL, res: ServerResponse) {
    const q = url.searchParams;
    const redirect = new URL(q.get('redirect_uri') ?? '');
    const code = randomUUID().replaceAll('-', '');
    const challenge = q.get('code_challenge');
    if (challenge && q.get('code_challenge_method') !== 'S256') return json(res, 400, { error: 'invalid_request' });
    grants.set(code, {
      clientId: q.get('client_id') ?? '',
      redirectUri: redirect.toString(),
      challenge,
      account: structuredClone(state.account),
    });
    redirect.searchParams.set('code', code);
    redirect.searchParams.set('state', q.get('state') ?? '');
    res.writeHead(302, { location: redirect.toString() });
    res.end();
  }

  async function accessToken(req: IncomingMessage, res: ServerResponse) {
    const form = await readForm(req);
    if (state.fail.token === 'hang') return;
    if (state.fail.token) return json(res, state.fail.token, { message: 'Server Error' });
    const grant = grants.get(form.get('code') ?? '');
    grants.delete(form.get('code') ?? '');
    const verifier = form.get('code_verifier');
    let error: string | null = null;
    if (form.get('client_id') !== state.clientId || form.get('client_secret') !== state.clientSecret) {
      error = 'incorrect_client_credentials';
    } else if (!grant || grant.clientId !== state.clientId) error = 'bad_verification_code';
    else if (grant.redirectUri !== form.get('redirect_uri')) error = 'redirect_uri_mismatch';
    else if (
      grant.challenge &&
      createHash('sha256')
        .update(verifier ?? '')
        .digest('base64url') !== grant.challenge
    ) {
      error = 'bad_verification_code';
    }
    const body: Record<string, string> = error
      ? { error, error_description: 'The code passed is incorrect or expired.' }
      : {
          access_token: `gho_${randomUUID().replaceAll('-', '')}`,
          token_type: 'bearer',
          scope: 'read:user,user:email',
        };
    if (!error && grant) tokens.set(body.access_token as string, grant.account);
    if (req.headers.accept?.includes('application/json')) return json(res, 200, body);
    res.writeHead(200, { 'content-type': 'application/x-www-form-urlencoded' });
    res.end(new URLSearchParams(body).toString());
  }

  function api(path: string, req: IncomingMessage, res: ServerResponse) {
    if (!req.headers['user-agent']) return json(res, 403, { message: 'Request forbidden: missing User-Agent' });
    const account = tokens.get(req.headers.authorization?.replace(/^Bearer /, '') ?? '');
    if (!account) return json(res, 401, { message: 'Bad credentials' });
    if (path === '/user') {
      if (state.fail.user) return json(res, state.fail.user, { message: 'Server Error' });
      return json(res, 200, { id: account.id, login: account.login, email: account.email, name: null });
    }
    if (state.fail.emails) return json(res, state.fail.emails, { message: 'Server Error' });
    return json(res, 200, account.emails);
  }

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    state.requests.push(`${req.method} ${url.pathname}`);
    if (req.method === 'GET' && url.pathname === '/login/oauth/authorize') return authorize(url, res);
    if (req.method === 'POST' && url.pathname === '/login/oauth/access_token') {
      accessToken(req, res).catch(() => json(res, 500, {}));
      return;
    }
    if (req.method === 'GET' && (url.pathname === '/api/v3/user' || url.pathname === '/api/v3/user/emails')) {
      return api(url.pathname.slice('/api/v3'.length), req, res);
    }
    json(res, 404, { message: 'Not Found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  state.baseUrl = `http://127.0.0.1:${port}`;
  state.apiUrl = `${state.baseUrl}/api/v3`;
  return Object.assign(state, {
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}
