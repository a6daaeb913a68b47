import { type RunningWorker, runWorker, type TaskHandler } from '@taskhook/sdk';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { freePort } from '../../helpers/server-process.js';

/** `ask` asks which file, `boom` fails; anything else completes at once. */
const handler: TaskHandler = async (task, ctx) => {
  if (task.message === 'ask') {
    const reply = task.messages.find((m, i) => i > 0 && m.role === 'user');
    if (!reply) return ctx.askForInput('Which file?');
    return { summary: `reviewed ${reply.content}`, findings: [] };
  }
  if (task.message === 'boom') throw new Error('it broke');
  return { summary: `done: ${task.message}`, findings: [] };
};

// biome-ignore lint/suspicious/noExplicitAny: the tests read nested result fields freely
type Loose = Record<string, any>;
type Answer = { status: number; result: Loose; error?: { code: number; message: string } };
const V = '2026-07-28';
const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} }, elicitation: {} };

describe.each(DATABASES)('MCP 2026-07-28 tasks and questions across two instances on $name', (database) => {
  let a: TestApp;
  let b: TestApp;
  let urlA: string;
  let urlB: string;
  const workers: RunningWorker[] = [];

  beforeAll(async () => {
    const [portA, portB] = [await freePort(), await freePort()];
    urlA = `http://127.0.0.1:${portA}`;
    urlB = `http://127.0.0.1:${portB}`;
    a = await buildTestApp(database, { config: { publicUrl: urlA } });
    b = await buildTestApp(database, { config: { publicUrl: urlB, dataDir: a.config.dataDir } });
    await a.app.listen({ port: portA, host: '127.0.0.1' });
    await b.app.listen({ port: portB, host: '127.0.0.1' });
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  async function setup() {
    const user: TestUser = await createUser(a);
    const agentId = (await createAgent(a, user, { name: 'reviewer' })).uuid;
    workers.push(runWorker({ baseUrl: urlA, apiKey: user.key, agentId, handler, waitSeconds: 1 }));
    return user;
  }

  /** One modern request (the headers as the SDK client sends them); an SSE answer's last message. */
  async function rpc(url: string, key: string, method: string, params: Record<string, unknown>, caps: object = TASKS) {
    const name = method === 'tools/call' ? params.name : params.taskId;
    const res = await fetch(`${url}/mcp`, {
      method: 'POST',
      headers: {
        'x-service-api-key': key,
        accept: 'application/json, text/event-stream',
        'content-type': 'application/json',
        'mcp-protocol-version': V,
        'mcp-method': method,
        ...(typeof name === 'string' ? { 'mcp-name': name } : {}),
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method,
        params: {
          ...params,
          _meta: {
            'io.modelcontextprotocol/protocolVersion': V,
            'io.modelcontextprotocol/clientCapabilities': caps,
          },
        },
      }),
    });
    const text = await res.text();
    const last = text.startsWith('{')
      ? text
      : (text
          .match(/^data: .*$/gm)
          ?.pop()
          ?.slice(6) ?? 'null');
    const body = JSON.parse(last) as { result: Loose; error?: { code: number; message: string } };
    return { status: res.status, result: body?.result, error: body?.error } as Answer;
  }

  /** tasks/get at `url` until the task's status is `status`. */
  async function until(url: string, key: string, taskId: string, status: string) {
    for (;;) {
      const got = await rpc(url, key, 'tasks/get', { taskId });
      if (got.result.status === status) return got.result;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  it('creates a task on one instance and follows it, answers its question and reads its result on the other', async () => {
    const user = await setup();
    const created = await rpc(urlA, user.key, 'tools/call', { name: 'reviewer', arguments: { message: 'ask' } });
    expect(created.result).toMatchObject({ resultType: 'task', status: 'working', ttlMs: null, pollIntervalMs: 1000 });
    expect(created.result._meta['io.modelcontextprotocol/serverInfo'].name).toBe('taskhook');
    const taskId = created.result.taskId as string;
    const waiting = await until(urlB, user.key, taskId, 'input_required');
    expect(waiting.statusMessage).toBe('Which file?');
    const n = Object.keys(waiting.inputRequests)[0] as string;
    expect(n).toMatch(/^question-\d+$/);
    expect(waiting.inputRequests[n]).toMatchObject({ method: 'elicitation/create', params: { mode: 'form' } });
    const plain = await rpc(urlB, user.key, 'tasks/get', { taskId }, { extensions: TASKS.extensions });
    expect(plain.result.inputRequests).toEqual({});
    // Stale keys and refusals are ignored; the accepted answer goes to the worker.
    const ignored = { 'question-99': { action: 'accept', content: { answer: 'x' } }, [n]: { action: 'decline' } };
    expect((await rpc(urlB, user.key, 'tasks/update', { taskId, inputResponses: ignored })).result).toMatchObject({
      resultType: 'complete',
    });
    expect((await rpc(urlB, user.key, 'tasks/get', { taskId })).result.status).toBe('input_required');
    const bad = await rpc(urlB, user.key, 'tasks/update', { taskId, inputResponses: 'yes' });
    expect(bad.error?.code).toBe(-32602);
    const answer = { [n]: { action: 'accept', content: { answer: 'a.ts' } } };
    await rpc(urlB, user.key, 'tasks/update', { taskId, inputResponses: answer });
    const done = await until(urlB, user.key, taskId, 'completed');
    expect(done.result).toMatchObject({
      resultType: 'complete',
      isError: false,
      structuredContent: { status: 'completed', result: { summary: 'reviewed a.ts' } },
    });
    // A 2025 client sees the same task in its revision's shape, and in tasks/list.
    const legacy = await fetch(`${urlB}/mcp`, {
      method: 'POST',
      headers: {
        'x-service-api-key': user.key,
        accept: 'application/json, text/event-stream',
        'content-type': 'application/json',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { taskId } }),
    });
    expect(((await legacy.json()) as Answer).result).toMatchObject({ taskId, status: 'completed', ttl: null });
  });

  it('reports a failure as a completed call with isError, and cancels what can be cancelled', async () => {
    const user = await setup();
    const boom = await rpc(urlA, user.key, 'tools/call', { name: 'reviewer', arguments: { message: 'boom' } });
    const failed = await until(urlB, user.key, boom.result.taskId, 'completed');
    expect(failed.statusMessage).toBe('it broke');
    expect(failed.result.isError).toBe(true);
    expect((await rpc(urlB, user.key, 'tasks/cancel', { taskId: boom.result.taskId })).result).toMatchObject({
      resultType: 'complete',
    });
    expect((await rpc(urlB, user.key, 'tasks/get', { taskId: boom.result.taskId })).result.status).toBe('completed');
    const ask = await rpc(urlA, user.key, 'tools/call', { name: 'reviewer', arguments: { message: 'ask' } });
    await until(urlB, user.key, ask.result.taskId, 'input_required');
    await rpc(urlB, user.key, 'tasks/cancel', { taskId: ask.result.taskId });
    expect((await rpc(urlA, user.key, 'tasks/get', { taskId: ask.result.taskId })).result.status).toBe('cancelled');
    expect((await rpc(urlA, user.key, 'tasks/cancel', { taskId: ask.result.taskId })).status).toBe(200);
    const unknown = await rpc(urlA, user.key, 'tasks/get', { taskId: '00000000-0000-0000-0000-000000000000' });
    expect(unknown.error?.code).toBe(-32602);
    const other = await createUser(a);
    expect((await rpc(urlA, other.key, 'tasks/get', { taskId: ask.result.taskId })).error?.code).toBe(-32602);
  });

  it('takes the retry of a question at the other instance, refusing a requestState bound to another call', async () => {
    const user = await setup();
    const caps = { elicitation: { form: {} } };
    const call = { name: 'reviewer', arguments: { message: 'ask' } };
    const asked = await rpc(urlA, user.key, 'tools/call', call, caps);
    expect(asked.result).toMatchObject({ resultType: 'input_required' });
    const { requestState, inputRequests } = asked.result as { requestState: string; inputRequests: object };
    const key = Object.keys(inputRequests)[0] as string;
    expect(requestState.length).toBeLessThanOrEqual(4096);
    // Checks at B (which verifies A's state); the waiting retries at A, where the worker reports (on SQLite
    // another instance's writes wake no wait).
    const retry = (extra: Record<string, unknown>, by = user.key, url = urlB) =>
      rpc(url, by, 'tools/call', { ...call, requestState, ...extra }, caps);
    expect((await retry({ requestState: `${requestState}x` })).error?.code).toBe(-32602);
    expect((await retry({ arguments: { message: 'other' } })).error?.code).toBe(-32602);
    const other = await createUser(a);
    await createAgent(a, other, { name: 'reviewer' });
    expect((await retry({}, other.key)).error?.code).toBe(-32602);
    // No usable answer: asked again at once; then the answer is sent once and the retry waits for the result.
    const again = await retry({ inputResponses: { [key]: { action: 'accept', content: { answer: '' } } } });
    expect(again.result).toMatchObject({ resultType: 'input_required', inputRequests });
    const done = await retry(
      { inputResponses: { [key]: { action: 'accept', content: { answer: 'b.ts' } } } },
      user.key,
      urlA,
    );
    expect(done.result).toMatchObject({
      resultType: 'complete',
      structuredContent: { status: 'completed', result: { summary: 'reviewed b.ts' } },
    });
    const twice = await retry(
      { inputResponses: { [key]: { action: 'accept', content: { answer: 'c.ts' } } } },
      user.key,
      urlA,
    );
    expect(twice.result.structuredContent).toMatchObject({ status: 'completed', result: { summary: 'reviewed b.ts' } });
  });
});
