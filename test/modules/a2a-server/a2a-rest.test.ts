import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { a2aRpc, type Json, userMessage } from './a2a-rpc.js';

const ERROR_INFO = 'type.googleapis.com/google.rpc.ErrorInfo';
const BAD_REQUEST = 'type.googleapis.com/google.rpc.BadRequest';

/** The HTTP+JSON binding answered raw, and the same operations over JSON-RPC, on one agent. */
describe.each(DATABASES)('A2A HTTP+JSON binding on $name', (database) => {
  let t: TestApp;
  let user: TestUser;
  let agentId: string;

  beforeAll(async () => {
    t = await buildTestApp(database);
    user = await createUser(t);
    agentId = (await createAgent(t, user)).uuid;
  });
  afterAll(() => t.close());

  function rest(
    method: 'GET' | 'POST' | 'DELETE' | 'PUT',
    path: string,
    opts: { body?: string | object; headers?: Record<string, string> } = {},
  ) {
    const headers: Record<string, string> = {
      'x-api-key': user.key,
      'a2a-version': '1.0',
      ...(opts.body !== undefined ? { 'content-type': 'application/a2a+json' } : {}),
      ...opts.headers,
    };
    const sent = Object.fromEntries(Object.entries(headers).filter(([, v]) => v !== ''));
    const payload = typeof opts.body === 'object' ? JSON.stringify(opts.body) : opts.body;
    return t.app.inject({ method, url: `/a2a/${agentId}${path}`, headers: sent, payload });
  }

  const send = async (text = 'hi', extra: Record<string, unknown> = {}) => {
    const res = await rest('POST', '/message:send', {
      body: { message: userMessage(text, extra), configuration: { returnImmediately: true } },
    });
    expect(res.statusCode).toBe(200);
    return res.json().task as Json;
  };

  it('serves a task made over one binding to the other, with the same JSON', async () => {
    const rpc = a2aRpc(t, user, agentId);
    const message = userMessage('both ways');
    const made = await rest('POST', '/message:send', {
      body: { message, configuration: { returnImmediately: true } },
    });
    expect(made.headers['content-type']).toMatch(/^application\/a2a\+json(;|$)/);
    const task = made.json().task;
    const overRpc = (await rpc.rpc('GetTask', { id: task.id })).result;
    const overRest = (await rest('GET', `/tasks/${task.id}`)).json();
    expect(overRest).toEqual(overRpc);
    expect(overRest).toEqual(task);
    // The messageId is a repeat through the other binding: the same task, nothing new.
    const again = await rpc.rpc('SendMessage', { message, configuration: { returnImmediately: true } });
    expect(again.result.task.id).toBe(task.id);
    const listRest = (await rest('GET', '/tasks?pageSize=100&includeArtifacts=true')).json();
    const listRpc = (await rpc.rpc('ListTasks', { pageSize: 100, includeArtifacts: true })).result;
    expect(listRest).toEqual(listRpc);
    expect(listRest.tasks.filter((x: Json) => x.id === task.id)).toHaveLength(1);
  });

  it('cancels with an empty body, then refuses a second cancel with TASK_NOT_CANCELABLE on both bindings', async () => {
    const task = await send();
    const first = await rest('POST', `/tasks/${task.id}:cancel`, { headers: { 'content-type': 'application/json' } });
    expect(first.statusCode).toBe(200);
    expect(first.json().status.state).toBe('TASK_STATE_CANCELED');
    const second = await rest('POST', `/tasks/${task.id}:cancel`, { body: { metadata: { why: 'again' } } });
    expect(second.statusCode).toBe(400);
    expect(second.json()).toEqual({
      error: {
        code: 400,
        status: 'FAILED_PRECONDITION',
        message: expect.any(String),
        details: [{ '@type': ERROR_INFO, reason: 'TASK_NOT_CANCELABLE', domain: 'a2a-protocol.org' }],
      },
    });
    const overRpc = await a2aRpc(t, user, agentId).rpc('CancelTask', { id: task.id });
    expect(overRpc.error).toMatchObject({
      code: -32002,
      data: [{ '@type': ERROR_INFO, reason: 'TASK_NOT_CANCELABLE', domain: 'a2a-protocol.org' }],
    });
  });

  it('answers an unknown task 404 TASK_NOT_FOUND, whatever the id looks like', async () => {
    for (const id of [randomUUID(), 'nonexistent-task-id', 'a:b']) {
      const res = await rest('GET', `/tasks/${encodeURIComponent(id)}`);
      expect(res.statusCode).toBe(404);
      expect(res.json().error).toMatchObject({
        code: 404,
        status: 'NOT_FOUND',
        details: [{ reason: 'TASK_NOT_FOUND' }],
      });
    }
    expect((await rest('POST', `/tasks/${randomUUID()}:subscribe`)).statusCode).toBe(404);
  });

  it('names the field of invalid parameters on both bindings', async () => {
    const res = await rest('POST', '/message:send', {
      body: { message: { role: 'ROLE_USER', parts: [{ text: 'x' }] } },
    });
    expect(res.statusCode).toBe(400);
    const violation = {
      '@type': BAD_REQUEST,
      fieldViolations: [{ field: 'message.messageId', description: expect.any(String) }],
    };
    expect(res.json().error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT', details: [violation] });
    const rpc = await a2aRpc(t, user, agentId).rpc('SendMessage', {
      message: { role: 'ROLE_USER', parts: [{ text: 'x' }] },
    });
    expect(rpc.error).toMatchObject({ code: -32602, data: [violation] });
    for (const [query, field] of [
      ['pageSize=abc', 'pageSize'],
      ['pageSize=0', 'pageSize'],
      ['includeArtifacts=yes', 'includeArtifacts'],
      ['status=DONE', 'status'],
      ['statusTimestampAfter=yesterday', 'statusTimestampAfter'],
    ]) {
      const bad = await rest('GET', `/tasks?${query}`);
      expect(bad.statusCode, query).toBe(400);
      expect(bad.json().error.details[0].fieldViolations[0].field).toBe(field);
    }
    // An empty body is {}: a send without a message fails its validation.
    expect((await rest('POST', '/message:send', { headers: { 'content-type': 'application/json' } })).statusCode).toBe(
      400,
    );
  });

  it('takes the version from the header or the query, and refuses none or another', async () => {
    const none = await rest('GET', '/tasks', { headers: { 'a2a-version': '' } });
    expect(none.statusCode).toBe(400);
    expect(none.json().error).toMatchObject({
      status: 'FAILED_PRECONDITION',
      details: [{ reason: 'VERSION_NOT_SUPPORTED', metadata: { supportedVersions: '1.0' } }],
    });
    expect((await rest('GET', '/tasks?A2A-Version=1.0', { headers: { 'a2a-version': '' } })).statusCode).toBe(200);
    expect((await rest('GET', '/tasks?A2A-Version=1.0.1', { headers: { 'a2a-version': '' } })).statusCode).toBe(200);
    // The header wins.
    expect((await rest('GET', '/tasks?A2A-Version=1.0', { headers: { 'a2a-version': '0.3' } })).statusCode).toBe(400);
    const rpc = a2aRpc(t, user, agentId);
    expect(await rpc.errorCode('ListTasks', {}, { 'a2a-version': '' })).toBe(-32009);
    const res = await t.app.inject({
      method: 'POST',
      url: `/a2a/${agentId}?A2A-Version=1.0`,
      headers: { 'x-api-key': user.key, 'content-type': 'application/a2a+json' },
      payload: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: {} }),
    });
    expect(res.json().result.tasks).toBeDefined();
    expect(res.headers['content-type']).toMatch(/^application\/json/);
  });

  it('answers 404 for an unknown path, 405 with Allow for another method, 415 for another media type', async () => {
    const unknown = await rest('GET', '/nothing/here');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error).toMatchObject({ code: 404, status: 'NOT_FOUND' });
    const wrong = await rest('DELETE', '/tasks/x');
    expect(wrong.statusCode).toBe(405);
    expect(wrong.headers.allow).toBe('GET');
    expect(wrong.json().error).toMatchObject({ code: 405, status: 'UNIMPLEMENTED' });
    expect((await rest('PUT', '/message:send')).headers.allow).toBe('POST');
    expect((await rest('GET', '/tasks/x:cancel')).headers.allow).toBe('POST');
    const typed = await rest('POST', '/message:send', { body: '{}', headers: { 'content-type': 'text/plain' } });
    expect(typed.statusCode).toBe(415);
    expect(typed.json().error).toMatchObject({ code: 415, status: 'INVALID_ARGUMENT' });
    const notJson = await rest('POST', '/message:send', { body: '{' });
    expect(notJson.statusCode).toBe(400);
  });

  it('answers application/json only when Accept asks for that alone', async () => {
    const type = async (accept: string) =>
      String((await rest('GET', '/tasks', { headers: { accept } })).headers['content-type']).split(';')[0];
    expect(await type('application/json')).toBe('application/json');
    expect(await type('application/a2a+json, application/json')).toBe('application/a2a+json');
    expect(await type('application/json, */*')).toBe('application/a2a+json');
    expect(await type('text/html')).toBe('application/a2a+json');
  });

  it('refuses subscribing to a finished task and the extended card with UNSUPPORTED_OPERATION', async () => {
    const task = await send();
    await rest('POST', `/tasks/${task.id}:cancel`);
    for (const res of [await rest('GET', `/tasks/${task.id}:subscribe`), await rest('GET', '/extendedAgentCard')]) {
      expect(res.statusCode).toBe(400);
      expect(res.json().error.details[0].reason).toBe('UNSUPPORTED_OPERATION');
    }
  });

  it('streams message:stream as bare StreamResponses, whatever Accept says', async () => {
    const message = userMessage('streamed');
    const streaming = rest('POST', '/message:stream', { body: { message }, headers: { accept: 'application/json' } });
    // The same messageId names the same task: cancel it, and the stream ends.
    const task = await send('streamed', { messageId: message.messageId });
    expect((await rest('POST', `/tasks/${task.id}:cancel`)).statusCode).toBe(200);
    const res = await streaming;
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    const events = res.body
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => JSON.parse(l.slice(6)));
    expect(events[0].task.id).toBe(task.id);
    expect(events[0].jsonrpc).toBeUndefined();
    expect(events.at(-1).statusUpdate.status.state).toBe('TASK_STATE_CANCELED');
  });

  it('serves the card with a strong ETag and private caching, and 304 for a matching If-None-Match', async () => {
    const card = (headers: Record<string, string> = {}) =>
      t.app.inject({
        method: 'GET',
        url: `/a2a/${agentId}/.well-known/agent-card.json`,
        headers: { 'x-api-key': user.key, ...headers },
      });
    const first = await card();
    expect(first.statusCode).toBe(200);
    expect(first.headers['cache-control']).toBe('private, max-age=300');
    const etag = String(first.headers.etag);
    expect(etag).toMatch(/^"[^"]+"$/);
    expect((await card()).headers.etag).toBe(etag);
    for (const match of [etag, `"other", ${etag}`, '*']) {
      const again = await card({ 'if-none-match': match });
      expect(again.statusCode).toBe(304);
      expect(again.body).toBe('');
      expect(again.headers.etag).toBe(etag);
    }
    expect((await card({ 'if-none-match': '"other"' })).statusCode).toBe(200);
    // The card's JSON changes with a rename, and so does its ETag.
    const renamed = await t.app.inject({
      method: 'PATCH',
      url: `/agent/${agentId}`,
      headers: { 'x-api-key': user.key },
      payload: { name: 'renamed' },
    });
    expect(renamed.statusCode).toBe(200);
    expect((await card({ 'if-none-match': etag })).statusCode).toBe(200);
  });

  it('challenges every 401 under /a2a with WWW-Authenticate: Bearer', async () => {
    const paths = [`/a2a/${agentId}/.well-known/agent-card.json`, `/a2a/${agentId}/tasks`];
    for (const url of paths) {
      const none = await t.app.inject({ method: 'GET', url });
      expect(none.statusCode).toBe(401);
      expect(none.headers['www-authenticate']).toBe('Bearer');
      const refused = await t.app.inject({ method: 'GET', url, headers: { 'x-api-key': 'sk_service_nope' } });
      expect(refused.statusCode).toBe(401);
      expect(refused.headers['www-authenticate']).toBe('Bearer error="invalid_token"');
    }
    const rpc = await t.app.inject({ method: 'POST', url: `/a2a/${agentId}`, payload: '{}' });
    expect(rpc.headers['www-authenticate']).toBe('Bearer');
  });

  it('documents every HTTP+JSON path in /openapi.json', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const paths = Object.entries(doc.paths as Record<string, Record<string, unknown>>)
      .filter(([path]) => path.startsWith('/a2a/{agentId}/'))
      .flatMap(([path, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`));
    expect(paths.sort()).toEqual(
      [
        'GET /a2a/{agentId}/.well-known/agent-card.json',
        'POST /a2a/{agentId}/message:send',
        'POST /a2a/{agentId}/message:stream',
        'GET /a2a/{agentId}/tasks',
        'GET /a2a/{agentId}/tasks/{taskId}',
        'POST /a2a/{agentId}/tasks/{taskId}',
        'GET /a2a/{agentId}/tasks/{taskId}/pushNotificationConfigs',
        'POST /a2a/{agentId}/tasks/{taskId}/pushNotificationConfigs',
        'GET /a2a/{agentId}/tasks/{taskId}/pushNotificationConfigs/{configId}',
        'DELETE /a2a/{agentId}/tasks/{taskId}/pushNotificationConfigs/{configId}',
        'GET /a2a/{agentId}/extendedAgentCard',
      ].sort(),
    );
  });
});
