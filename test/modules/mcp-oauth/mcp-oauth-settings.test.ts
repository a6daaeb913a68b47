import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, manualClock, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser } from '../../helpers/factories.js';
import { approveFor, connectClient, exchange, injectForm, modernMcp, registerPublicClient } from './oauth-helpers.js';

// What a viewer's token may do under 2026-07-28, the lifetimes of codes and tokens on the manual
// clock, CORS of the authorization server's endpoints, and the server switched off.
describe.each(DATABASES)('MCP OAuth roles, lifetimes, CORS and the off switch on $name', (database) => {
  let t: TestApp;
  const clock = manualClock();

  beforeAll(async () => {
    t = await buildTestApp(database, { clock, config: { corsOrigins: ['https://app.example'] } });
  });
  afterAll(() => t.close());

  it("a viewer's token reads but may not call an agent, reply or cancel under 2026-07-28", async () => {
    const user = await createUser(t);
    await createAgent(t, user, { name: 'reviewer' });
    const viewer = await connectClient(t, user, { role: 'viewer' });
    const member = await connectClient(t, user, { role: 'member' });

    const list = await modernMcp(t, viewer.access_token, 'tools/list');
    expect(list.body.result.tools.map((tool: { name: string }) => tool.name)).toContain('reviewer');
    const called = await modernMcp(t, viewer.access_token, 'tools/call', {
      name: 'reviewer',
      arguments: { message: 'hi' },
    });
    expect(called.status).toBe(200);
    expect(called.body.result).toMatchObject({ resultType: 'complete', isError: true });
    expect(called.body.result.content[0].text).toMatch(/^FORBIDDEN: /);

    // The member's token makes a task; the viewer's may read it but neither answer nor cancel it.
    const made = await modernMcp(t, member.access_token, 'tools/call', {
      name: 'reviewer',
      arguments: { message: 'hi' },
    });
    const taskId = made.body.result.taskId as string;
    expect(made.body.result).toMatchObject({ resultType: 'task', status: 'working' });
    const read = await modernMcp(t, viewer.access_token, 'tasks/get', { taskId });
    expect(read.body.result).toMatchObject({ resultType: 'complete', taskId, status: 'working' });
    for (const [method, params] of [
      ['tasks/cancel', { taskId }],
      ['tasks/update', { taskId, inputResponses: {} }],
    ] as const) {
      const refused = await modernMcp(t, viewer.access_token, method, params);
      expect(refused.status).toBe(200);
      expect(refused.body.error).toMatchObject({ code: -32600, message: expect.stringMatching(/^FORBIDDEN: /) });
    }
    for (const [name, args] of [
      ['cancel_task', { task_id: taskId }],
      ['reply_to_task', { task_id: taskId, message: 'more' }],
    ] as const) {
      const refused = await modernMcp(t, viewer.access_token, 'tools/call', { name, arguments: args });
      expect(refused.body.result, name).toMatchObject({ isError: true });
      expect(refused.body.result.content[0].text, name).toMatch(/^FORBIDDEN: /);
    }
    const status = await modernMcp(t, member.access_token, 'tasks/get', { taskId });
    expect(status.body.result.status).toBe('working');
  });

  it('a code lives TASKHOOK_MCP_OAUTH_CODE_TTL_SECONDS, an access token its TTL, a refresh token its own', async () => {
    const user = await createUser(t);
    const clientId = await registerPublicClient(t);
    const late = await approveFor(t, user, { clientId });
    clock.advance(t.config.mcpOauthCodeTtlSeconds * 1000);
    const expired = await exchange(t, clientId, late);
    expect(expired.statusCode).toBe(400);
    expect(expired.json().error).toBe('invalid_grant');

    const got = await connectClient(t, user);
    clock.advance(t.config.mcpOauthAccessTtlSeconds * 1000 - 1000);
    expect((await modernMcp(t, got.access_token, 'tools/list')).status).toBe(200);
    clock.advance(1000);
    const refused = await modernMcp(t, got.access_token, 'tools/list');
    expect(refused.status).toBe(401);
    expect(refused.headers['www-authenticate']).toContain('error="invalid_token"');

    // The refresh token outlives the access token; a new access token works again.
    const refreshed = await injectForm(t, '/oauth/token', {
      grant_type: 'refresh_token',
      refresh_token: got.refresh_token,
      client_id: got.clientId,
    });
    expect(refreshed.statusCode).toBe(200);
    const next = refreshed.json() as { access_token: string; refresh_token: string };
    expect((await modernMcp(t, next.access_token, 'tools/list')).status).toBe(200);
    clock.advance(t.config.mcpOauthRefreshTtlSeconds * 1000);
    const stale = await injectForm(t, '/oauth/token', {
      grant_type: 'refresh_token',
      refresh_token: next.refresh_token,
      client_id: got.clientId,
    });
    expect(stale.statusCode).toBe(400);
    expect(stale.json().error).toBe('invalid_grant');
  });

  it('the metadata, token, registration and revocation endpoints answer CORS for any origin; /mcp keeps its list', async () => {
    const origin = 'https://elsewhere.example';
    for (const [url, method] of [
      ['/.well-known/oauth-authorization-server', 'GET'],
      ['/.well-known/oauth-protected-resource/mcp', 'GET'],
      ['/.well-known/oauth-protected-resource', 'GET'],
      ['/oauth/token', 'POST'],
      ['/oauth/register', 'POST'],
      ['/oauth/revoke', 'POST'],
    ] as const) {
      const preflight = await t.app.inject({
        method: 'OPTIONS',
        url,
        headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'content-type' },
      });
      expect(preflight.statusCode, url).toBeLessThan(300);
      expect(preflight.headers['access-control-allow-origin'], url).toBe('*');
      expect(String(preflight.headers['access-control-allow-methods']), url).toContain(method);
    }
    const metadata = await call(t.app, 'GET', '/.well-known/oauth-authorization-server', { headers: { origin } });
    expect(metadata.headers['access-control-allow-origin']).toBe('*');
    const token = await injectForm(t, '/oauth/token', { grant_type: 'refresh_token' }, { origin });
    expect(token.statusCode).toBe(401);
    expect(token.headers['access-control-allow-origin']).toBe('*');
    expect(String(token.headers['access-control-expose-headers'])).toMatch(/WWW-Authenticate/i);

    const mcp = await t.app.inject({
      method: 'OPTIONS',
      url: '/mcp',
      headers: { origin, 'access-control-request-method': 'POST' },
    });
    expect(mcp.headers['access-control-allow-origin']).toBeUndefined();
    const allowed = await t.app.inject({
      method: 'OPTIONS',
      url: '/mcp',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' },
    });
    expect(allowed.headers['access-control-allow-origin']).toBe('https://app.example');
  });

  it('TASKHOOK_MCP_OAUTH=false: the OAuth paths and documents are 404, challenges plain, tokens unknown', async () => {
    // A second instance on the same storage with the authorization server off.
    const off = await buildTestApp(database, { clock, config: { dataDir: t.config.dataDir, mcpOauth: false } });
    try {
      const user = await createUser(t);
      const got = await connectClient(t, user);
      for (const [method, url] of [
        ['GET', '/.well-known/oauth-authorization-server'],
        ['GET', '/.well-known/oauth-protected-resource/mcp'],
        ['GET', '/.well-known/oauth-protected-resource'],
        ['GET', '/oauth/authorize?response_type=code'],
        ['POST', '/oauth/token'],
        ['POST', '/oauth/register'],
        ['POST', '/oauth/revoke'],
        ['GET', '/oauth/authorization_requests/abc'],
        ['POST', '/oauth/authorization_requests/abc/approve'],
      ] as const) {
        const res = await call(off.app, method, url, { token: user.token });
        expect(res.statusCode, url).toBe(404);
        expect(res.json().error.code, url).toBe('NOT_FOUND');
      }
      const anonymous = await modernMcp(off, '', 'tools/list');
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers['www-authenticate']).toBe('Bearer');
      const token = await modernMcp(off, got.access_token, 'tools/list');
      expect(token.status).toBe(401);
      expect(String(token.headers['www-authenticate'])).toMatch(/^Bearer error="invalid_token"/);
      expect(String(token.headers['www-authenticate'])).not.toContain('resource_metadata');
      // The same token on the instance where the server is on still works.
      expect((await modernMcp(t, got.access_token, 'tools/list')).status).toBe(200);
    } finally {
      await off.close();
    }
  });
});
