import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser } from '../../helpers/factories.js';
import { expectFlatError, MCP_OAUTH_ROUTES } from '../../helpers/routes.js';
import { freePort } from '../../helpers/server-process.js';
import { captureLog, createWorkspace, join } from '../workspaces/workspace-helpers.js';
import { getManual, pkce, postForm, queryOf } from './oauth-helpers.js';

const REDIRECT = 'https://client.example/callback';

describe.each(DATABASES)('MCP OAuth refuses bad input with its RFC error on $name', (database) => {
  let t: TestApp;
  let baseUrl: string;
  let clientId: string;
  let logged: Array<Record<string, unknown>>;
  let secretClient: { client_id: string; client_secret: string };

  beforeAll(async () => {
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    t = await buildTestApp(database, { config: { publicUrl: baseUrl } });
    logged = captureLog(t);
    await t.app.listen({ port, host: '127.0.0.1' });
    clientId = (await registerClient({ token_endpoint_auth_method: 'none' })).client_id;
    secretClient = await registerClient({ token_endpoint_auth_method: 'client_secret_basic' });
  });
  afterAll(() => t.close());

  async function registerClient(body: Record<string, unknown>) {
    const res = await fetch(`${baseUrl}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        redirect_uris: [REDIRECT],
        grant_types: ['authorization_code', 'refresh_token'],
        ...body,
      }),
    });
    expect(res.status).toBe(201);
    return res.json() as Promise<{ client_id: string; client_secret: string }>;
  }

  function authorizeUrl(params: Record<string, string | undefined>) {
    const url = new URL(`${baseUrl}/oauth/authorize`);
    const all = {
      response_type: 'code',
      client_id: clientId,
      redirect_uri: REDIRECT,
      code_challenge: pkce().challenge,
      code_challenge_method: 'S256',
      state: 's1',
      ...params,
    };
    for (const [k, v] of Object.entries(all)) if (v !== undefined) url.searchParams.set(k, v);
    return url.href;
  }

  /** A code of the public client, approved by a new user. */
  async function codeFor(verifierChallenge = pkce()) {
    const user = await createUser(t);
    const to = await getManual(authorizeUrl({ code_challenge: verifierChallenge.challenge }));
    const id = queryOf(to.location).request_id;
    const approved = await call(t.app, 'POST', `/oauth/authorization_requests/${id}/approve`, {
      token: user.token,
      body: { workspace_uuid: user.uuid, role: 'member' },
    });
    return { code: queryOf(approved.json().redirect_to).code ?? '', verifier: verifierChallenge.verifier, user, id };
  }

  it('authorize: PKCE missing or plain, another resource, bad response_type are redirects with state and iss', async () => {
    for (const [params, error] of [
      [{ code_challenge_method: 'plain' }, 'invalid_request'],
      [{ code_challenge_method: undefined }, 'invalid_request'],
      [{ code_challenge: undefined }, 'invalid_request'],
      [{ resource: 'https://other.example/mcp' }, 'invalid_target'],
      [{ response_type: 'token' }, 'unsupported_response_type'],
      [{ state: 'x'.repeat(2049) }, 'invalid_request'],
    ] as const) {
      const res = await getManual(authorizeUrl(params));
      expect(res.status).toBe(302);
      expect(res.location?.startsWith(REDIRECT)).toBe(true);
      expect(queryOf(res.location)).toMatchObject({ error, iss: baseUrl });
      if (!('state' in params)) expect(queryOf(res.location).state).toBe('s1');
    }
    const sameResource = await getManual(
      authorizeUrl({ resource: `${baseUrl.toUpperCase().replace('HTTP', 'http')}/mcp/` }),
    );
    expect(queryOf(sameResource.location).request_id).toBeTruthy();
  });

  it('authorize: an unregistered redirect_uri or unknown client is a 400 JSON answer, never a redirect', async () => {
    const redirect = await getManual(authorizeUrl({ redirect_uri: 'https://evil.example/cb' }));
    expect(redirect.status).toBe(400);
    expect(JSON.parse(redirect.body)).toMatchObject({ error: 'invalid_request' });
    const unknown = await getManual(authorizeUrl({ client_id: 'mcpc_nobody' }));
    expect(unknown.status).toBe(400);
    expect(JSON.parse(unknown.body)).toMatchObject({ error: 'invalid_client' });
    const missing = await getManual(authorizeUrl({ client_id: undefined }));
    expect(JSON.parse(missing.body)).toMatchObject({ error: 'invalid_client' });
  });

  it('token: wrong verifier, other redirect_uri, another client’s code, a used code are invalid_grant; another resource invalid_target', async () => {
    const exchange = (code: string, verifier: string, extra: Record<string, string> = {}) =>
      postForm(baseUrl, '/oauth/token', {
        grant_type: 'authorization_code',
        code,
        redirect_uri: REDIRECT,
        code_verifier: verifier,
        client_id: clientId,
        ...extra,
      });
    const wrongVerifier = await codeFor();
    const res1 = await exchange(wrongVerifier.code, pkce().verifier);
    expect(res1.status).toBe(400);
    expect(await res1.json()).toMatchObject({ error: 'invalid_grant' });
    // The failed exchange consumed it and left no grant.
    expect((await exchange(wrongVerifier.code, wrongVerifier.verifier)).status).toBe(400);
    const grants = await call(t.app, 'GET', '/auth/mcp_grants', { token: wrongVerifier.user.token });
    expect(grants.json().grants).toEqual([]);

    const otherRedirect = await codeFor();
    const res2 = await exchange(otherRedirect.code, otherRedirect.verifier, { redirect_uri: `${REDIRECT}2` });
    expect(await res2.json()).toMatchObject({ error: 'invalid_grant' });

    const otherClient = await codeFor();
    const basic = `Basic ${Buffer.from(`${secretClient.client_id}:${secretClient.client_secret}`).toString('base64')}`;
    const res3 = await postForm(
      baseUrl,
      '/oauth/token',
      {
        grant_type: 'authorization_code',
        code: otherClient.code,
        redirect_uri: REDIRECT,
        code_verifier: otherClient.verifier,
      },
      { authorization: basic },
    );
    expect(await res3.json()).toMatchObject({ error: 'invalid_grant' });

    const target = await codeFor();
    const res4 = await exchange(target.code, target.verifier, { resource: 'https://other.example/mcp' });
    expect(res4.status).toBe(400);
    expect(await res4.json()).toMatchObject({ error: 'invalid_target' });
  });

  it('token and revoke: unknown client or wrong secret is 401 invalid_client; bad forms are invalid_request', async () => {
    const unknown = await postForm(baseUrl, '/oauth/token', {
      grant_type: 'refresh_token',
      refresh_token: 'x',
      client_id: 'nobody',
    });
    expect(unknown.status).toBe(401);
    expect(await unknown.json()).toMatchObject({ error: 'invalid_client' });
    const wrong = `Basic ${Buffer.from(`${secretClient.client_id}:not-the-secret`).toString('base64')}`;
    const wrongSecret = await postForm(
      baseUrl,
      '/oauth/token',
      { grant_type: 'refresh_token', refresh_token: 'x' },
      { authorization: wrong },
    );
    expect(wrongSecret.status).toBe(401);
    expect(wrongSecret.headers.get('www-authenticate')).toBe('Basic realm="taskhook"');
    const revoke = await postForm(baseUrl, '/oauth/revoke', { token: 'x' }, { authorization: wrong });
    expect(revoke.status).toBe(401);
    // A public client may not send a secret it does not have (another method than registered).
    const method = await postForm(baseUrl, '/oauth/token', {
      grant_type: 'refresh_token',
      refresh_token: 'x',
      client_id: clientId,
      client_secret: 's',
    });
    expect(method.status).toBe(401);

    const json = await fetch(`${baseUrl}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(json.status).toBe(400);
    expect(await json.json()).toMatchObject({ error: 'invalid_request' });
    const grantType = await postForm(baseUrl, '/oauth/token', { grant_type: 'password', client_id: clientId });
    expect(await grantType.json()).toMatchObject({ error: 'unsupported_grant_type' });
    const twice = await fetch(`${baseUrl}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `client_id=${clientId}&grant_type=refresh_token&refresh_token=a&refresh_token=b`,
    });
    expect(await twice.json()).toMatchObject({ error: 'invalid_request' });
    const refresh = await postForm(baseUrl, '/oauth/token', {
      grant_type: 'refresh_token',
      refresh_token: 'mcp_rt_unknown',
      client_id: clientId,
    });
    expect(await refresh.json()).toMatchObject({ error: 'invalid_grant' });
  });

  it('registration refuses bad metadata; consent refuses bad bodies, roles above the user’s, keys and second answers', async () => {
    const bad = async (body: unknown, error: string, type = 'application/json') => {
      const res = await fetch(`${baseUrl}/oauth/register`, {
        method: 'POST',
        headers: { 'content-type': type },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ error });
    };
    await bad({ redirect_uris: ['http://example.com/cb'] }, 'invalid_redirect_uri');
    await bad({ redirect_uris: [] }, 'invalid_redirect_uri');
    await bad({ redirect_uris: [REDIRECT], token_endpoint_auth_method: 'private_key_jwt' }, 'invalid_client_metadata');
    await bad({ redirect_uris: [REDIRECT], grant_types: ['refresh_token'] }, 'invalid_client_metadata');
    await bad([1], 'invalid_client_metadata');
    await bad('redirect_uris=x', 'invalid_client_metadata', 'application/x-www-form-urlencoded');

    const user = await createUser(t);
    const to = await getManual(authorizeUrl({}));
    const id = queryOf(to.location).request_id;
    const path = `/oauth/authorization_requests/${id}`;
    expect((await call(t.app, 'GET', path, { headers: { 'x-service-api-key': user.key } })).statusCode).toBe(403);
    const body400 = await call(t.app, 'POST', `${path}/approve`, {
      token: user.token,
      body: { workspace_uuid: 'x', role: 'member' },
    });
    expect(body400.statusCode).toBe(400);
    expect(body400.json().error.details.field).toBe('workspace_uuid');
    const admin = await call(t.app, 'POST', `${path}/approve`, {
      token: user.token,
      body: { workspace_uuid: user.uuid, role: 'admin' },
    });
    expect(admin.json().error.details.field).toBe('role');
    const stranger = await createUser(t);
    const foreign = await call(t.app, 'POST', `${path}/approve`, {
      token: user.token,
      body: { workspace_uuid: stranger.uuid, role: 'viewer' },
    });
    expect(foreign.statusCode).toBe(404);
    const denied = await call(t.app, 'POST', `${path}/deny`, { token: user.token });
    expect(denied.statusCode).toBe(200);
    expect(queryOf(denied.json().redirect_to)).toMatchObject({ error: 'access_denied', state: 's1', iss: baseUrl });
    expect((await call(t.app, 'POST', `${path}/deny`, { token: user.token })).statusCode).toBe(404);
    expect((await call(t.app, 'GET', path, { token: user.token })).statusCode).toBe(404);
  });

  it('a role above the user’s own in a team workspace is 403', async () => {
    const owner = await createUser(t);
    const viewer = await createUser(t);
    const workspaceUuid = (await createWorkspace(t, owner, 'team')).uuid;
    await join(t, logged, workspaceUuid, owner, viewer, 'viewer');
    const to = await getManual(authorizeUrl({}));
    const id = queryOf(to.location).request_id;
    const member = await call(t.app, 'POST', `/oauth/authorization_requests/${id}/approve`, {
      token: viewer.token,
      body: { workspace_uuid: workspaceUuid, role: 'member' },
    });
    expect(member.statusCode).toBe(403);
    expect(member.json().error.code).toBe('FORBIDDEN');
  });

  it('the consent and connected-client routes take a session only: 401 without or with a garbage credential, 403 with a key', async () => {
    const user = await createUser(t);
    const id = '00000000-0000-7000-8000-000000000000';
    for (const route of MCP_OAUTH_ROUTES) {
      const url = route.path.replace(':id', id).replace(':uuid', id);
      const method = route.method as 'GET' | 'POST' | 'DELETE';
      expectFlatError(await call(t.app, method, url), 401, 'Authorization header is required');
      expectFlatError(await call(t.app, method, url, { token: 'not-a-token' }), 401, 'Invalid or expired token');
      const keyed = await call(t.app, method, url, { headers: { 'x-service-api-key': user.key } });
      expect(keyed.statusCode, `${route.method} ${route.path}`).toBe(403);
    }
  });
});
