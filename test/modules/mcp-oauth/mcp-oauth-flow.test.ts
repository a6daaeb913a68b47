import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { freePort } from '../../helpers/server-process.js';
import { getManual, pkce, postForm, queryOf } from './oauth-helpers.js';

const REDIRECT = 'http://127.0.0.1:4567/callback';

interface Tokens {
  access_token: string;
  refresh_token: string;
}

describe.each(DATABASES)('MCP OAuth, a headless client with only the URL, on $name', (database) => {
  let t: TestApp;
  let baseUrl: string;

  beforeAll(async () => {
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    t = await buildTestApp(database, { config: { publicUrl: baseUrl } });
    await t.app.listen({ port, host: '127.0.0.1' });
  });
  afterAll(() => t.close());

  /** Discovery from the 401 challenge to the authorization server's metadata. */
  async function discover() {
    const challenge = await fetch(`${baseUrl}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    expect(challenge.status).toBe(401);
    const header = challenge.headers.get('www-authenticate') ?? '';
    const resourceMetadataUrl = /resource_metadata="([^"]+)"/.exec(header)?.[1] ?? '';
    expect(header).toContain('scope="mcp"');
    const resource = (await (await fetch(resourceMetadataUrl)).json()) as { authorization_servers: string[] };
    expect(resource).toMatchObject({ resource: `${baseUrl}/mcp`, authorization_servers: [baseUrl] });
    const server = await (
      await fetch(`${resource.authorization_servers[0]}/.well-known/oauth-authorization-server`)
    ).json();
    expect(server).toMatchObject({ issuer: baseUrl, code_challenge_methods_supported: ['S256'] });
    return server as {
      authorization_endpoint: string;
      token_endpoint: string;
      registration_endpoint: string;
      revocation_endpoint: string;
    };
  }

  async function register(server: { registration_endpoint: string }, body: Record<string, unknown> = {}) {
    const res = await fetch(server.registration_endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'Headless',
        redirect_uris: [REDIRECT],
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
        ...body,
      }),
    });
    expect(res.status).toBe(201);
    expect(res.headers.get('cache-control')).toBe('no-store');
    return (await res.json()) as { client_id: string; client_secret?: string };
  }

  /** Authorize, consent as `user` in `workspace` with `role`, and exchange the code. */
  async function connect(user: TestUser, opts: { clientId?: string; role?: string } = {}) {
    const server = await discover();
    const clientId = opts.clientId ?? (await register(server)).client_id;
    const { verifier, challenge } = pkce();
    const authorize = new URL(server.authorization_endpoint);
    for (const [k, v] of Object.entries({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: REDIRECT,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 'xyz',
      resource: `${baseUrl}/mcp`,
      scope: 'mcp',
    })) {
      authorize.searchParams.set(k, v);
    }
    const toConsent = await getManual(authorize.href);
    expect(toConsent.status).toBe(302);
    const requestId = queryOf(toConsent.location).request_id ?? '';
    expect(toConsent.location).toBe(`${baseUrl}/dashboard/mcp/authorize?request_id=${requestId}`);
    const shown = await call(t.app, 'GET', `/oauth/authorization_requests/${requestId}`, { token: user.token });
    expect(shown.statusCode).toBe(200);
    expect(shown.json()).toMatchObject({ client: { client_id: clientId }, redirect_uri: REDIRECT, scope: 'mcp' });
    const approved = await call(t.app, 'POST', `/oauth/authorization_requests/${requestId}/approve`, {
      token: user.token,
      body: { workspace_uuid: user.uuid, role: opts.role ?? 'member' },
    });
    expect(approved.statusCode).toBe(200);
    const back = queryOf(approved.json().redirect_to);
    expect(back).toMatchObject({ state: 'xyz', iss: baseUrl });
    const exchanged = await postForm(baseUrl, '/oauth/token', {
      grant_type: 'authorization_code',
      code: back.code ?? '',
      redirect_uri: REDIRECT,
      code_verifier: verifier,
      client_id: clientId,
      resource: `${baseUrl}/mcp`,
    });
    expect(exchanged.status).toBe(200);
    expect(exchanged.headers.get('cache-control')).toBe('no-store');
    const tokens = (await exchanged.json()) as Tokens;
    expect(tokens).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: 'mcp' });
    expect(tokens.access_token).toMatch(/^mcp_at_[0-9A-Za-z]{43}$/);
    expect(tokens.refresh_token).toMatch(/^mcp_rt_[0-9A-Za-z]{43}$/);
    return {
      clientId,
      server,
      code: back.code ?? '',
      verifier,
      ...(tokens as { access_token: string; refresh_token: string }),
    };
  }

  function mcpCall(token: string, method = 'tools/list') {
    return fetch(`${baseUrl}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-11-25',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method, params: {} }),
    });
  }

  it('discovers, registers, consents, gets tokens and lists tools with the official SDK client', async () => {
    const user = await createUser(t);
    await createAgent(t, user, { name: 'reviewer', description: 'Reviews diffs' });
    const { access_token } = await connect(user);
    const client = new Client({ name: 'oauth-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${access_token}` } },
    });
    await client.connect(transport);
    const tools = await client.listTools();
    expect(tools.tools.map((tool) => tool.name)).toContain('reviewer');
    await client.close();

    const grants = await call(t.app, 'GET', '/auth/mcp_grants', { token: user.token });
    expect(grants.statusCode).toBe(200);
    const [grant] = grants.json().grants;
    expect(grant).toMatchObject({ role: 'member', scope: 'mcp', resource: `${baseUrl}/mcp`, revoked_at: null });
    expect(grant.workspace).toEqual({ uuid: user.uuid, name: expect.any(String) });
    expect(grant.last_used_at).not.toBeNull();
    const audit = await call(t.app, 'GET', `/workspaces/${user.uuid}/audit_log?action=mcp_grant.create`, {
      token: user.token,
    });
    expect(audit.json().entries[0]).toMatchObject({
      action: 'mcp_grant.create',
      actor: { type: 'user', uuid: user.uuid },
      target: { type: 'mcp_grant', uuid: grant.uuid },
      details: { role: 'member', client_name: 'Headless' },
    });
  });

  it('rotates refresh tokens; a replayed one revokes the grant with all its tokens', async () => {
    const user = await createUser(t);
    const first = await connect(user);
    const refreshed = await postForm(baseUrl, '/oauth/token', {
      grant_type: 'refresh_token',
      refresh_token: first.refresh_token,
      client_id: first.clientId,
    });
    expect(refreshed.status).toBe(200);
    const second = (await refreshed.json()) as Tokens;
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect((await mcpCall(first.access_token)).status).toBe(200);
    expect((await mcpCall(second.access_token)).status).toBe(200);

    const replay = await postForm(baseUrl, '/oauth/token', {
      grant_type: 'refresh_token',
      refresh_token: first.refresh_token,
      client_id: first.clientId,
    });
    expect(replay.status).toBe(400);
    expect(await replay.json()).toMatchObject({ error: 'invalid_grant' });
    const refused = await mcpCall(second.access_token);
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toBe(
      `Bearer error="invalid_token", error_description="Invalid or expired token", resource_metadata="${baseUrl}/.well-known/oauth-protected-resource/mcp", scope="mcp"`,
    );
    const again = await postForm(baseUrl, '/oauth/token', {
      grant_type: 'refresh_token',
      refresh_token: second.refresh_token,
      client_id: first.clientId,
    });
    expect(again.status).toBe(400);
    const audit = await call(t.app, 'GET', `/workspaces/${user.uuid}/audit_log?action=mcp_grant.revoke`, {
      token: user.token,
    });
    expect(audit.json().entries[0]).toMatchObject({
      actor: { type: 'mcp_client', client_id: first.clientId, client_name: 'Headless' },
      details: { reason: 'refresh_reuse' },
    });
    const [grant] = (await call(t.app, 'GET', '/auth/mcp_grants', { token: user.token })).json().grants;
    expect(grant.revoked_at).not.toBeNull();
  });

  it('a reused code revokes its grant', async () => {
    const user = await createUser(t);
    const got = await connect(user);
    const reuse = await postForm(baseUrl, '/oauth/token', {
      grant_type: 'authorization_code',
      code: got.code,
      redirect_uri: REDIRECT,
      code_verifier: got.verifier,
      client_id: got.clientId,
    });
    expect(reuse.status).toBe(400);
    expect(await reuse.json()).toMatchObject({ error: 'invalid_grant' });
    expect((await mcpCall(got.access_token)).status).toBe(401);
  });

  it('revocation: an access token ends alone, a refresh token ends the grant, another client’s token stays', async () => {
    const user = await createUser(t);
    const got = await connect(user);
    const other = await register(await discover());
    const foreign = await postForm(baseUrl, '/oauth/revoke', { token: got.refresh_token, client_id: other.client_id });
    expect(foreign.status).toBe(200);
    expect((await mcpCall(got.access_token)).status).toBe(200);
    expect((await postForm(baseUrl, '/oauth/revoke', { token: 'nonsense', client_id: got.clientId })).status).toBe(200);
    expect((await postForm(baseUrl, '/oauth/revoke', { client_id: got.clientId })).status).toBe(400);

    const refreshed = (await (
      await postForm(baseUrl, '/oauth/token', {
        grant_type: 'refresh_token',
        refresh_token: got.refresh_token,
        client_id: got.clientId,
      })
    ).json()) as Tokens;
    expect(
      (await postForm(baseUrl, '/oauth/revoke', { token: got.access_token, client_id: got.clientId })).status,
    ).toBe(200);
    expect((await mcpCall(got.access_token)).status).toBe(401);
    expect((await mcpCall(refreshed.access_token)).status).toBe(200);
    expect(
      (await postForm(baseUrl, '/oauth/revoke', { token: refreshed.refresh_token, client_id: got.clientId })).status,
    ).toBe(200);
    expect((await mcpCall(refreshed.access_token)).status).toBe(401);
  });

  it('the user disconnects a client; tokens work on /mcp only', async () => {
    const user = await createUser(t);
    const got = await connect(user, { role: 'viewer' });
    const elsewhere = await fetch(`${baseUrl}/agent/list`, {
      headers: { authorization: `Bearer ${got.access_token}` },
    });
    expect(elsewhere.status).toBe(401);
    expect(await elsewhere.json()).toEqual({ error: 'Invalid or expired token' });
    const asKey = await fetch(`${baseUrl}/agent/list`, { headers: { 'x-service-api-key': got.access_token } });
    expect(asKey.status).toBe(401);
    const refreshAsBearer = await mcpCall(got.refresh_token);
    expect(refreshAsBearer.status).toBe(401);
    const consentWithToken = await call(t.app, 'GET', '/auth/mcp_grants', { token: got.access_token });
    expect(consentWithToken.statusCode).toBe(401);

    const [grant] = (await call(t.app, 'GET', '/auth/mcp_grants', { token: user.token })).json().grants;
    const stranger = await createUser(t);
    expect((await call(t.app, 'DELETE', `/auth/mcp_grants/${grant.uuid}`, { token: stranger.token })).statusCode).toBe(
      404,
    );
    expect((await call(t.app, 'DELETE', `/auth/mcp_grants/${grant.uuid}`, { token: user.token })).statusCode).toBe(204);
    expect((await call(t.app, 'DELETE', `/auth/mcp_grants/${grant.uuid}`, { token: user.token })).statusCode).toBe(204);
    expect((await mcpCall(got.access_token)).status).toBe(401);
    const audit = await call(t.app, 'GET', `/workspaces/${user.uuid}/audit_log?action=mcp_grant.revoke`, {
      token: user.token,
    });
    expect(audit.json().entries).toHaveLength(1);
    expect(audit.json().entries[0]).toMatchObject({
      actor: { type: 'user', uuid: user.uuid },
      details: { reason: 'user' },
    });
  });
});
