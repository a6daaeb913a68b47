import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser, type TestUser } from '../../helpers/factories.js';
import { freePort } from '../../helpers/server-process.js';

/** A JSON-RPC answer as the tests read it. */
type RpcAnswer = { result: Record<string, unknown>; error: { code: number } };
const json = async (res: Response): Promise<RpcAnswer> => (await res.json()) as RpcAnswer;

const ACCEPT = 'application/json, text/event-stream';
const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
};

describe.each(DATABASES)('/mcp refusals on $name', (database) => {
  let t: TestApp;
  let baseUrl: string;
  let user: TestUser;

  beforeAll(async () => {
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    t = await buildTestApp(database, { config: { publicUrl: baseUrl } });
    await t.app.listen({ port, host: '127.0.0.1' });
    user = await createUser(t);
  });
  afterAll(() => t.close());

  function post(body: unknown, headers: Record<string, string> = {}) {
    return fetch(`${baseUrl}/mcp`, {
      method: 'POST',
      headers: { 'x-service-api-key': user.key, accept: ACCEPT, 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  }

  it('initializes with a signed session id and the requested version', async () => {
    const res = await post(INIT);
    expect(res.status).toBe(200);
    const session = res.headers.get('mcp-session-id') ?? '';
    expect(session).toMatch(/^[\x21-\x7e]{1,512}$/);
    const body = await json(res);
    expect(body.result.protocolVersion).toBe('2025-06-18');
    expect(body.result.capabilities).toEqual({
      tools: { listChanged: false },
      tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
    });
    const ping = await post({ jsonrpc: '2.0', id: 2, method: 'ping' }, { 'mcp-session-id': session });
    expect(await json(ping)).toEqual({ jsonrpc: '2.0', id: 2, result: {} });
    const forged = await post({ jsonrpc: '2.0', id: 3, method: 'ping' }, { 'mcp-session-id': `${session}x` });
    expect(forged.status).toBe(404);
    const other = await createUser(t);
    const foreign = await post(
      { jsonrpc: '2.0', id: 4, method: 'ping' },
      { 'mcp-session-id': session, 'x-service-api-key': other.key },
    );
    expect(foreign.status).toBe(404);
  });

  it('refuses a foreign Origin before the credential, and lets the public origin pass', async () => {
    const res = await post(INIT, { origin: 'http://evil.example', 'x-service-api-key': 'nope' });
    expect(res.status).toBe(403);
    expect(await json(res)).toEqual({ error: 'Origin not allowed' });
    expect((await post(INIT, { origin: baseUrl })).status).toBe(200);
    expect((await post(INIT, { origin: 'null' })).status).toBe(403);
  });

  it('answers 401 with WWW-Authenticate naming the protected resource metadata (RFC 9728)', async () => {
    const none = await fetch(`${baseUrl}/mcp`, {
      method: 'POST',
      headers: { accept: ACCEPT, 'content-type': 'application/json' },
      body: JSON.stringify(INIT),
    });
    expect(none.status).toBe(401);
    const metadata = `resource_metadata="${baseUrl}/.well-known/oauth-protected-resource/mcp", scope="mcp"`;
    expect(none.headers.get('www-authenticate')).toBe(`Bearer ${metadata}`);
    const bad = await post(INIT, { 'x-service-api-key': 'sk_wrong' });
    expect(bad.status).toBe(401);
    expect(bad.headers.get('www-authenticate')).toBe(
      `Bearer error="invalid_token", error_description="Invalid or expired token", ${metadata}`,
    );
  });

  it('refuses what the transport does not take', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(`${baseUrl}/mcp`, { method, headers: { 'x-service-api-key': user.key } });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
    }
    expect((await post(INIT, { accept: 'application/json' })).status).toBe(406);
    expect((await post(INIT, { 'content-type': 'text/plain' })).status).toBe(415);
    const parse = await post('{nope');
    expect(parse.status).toBe(400);
    expect((await json(parse)).error.code).toBe(-32700);
    const batch = await post([INIT]);
    expect(batch.status).toBe(400);
    expect((await json(batch)).error.code).toBe(-32600);
    expect((await post(INIT, { 'mcp-protocol-version': '2024-01-01' })).status).toBe(400);
    expect((await post({ jsonrpc: '2.0', method: 'notifications/initialized' })).status).toBe(202);
    const unknown = await post({ jsonrpc: '2.0', id: 9, method: 'resources/list' });
    expect((await json(unknown)).error.code).toBe(-32601);
    const cursor = await post({ jsonrpc: '2.0', id: 10, method: 'tools/list', params: { cursor: 'bogus' } });
    expect((await json(cursor)).error.code).toBe(-32602);
  });
});

describe.each(DATABASES)('/mcp turned off on $name', (database) => {
  it('answers 404 to every method', async () => {
    const t = await buildTestApp(database, { config: { mcp: false } });
    try {
      const res = await t.app.inject({ method: 'POST', url: '/mcp', payload: INIT });
      expect(res.statusCode).toBe(404);
      expect((await t.app.inject({ method: 'GET', url: '/mcp' })).statusCode).toBe(404);
    } finally {
      await t.close();
    }
  });
});
