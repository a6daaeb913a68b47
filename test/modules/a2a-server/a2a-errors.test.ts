import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { cancelTask, claimOne, getTask, reportComplete, reportFail, submitTask } from '../../helpers/tasks.js';
import { a2aRpc, userMessage } from './a2a-rpc.js';

describe.each(DATABASES)('A2A endpoint refusals on $name', (database) => {
  let t: TestApp;
  let user: TestUser;
  let agentUuid: string;
  let a: ReturnType<typeof a2aRpc>;

  beforeAll(async () => {
    t = await buildTestApp(database);
    user = await createUser(t);
    agentUuid = (await createAgent(t, user)).uuid;
    a = a2aRpc(t, user, agentUuid);
  });
  afterAll(() => t.close());

  /** A task of the agent that a worker completed. */
  async function completedTask(): Promise<string> {
    const agent = (await createAgent(t, user)).uuid;
    const submitted = await submitTask(t, user, agent);
    const claimed = await claimOne(t, user, agent);
    expect((await reportComplete(t, user, agent, claimed.task_id, claimed.lease_id)).statusCode).toBe(200);
    return `${agent}/${submitted.task_id}`;
  }

  it('answers HTTP refusals before JSON-RPC: 401 flat, 403 flat, 404 for an unknown or foreign agent', async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: {} });
    const none = await t.app.inject({ method: 'POST', url: `/a2a/${agentUuid}`, payload: body });
    expect(none.statusCode).toBe(401);
    expect(none.json()).toEqual({ error: 'Authorization header is required' });
    const bad = await a.raw(body, { 'x-api-key': 'sk_service_nope' });
    expect(bad.statusCode).toBe(401);
    expect(bad.json()).toEqual({ error: 'Invalid or expired token' });

    const disabled = await createUser(t, { agentsEnabled: false });
    const refused = await a2aRpc(t, disabled, agentUuid).raw(body);
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toEqual({ error: 'The AI agents feature is not enabled for this account' });

    const other = await createUser(t);
    for (const res of [
      await a2aRpc(t, other, agentUuid).raw(body),
      await a2aRpc(t, user, randomUUID()).raw(body),
      await call(t.app, 'GET', `/a2a/${agentUuid}/.well-known/agent-card.json`, { token: other.token }),
    ]) {
      expect(res.statusCode).toBe(404);
      expect(res.json().error.code).toBe('NOT_FOUND');
    }
    const noCard = await t.app.inject({ method: 'GET', url: `/a2a/${agentUuid}/.well-known/agent-card.json` });
    expect(noCard.statusCode).toBe(401);
  });

  it('takes a session JWT as well as a platform key', async () => {
    const res = await a.raw(JSON.stringify({ jsonrpc: '2.0', id: 'j', method: 'ListTasks' }), {
      'x-api-key': '',
      authorization: `Bearer ${user.token}`,
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ jsonrpc: '2.0', id: 'j', result: { tasks: [], totalSize: 0 } });
  });

  it('answers a body over the size limit with 413', async () => {
    const res = await a.raw(JSON.stringify({ pad: 'x'.repeat(t.config.maxBodyBytes) }));
    expect(res.statusCode).toBe(413);
    expect(res.json().error.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('refuses malformed requests: -32700 and -32600, HTTP 200', async () => {
    const cases: Array<[string, Record<string, string>, number, unknown]> = [
      ['{"jsonrpc": "2.0", "id": 1,', {}, -32700, null],
      ['', {}, -32700, null],
      ['[{"jsonrpc": "2.0", "id": 1, "method": "ListTasks"}]', {}, -32600, null],
      ['"text"', {}, -32600, null],
      ['{"jsonrpc": "1.0", "id": 7, "method": "ListTasks"}', {}, -32600, 7],
      ['{"jsonrpc": "2.0", "method": "ListTasks"}', {}, -32600, null],
      ['{"jsonrpc": "2.0", "id": {}, "method": "ListTasks"}', {}, -32600, null],
      ['{"jsonrpc": "2.0", "id": "x", "method": 5}', {}, -32600, 'x'],
      ['{"jsonrpc": "2.0", "id": 1, "method": "ListTasks"}', { 'content-type': 'text/plain' }, -32600, null],
      [`{"jsonrpc": "2.0", "id": 1, "params": ${'['.repeat(70)}${']'.repeat(70)}}`, {}, -32600, null],
    ];
    for (const [body, headers, code, id] of cases) {
      const res = await a.raw(body, headers);
      expect(res.statusCode, body.slice(0, 60)).toBe(200);
      expect(res.json(), body.slice(0, 60)).toMatchObject({ jsonrpc: '2.0', id, error: { code } });
    }
  });

  it('applies the A2A-Version rule: 1.0 only; none is a v0.3 request (-32009)', async () => {
    expect(await a.errorCode('ListTasks', {}, { 'a2a-version': '' })).toBe(-32009);
    expect(await a.errorCode('ListTasks', {}, { 'a2a-version': '0.3' })).toBe(-32009);
    expect(await a.errorCode('ListTasks', {}, { 'a2a-version': '2.0' })).toBe(-32009);
    const res = await t.app.inject({
      method: 'POST',
      url: `/a2a/${agentUuid}`,
      headers: { 'x-api-key': user.key, 'content-type': 'application/json' },
      payload: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'ListTasks' }),
    });
    expect(res.json()).toMatchObject({ id: 3, error: { code: -32009 } });
    expect((await a.rpc('ListTasks', {}, { 'a2a-version': '1.0.3' })).result).toBeDefined();
  });

  it('answers -32601 and -32004 for methods it does not offer, -32001 for push configs of no task', async () => {
    expect(await a.errorCode('tasks/get', { id: randomUUID() })).toBe(-32601);
    expect(await a.errorCode('NoSuchMethod')).toBe(-32601);
    for (const method of ['GetTaskPushNotificationConfig', 'DeleteTaskPushNotificationConfig']) {
      expect(await a.errorCode(method, { taskId: randomUUID(), id: 'x' })).toBe(-32001);
    }
    expect(await a.errorCode('ListTaskPushNotificationConfigs', { taskId: randomUUID() })).toBe(-32001);
    expect(
      await a.errorCode('CreateTaskPushNotificationConfig', { taskId: randomUUID(), url: 'https://example.com/h' }),
    ).toBe(-32001);
    expect(await a.errorCode('GetExtendedAgentCard', {})).toBe(-32004);
  });

  it('refuses invalid params with -32602 and url/raw parts with -32005, writing nothing', async () => {
    const send = (message: unknown, configuration?: unknown) =>
      a.errorCode('SendMessage', { message, configuration: configuration ?? { returnImmediately: true } });
    expect(await a.errorCode('SendMessage', [])).toBe(-32602);
    expect(await a.errorCode('SendMessage', {})).toBe(-32602);
    expect(await send({ role: 'ROLE_USER', parts: [{ text: 'no id' }] })).toBe(-32602);
    expect(await send(userMessage('x', { parts: [] }))).toBe(-32602);
    expect(await send(userMessage('x', { parts: [{ metadata: {} }] }))).toBe(-32602);
    expect(await send(userMessage('x', { role: 'ROLE_AGENT' }))).toBe(-32602);
    expect(await send(userMessage('x'.repeat(100_001)))).toBe(-32602);
    expect(await send(userMessage('x', { metadata: { big: 'y'.repeat(17_000) } }))).toBe(-32602);
    expect(await send(userMessage('x'), { returnImmediately: 'yes' })).toBe(-32602);
    expect(await send(userMessage('x', { parts: [{ url: 'https://example.com/a.txt' }] }))).toBe(-32005);
    expect(await send(userMessage('x', { parts: [{ text: 'a' }, { raw: 'aGk=' }] }))).toBe(-32005);
    expect(await a.errorCode('GetTask', {})).toBe(-32602);
    expect(await a.errorCode('GetTask', { id: randomUUID(), historyLength: -1 })).toBe(-32602);
    expect(await a.errorCode('ListTasks', { pageSize: 0 })).toBe(-32602);
    expect(await a.errorCode('ListTasks', { pageSize: 101 })).toBe(-32602);
    expect(await a.errorCode('ListTasks', { pageToken: 'garbage' })).toBe(-32602);
    expect(await a.errorCode('ListTasks', { status: 'working' })).toBe(-32602);
    expect((await a.rpc('ListTasks', {})).result.totalSize).toBe(0);
  });

  it('answers -32001 for an unknown task or one of another agent, -32002 for a finished one', async () => {
    for (const method of ['GetTask', 'CancelTask', 'SubscribeToTask']) {
      expect(await a.errorCode(method, { id: randomUUID() })).toBe(-32001);
      expect(await a.errorCode(method, { id: 'not-a-uuid' })).toBe(-32001);
    }
    const [otherAgent, done] = (await completedTask()).split('/') as [string, string];
    expect(await a.errorCode('GetTask', { id: done })).toBe(-32001);
    const message = userMessage('more', { taskId: done });
    expect(await a.errorCode('SendMessage', { message })).toBe(-32001);

    const own = a2aRpc(t, user, otherAgent);
    expect(await own.errorCode('CancelTask', { id: done })).toBe(-32002);
    expect(await own.errorCode('SubscribeToTask', { id: done })).toBe(-32004);
    expect(await own.errorCode('SendMessage', { message: userMessage('late', { taskId: done }) })).toBe(-32004);
    const task = (await own.rpc('GetTask', { id: done })).result;
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(
      await own.errorCode('SendMessage', { message: userMessage('x', { taskId: done, contextId: 'other' }) }),
    ).toBe(-32602);
  });

  it('answers -32002 to CancelTask on a cancelled or failed task and changes nothing; REST cancel stays idempotent', async () => {
    const agent = (await createAgent(t, user)).uuid;
    const own = a2aRpc(t, user, agent);
    const open = (await submitTask(t, user, agent)).task_id;
    const cancelled = (await own.rpc('CancelTask', { id: open })).result;
    expect(cancelled.status.state).toBe('TASK_STATE_CANCELED');
    const before = await getTask(t, user, agent, open);
    expect(await own.errorCode('CancelTask', { id: open })).toBe(-32002);
    expect(await own.errorCode('CancelTask', { id: open })).toBe(-32002);
    expect(await getTask(t, user, agent, open)).toEqual(before);
    expect((await own.rpc('GetTask', { id: open })).result.status).toEqual(cancelled.status);
    const rest = await cancelTask(t, user, agent, open);
    expect(rest.statusCode).toBe(200);
    expect(rest.json().cancelled_at).toBe(before.cancelled_at);

    const failing = (await submitTask(t, user, agent)).task_id;
    const claimed = await claimOne(t, user, agent);
    expect(claimed.task_id).toBe(failing);
    const failed = await reportFail(t, user, agent, failing, claimed.lease_id, { message: 'broke' }, false);
    expect(failed.statusCode).toBe(200);
    expect(await own.errorCode('CancelTask', { id: failing })).toBe(-32002);
    expect((await getTask(t, user, agent, failing)).status).toBe('failed');
  });

  it('answers -32004 when the agent does not accept tasks', async () => {
    const paused = (await createAgent(t, user)).uuid;
    expect(
      (await call(t.app, 'PATCH', `/agent/${paused}`, { token: user.token, body: { status: 'paused' } })).statusCode,
    ).toBe(200);
    const p = a2aRpc(t, user, paused);
    expect(await p.errorCode('SendMessage', { message: userMessage('hi') })).toBe(-32004);
    expect((await p.rpc('ListTasks', {})).result.totalSize).toBe(0);
  });
});

