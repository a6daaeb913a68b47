import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser, type TestUser } from '../../helpers/factories.js';
import { freePort } from '../../helpers/server-process.js';

type RpcAnswer = {
  id: unknown;
  result: Record<string, unknown>;
  error: { code: number; message: string; data?: unknown };
};

const V = '2026-07-28';
const META = {
  'io.modelcontextprotocol/protocolVersion': V,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 't', version: '1' },
};
const SUPPORTED = ['2026-07-28', '2025-11-25', '2025-06-18'];

/** A 2026-07-28 request with its headers, each part replaceable. */
function modern(method: string, params: Record<string, unknown> = {}, meta: Record<string, unknown> = META) {
  return { body: { jsonrpc: '2.0', id: 7, method, params: { ...params, _meta: meta } }, headers: headersFor(method) };
}
function headersFor(method: string, name?: string): Record<string, string> {
  return { 'mcp-protocol-version': V, 'mcp-method': method, ...(name === undefined ? {} : { 'mcp-name': name }) };
}

describe.each(DATABASES)('/mcp 2026-07-28 checks on $name', (database) => {
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

  async function post(body: unknown, headers: Record<string, string> = {}) {
    const res = await fetch(`${baseUrl}/mcp`, {
      method: 'POST',
      headers: {
        'x-service-api-key': user.key,
        accept: 'application/json, text/event-stream',
        'content-type': 'application/json',
        ...headers,
      },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : null) as RpcAnswer };
  }

  it('answers server/discover with the revisions, capabilities and cache hints', async () => {
    const { body, headers } = modern('server/discover');
    const res = await post(body, { ...headers, 'mcp-session-id': 'not-a-session' });
    expect(res.status).toBe(200);
    expect(res.body.result).toMatchObject({
      resultType: 'complete',
      supportedVersions: SUPPORTED,
      capabilities: { tools: { listChanged: true }, extensions: { 'io.modelcontextprotocol/tasks': {} } },
      ttlMs: 3600000,
      cacheScope: 'public',
      _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'taskhook', version: expect.any(String) } },
    });
    expect(res.body.result.instructions).toMatch(/tool/);
    const list = modern('tools/list');
    const tools = await post(list.body, list.headers);
    expect(tools.body.result).toMatchObject({ resultType: 'complete', ttlMs: 60000, cacheScope: 'private' });
  });

  it('checks a modern request in the documented order', async () => {
    const d = modern('server/discover');
    const version = (v: unknown) => ({ ...META, 'io.modelcontextprotocol/protocolVersion': v });
    // 1. the envelope's version: not a string, then another revision (the 2025 ones included).
    expect(await post({ ...d.body, params: { _meta: version(5) } }, { 'mcp-method': 'x' })).toMatchObject({
      status: 400,
      body: { id: 7, error: { code: -32602 } },
    });
    const old = await post({ ...d.body, params: { _meta: version('2025-11-25') } }, {});
    expect(old).toMatchObject({ status: 400, body: { error: { code: -32022 } } });
    expect(old.body.error.data).toEqual({ supported: SUPPORTED, requested: '2025-11-25' });
    // 2. the envelope: no version in the body, capabilities missing, clientInfo malformed.
    const noVersion = { ...META } as Record<string, unknown>;
    delete noVersion['io.modelcontextprotocol/protocolVersion'];
    expect((await post({ ...d.body, params: { _meta: noVersion } }, d.headers)).body.error.code).toBe(-32602);
    const noCaps = { ...META } as Record<string, unknown>;
    delete noCaps['io.modelcontextprotocol/clientCapabilities'];
    expect((await post({ ...d.body, params: { _meta: noCaps } }, {})).status).toBe(400);
    const badInfo = { ...META, 'io.modelcontextprotocol/clientInfo': { name: 't' } };
    expect((await post({ ...d.body, params: { _meta: badInfo } }, {})).body.error.code).toBe(-32602);
    const noInfo = { ...META } as Record<string, unknown>;
    delete noInfo['io.modelcontextprotocol/clientInfo'];
    expect((await post({ ...d.body, params: { _meta: noInfo } }, d.headers)).status).toBe(200);
    // 3. MCP-Protocol-Version absent or different; 4. Mcp-Method, Mcp-Name.
    expect(await post(d.body, { 'mcp-method': 'server/discover' })).toMatchObject({
      status: 400,
      body: { error: { code: -32020 } },
    });
    expect((await post(d.body, { ...d.headers, 'mcp-protocol-version': '2025-11-25' })).body.error.code).toBe(-32020);
    expect((await post(d.body, { 'mcp-protocol-version': V })).body.error.code).toBe(-32020);
    expect((await post(d.body, { ...d.headers, 'mcp-method': 'tools/list' })).body.error.code).toBe(-32020);
    const call = modern('tools/call', { name: 'get_task', arguments: { task_id: 'x', wait_seconds: 0 } });
    expect((await post(call.body, call.headers)).body.error.code).toBe(-32020);
    expect((await post(call.body, headersFor('tools/call', 'cancel_task'))).body.error.code).toBe(-32020);
    expect((await post(call.body, headersFor('tools/call', '=?base64?!!?='))).body.error.code).toBe(-32020);
    const encoded = `=?base64?${Buffer.from('get_task').toString('base64')}?=`;
    const ok = await post(call.body, headersFor('tools/call', encoded));
    expect(ok.status).toBe(200);
    expect(ok.body.result).toMatchObject({ resultType: 'complete', isError: true });
    // 5. methods outside the table.
    for (const method of ['initialize', 'ping', 'tasks/list', 'tasks/result', 'resources/list', 'logging/setLevel']) {
      const m = modern(method);
      expect(await post(m.body, m.headers)).toMatchObject({ status: 404, body: { id: 7, error: { code: -32601 } } });
    }
    // 6. invalid params inside a 200.
    const foreign = modern('tools/list', { cursor: 'nope' });
    expect(await post(foreign.body, foreign.headers)).toMatchObject({ status: 200, body: { error: { code: -32602 } } });
  });

  it('answers modern notifications 202 and refuses an unknown protocol version header with -32022', async () => {
    const note = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, _meta: META } };
    expect((await post(note, headersFor('notifications/cancelled'))).status).toBe(202);
    const res = await post({ jsonrpc: '2.0', id: 1, method: 'ping' }, { 'mcp-protocol-version': '2024-01-01' });
    expect(res).toMatchObject({ status: 400, body: { error: { code: -32022 } } });
    expect(res.body.error.data).toEqual({ supported: SUPPORTED, requested: '2024-01-01' });
  });
});