describe.each(DATABASES)('A2A duplicate messageIds on $name', (database) => {
  it('make one task however many arrive at once', async () => {
    const t = await buildTestApp(database);
    try {
      const user = await createUser(t);
      const agent = (await createAgent(t, user)).uuid;
      const a = a2aRpc(t, user, agent);
      const message = userMessage('only once');
      const answers = await Promise.all(
        Array.from({ length: 6 }, () => a.rpc('SendMessage', { message, configuration: { returnImmediately: true } })),
      );
      const ids = new Set(answers.map((x) => x.result.task.id));
      expect(ids.size).toBe(1);
      expect((await a.rpc('ListTasks', {})).result.totalSize).toBe(1);
      // The same messageId for a message to the task changes nothing either.
      const [taskId] = [...ids];
      const again = await a.rpc('SendMessage', {
        message: { ...message, taskId },
        configuration: { returnImmediately: true },
      });
      expect(again.result.task.history).toHaveLength(1);
    } finally {
      await t.close();
    }
  });
});

describe.each(DATABASES)('A2A blocking sends on $name', (database) => {
  it('answer with the task as it is after TASKHOOK_A2A_MAX_WAIT_SECONDS', async () => {
    const t = await buildTestApp(database, { config: { a2aMaxWaitSeconds: 1 } });
    try {
      const user = await createUser(t);
      const agent = (await createAgent(t, user)).uuid;
      const started = performance.now();
      const { result } = await a2aRpc(t, user, agent).rpc('SendMessage', { message: userMessage('nobody works') });
      expect(performance.now() - started).toBeGreaterThanOrEqual(900);
      expect(result.task.status.state).toBe('TASK_STATE_SUBMITTED');
    } finally {
      await t.close();
    }
  });
});
