import { randomUUID } from 'node:crypto';
import {
  ListTasksRequest,
  type Message,
  SendMessageRequest,
  StreamResponse,
  Task,
  type Task as TaskType,
} from '@a2a-js/sdk';
import {
  type Client,
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import { type RunningWorker, runWorker, type TaskHandler, TaskhookClient } from '@taskhook/sdk';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { freePort } from '../../helpers/server-process.js';
import { within } from '../../sdk/support.js';
import type { Json } from './a2a-rpc.js';

/** A promise the test opens when it wants. */
function gate() {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

/** `fetch` that adds the user's platform key, as an A2A client configured with a credential does. */
const withKey =
  (key: string): typeof fetch =>
  (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('x-service-api-key', key);
    return fetch(input, { ...init, headers });
  };

type Binding = 'JSONRPC' | 'HTTP+JSON';

/** An `@a2a-js/sdk` client of the agent, built from its card, on the interface of `binding`. */
async function a2aClient(baseUrl: string, agentId: string, key: string, binding: Binding): Promise<Client> {
  const fetchImpl = withKey(key);
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
      preferredTransports: [binding],
    }),
  );
  const client = await factory.createFromUrl(`${baseUrl}/a2a/${agentId}/`);
  // The client speaks the binding asked for (the card lists both).
  expect((client as unknown as { transport: { protocolName: string } }).transport.protocolName).toBe(binding);
  return client;
}

/** A SendMessage request from ProtoJSON (the SDK's own decoder). */
function sendRequest(text: string, message: Record<string, unknown> = {}, configuration: Record<string, unknown> = {}) {
  return SendMessageRequest.fromJSON({
    message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }], ...message },
    configuration,
  });
}

/** The wire (ProtoJSON) form of what the SDK decoded, to compare with the contract's spelling. */
const wire = (value: Message | TaskType): Json =>
  'status' in value ? Task.toJSON(value) : { message: (value as Message).messageId };

async function collect<T>(stream: AsyncGenerator<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of stream) out.push(item);
  return out;
}

/**
 * The worker's rules, by the task's first message: `ask` asks which file and completes with the
 * answer; `slow` waits for the test's gate (or the cancel); `steps` reports progress first;
 * anything else completes at once with a finding.
 */
function handlerWith(slow: { started: () => void; release: Promise<void> }): TaskHandler {
  return async (task, ctx) => {
    if (task.message === 'ask') {
      const reply = task.messages.find((m, i) => i > 0 && m.role === 'user');
      if (!reply) return ctx.askForInput('Which file?');
      return { summary: `reviewed ${reply.content}`, findings: [] };
    }
    if (task.message === 'slow') {
      slow.started();
      await Promise.race([
        slow.release,
        new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true })),
      ]);
      return { summary: 'slow done', findings: [] };
    }
    if (task.message === 'steps') await ctx.progress('reading', 1, 2, true);
    return {
      summary: `done: ${task.message}`,
      findings: [{ file: 'a.ts', line: 3, severity: 'low', message: 'm' }],
    };
  };
}

const BINDINGS: Binding[] = ['JSONRPC', 'HTTP+JSON'];
const CASES = DATABASES.flatMap((database) => BINDINGS.map((binding) => ({ database, binding, name: database.name })));

/** The A2A error a call fails with, as the SDK names it on either binding. */
const a2aError = (name: string) => expect.objectContaining({ name });

/** Invalid parameters: -32602 over JSON-RPC, a 400 over HTTP+JSON. */
const invalidParams = (binding: Binding) =>
  binding === 'JSONRPC'
    ? expect.objectContaining({ envelopeCode: -32602 })
    : expect.objectContaining({ statusCode: 400 });

describe.each(CASES)('a taskhook agent driven by the A2A SDK over $binding on $name', ({ database, binding }) => {
  let t: TestApp;
  let baseUrl: string;
  const workers: RunningWorker[] = [];

  beforeAll(async () => {
    // The card names the endpoint by the public URL: the app listens where that URL says.
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    t = await buildTestApp(database, { config: { publicUrl: baseUrl } });
    await t.app.listen({ port, host: '127.0.0.1' });
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
  });
  afterAll(() => t.close());

  async function setup(opts: { worker?: boolean } = {}) {
    const user: TestUser = await createUser(t);
    const agentId = (await createAgent(t, user, { name: 'reviewer', description: 'Reviews diffs' })).uuid;
    const started = gate();
    const release = gate();
    if (opts.worker !== false) {
      workers.push(
        runWorker({
          baseUrl,
          apiKey: user.key,
          agentId,
          handler: handlerWith({ started: started.open, release: release.opened }),
          concurrency: 4,
          waitSeconds: 1,
          // Heartbeats every second: a cancelled handler hears of it soon.
          leaseSeconds: 3,
          gracePeriodMs: 1000,
          handleSignals: false,
          log: () => {},
        }),
      );
    }
    const client = await a2aClient(baseUrl, agentId, user.key, binding);
    return { user, agentId, client, started, release };
  }

  it('serves the card with the fields of the contract', async () => {
    const { user, agentId, client } = await setup({ worker: false });
    const res = await fetch(`${baseUrl}/a2a/${agentId}/.well-known/agent-card.json`, {
      headers: { authorization: `Bearer ${user.token}` },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      name: 'reviewer',
      description: 'Reviews diffs',
      version: '1.0.0',
      supportedInterfaces: [
        { url: `${t.config.publicUrl}/a2a/${agentId}`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
        { url: `${t.config.publicUrl}/a2a/${agentId}`, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
      ],
      provider: { organization: 'taskhook', url: t.config.publicUrl },
      capabilities: { streaming: true, pushNotifications: true, extendedAgentCard: false },
      securitySchemes: {
        platform_key: { apiKeySecurityScheme: { location: 'header', name: 'x-service-api-key' } },
        bearer: { httpAuthSecurityScheme: { scheme: 'Bearer' } },
      },
      securityRequirements: [{ schemes: { platform_key: { list: [] } } }, { schemes: { bearer: { list: [] } } }],
      defaultInputModes: ['text/plain', 'application/json'],
      defaultOutputModes: ['text/plain', 'application/json'],
      skills: [{ id: 'task', name: 'reviewer', description: 'Reviews diffs', tags: ['taskhook'] }],
    });
    const card = await client.getAgentCard();
    expect(card.name).toBe('reviewer');
    expect(card.capabilities?.streaming).toBe(true);
  });

  it('sends a blocking message: the answer is the completed task with its result artifact', async () => {
    const { client } = await setup();
    const contextId = randomUUID();
    const request = sendRequest('check this', { contextId, metadata: { ticket: 42 } });
    const answer = wire(await client.sendMessage(request));
    expect(answer).toMatchObject({
      contextId,
      status: { state: 'TASK_STATE_COMPLETED' },
      metadata: { ticket: 42 },
      history: [{ messageId: request.message?.messageId, role: 'ROLE_USER', parts: [{ text: 'check this' }] }],
      artifacts: [
        {
          artifactId: 'result',
          name: 'result',
          parts: [
            { text: 'done: check this' },
            {
              data: {
                summary: 'done: check this',
                findings: [{ file: 'a.ts', line: 3, severity: 'low', message: 'm' }],
              },
              mediaType: 'application/json',
            },
          ],
        },
      ],
    });
    const got = wire(await client.getTask({ tenant: '', id: answer.id }));
    expect(got).toEqual(answer);
    expect(wire(await client.getTask({ tenant: '', id: answer.id, historyLength: 0 })).history).toBeUndefined();
  });

  it('returns at once with returnImmediately, and GetTask follows the task to its end', async () => {
    const { client, agentId, user } = await setup();
    const first = wire(await client.sendMessage(sendRequest('later', {}, { returnImmediately: true })));
    expect(first.status.state).toBe('TASK_STATE_SUBMITTED');
    // The REST API sees the same task.
    const rest = new TaskhookClient({ baseUrl, apiKey: user.key });
    const done = await rest.waitFor(agentId, first.id, { intervalMs: 50, timeoutMs: 20_000 });
    expect(done.status).toBe('completed');
    expect(wire(await client.getTask({ tenant: '', id: first.id })).status.state).toBe('TASK_STATE_COMPLETED');
  });

  it('asks for input, and the reply with the taskId completes the task', async () => {
    const { client } = await setup();
    const ask = sendRequest('ask');
    const asked = wire(await client.sendMessage(ask));
    expect(asked.status).toMatchObject({
      state: 'TASK_STATE_INPUT_REQUIRED',
      message: { role: 'ROLE_AGENT', parts: [{ text: 'Which file?' }] },
    });
    const reply = sendRequest('a.ts', { taskId: asked.id, contextId: asked.contextId });
    const done = wire(await client.sendMessage(reply));
    expect(done.id).toBe(asked.id);
    expect(done.status.state).toBe('TASK_STATE_COMPLETED');
    expect(done.artifacts[0].parts[0]).toEqual({ text: 'reviewed a.ts' });
    expect(done.history.map((m: Json) => [m.role, m.parts[0].text])).toEqual([
      ['ROLE_USER', 'ask'],
      ['ROLE_AGENT', 'Which file?'],
      ['ROLE_USER', 'a.ts'],
    ]);
    expect(done.history[0].messageId).toBe(ask.message?.messageId);
    expect(done.history[2].messageId).toBe(reply.message?.messageId);
    expect(done.history[1].messageId).toBe(asked.status.message.messageId);
  });

  it('returns the same task for a repeated messageId and creates nothing', async () => {
    const { client } = await setup({ worker: false });
    const request = sendRequest('once', {}, { returnImmediately: true });
    const first = wire(await client.sendMessage(request));
    const again = wire(await client.sendMessage(request));
    expect(again.id).toBe(first.id);
    const listed = await client.listTasks(ListTasksRequest.fromJSON({}));
    expect(listed.tasks.map((task) => task.id)).toEqual([first.id]);
  });

  it('cancels a running task and refuses to cancel it again or to cancel a completed one', async () => {
    const { client, started } = await setup();
    const sent = wire(await client.sendMessage(sendRequest('slow', {}, { returnImmediately: true })));
    await within(started.opened, 15_000, 'the worker to start the task');
    const cancelled = wire(await client.cancelTask({ tenant: '', id: sent.id, metadata: undefined }));
    expect(cancelled.status.state).toBe('TASK_STATE_CANCELED');
    await expect(client.cancelTask({ tenant: '', id: sent.id, metadata: undefined })).rejects.toEqual(
      a2aError('TaskNotCancelableError'),
    );
    expect(wire(await client.getTask({ tenant: '', id: sent.id })).status).toEqual(cancelled.status);
    const done = wire(await client.sendMessage(sendRequest('quick')));
    await expect(client.cancelTask({ tenant: '', id: done.id, metadata: undefined })).rejects.toEqual(
      a2aError('TaskNotCancelableError'),
    );
    await expect(client.getTask({ tenant: '', id: randomUUID() })).rejects.toEqual(a2aError('TaskNotFoundError'));
  });

  it('streams a new task: the task, status updates, the result artifact, then completed', async () => {
    const { client } = await setup();
    const events = (await collect(client.sendMessageStream(sendRequest('steps')))).map((e) =>
      StreamResponse.toJSON(e),
    ) as Json[];
    expect(events[0].task.status.state).toBe('TASK_STATE_SUBMITTED');
    const taskId = events[0].task.id;
    const last = events.at(-1);
    const beforeLast = events.at(-2);
    expect(last.statusUpdate).toMatchObject({ taskId, status: { state: 'TASK_STATE_COMPLETED' } });
    expect(beforeLast.artifactUpdate).toMatchObject({ taskId, lastChunk: true, artifact: { artifactId: 'result' } });
    const working = events.slice(1, -2).map((e) => e.statusUpdate);
    expect(working.every((u) => u.status.state === 'TASK_STATE_WORKING')).toBe(true);
    expect(working.some((u) => u.status.message?.parts[0].text === 'reading')).toBe(true);
  });

  it('subscribes to a running task until it completes', async () => {
    const { client, started, release } = await setup();
    const sent = wire(await client.sendMessage(sendRequest('slow', {}, { returnImmediately: true })));
    await within(started.opened, 15_000, 'the worker to start the task');
    const stream = client.resubscribeTask({ tenant: '', id: sent.id });
    const first = await stream.next();
    expect(StreamResponse.toJSON(first.value as StreamResponse)).toMatchObject({
      task: { id: sent.id, status: { state: 'TASK_STATE_WORKING' } },
    });
    release.open();
    const rest = (await collect(stream)).map((e) => StreamResponse.toJSON(e) as Json);
    expect(rest.at(-1).statusUpdate.status.state).toBe('TASK_STATE_COMPLETED');
    expect(rest.at(-2).artifactUpdate.artifact.parts[0]).toEqual({ text: 'slow done' });
  });

  it('lists tasks newest first, by page, context and state', async () => {
    const { client, user, agentId } = await setup({ worker: false });
    const contextId = randomUUID();
    const ids: string[] = [];
    for (const text of ['one', 'two', 'three']) {
      ids.push(wire(await client.sendMessage(sendRequest(text, { contextId }, { returnImmediately: true }))).id);
    }
    const rest = await new TaskhookClient({ baseUrl, apiKey: user.key }).submit(agentId, { message: 'over REST' });
    const list = (params: Record<string, unknown>) => client.listTasks(ListTasksRequest.fromJSON(params));

    const page1 = await list({ pageSize: 2 });
    expect(page1.tasks.map((x) => x.id)).toEqual([rest.task_id, ids[2]]);
    expect(page1.totalSize).toBe(4);
    expect(page1.pageSize).toBe(2);
    const page2 = await list({ pageSize: 2, pageToken: page1.nextPageToken });
    expect(page2.tasks.map((x) => x.id)).toEqual([ids[1], ids[0]]);
    expect(page2.nextPageToken).toBe('');
    // `pageSize` is the page size used, not the number of tasks on a short last page.
    const short = await list({ pageSize: 3, pageToken: page1.nextPageToken });
    expect(short.tasks).toHaveLength(2);
    expect(short.pageSize).toBe(3);
    expect((await list({})).pageSize).toBe(50);

    expect((await list({ contextId })).tasks.map((x) => x.id)).toEqual([ids[2], ids[1], ids[0]]);
    const byTaskId = await list({ contextId: rest.task_id });
    expect(byTaskId.tasks.map((x) => wire(x).contextId)).toEqual([rest.task_id]);
    expect((await list({ status: 'TASK_STATE_SUBMITTED' })).totalSize).toBe(4);
    expect((await list({ status: 'TASK_STATE_COMPLETED' })).totalSize).toBe(0);
    expect((await list({ historyLength: 0 })).tasks.every((x) => x.history.length === 0)).toBe(true);
  });

  it('ListTasks leaves artifacts out unless includeArtifacts is true', async () => {
    const { client } = await setup();
    const done = wire(await client.sendMessage(sendRequest('quick')));
    expect(done.status.state).toBe('TASK_STATE_COMPLETED');
    const list = (params: Record<string, unknown>) => client.listTasks(ListTasksRequest.fromJSON(params));
    expect((await list({})).tasks.map((x) => x.artifacts)).toEqual([[]]);
    expect((await list({ includeArtifacts: false })).tasks.map((x) => x.artifacts)).toEqual([[]]);
    const full = await list({ includeArtifacts: true });
    expect(full.tasks.map((x) => x.artifacts.map((a) => a.artifactId))).toEqual([['result']]);
    expect((await client.getTask({ tenant: '', id: done.id })).artifacts).toHaveLength(1);
  });

  it('ListTasks keeps only tasks whose status changed after statusTimestampAfter, and refuses a bad one', async () => {
    const { client } = await setup();
    const done = wire(await client.sendMessage(sendRequest('quick')));
    const at: string = done.status.timestamp;
    const list = (params: Record<string, unknown>) => client.listTasks(ListTasksRequest.fromJSON(params));
    const justBefore = new Date(Date.parse(at) - 1).toISOString();
    const before = await list({ statusTimestampAfter: justBefore });
    expect(before.tasks.map((x) => x.id)).toEqual([done.id]);
    expect(before.totalSize).toBe(1);
    // The same instant in another offset is the same time.
    const inParis = new Date(Date.parse(justBefore) + 3_600_000).toISOString().replace('Z', '+01:00');
    expect((await list({ statusTimestampAfter: inParis })).totalSize).toBe(1);
    const after = await list({ statusTimestampAfter: at });
    expect(after.tasks).toEqual([]);
    expect(after.totalSize).toBe(0);
    for (const bad of ['yesterday', '2026-13-01T00:00:00Z', '2026-01-01']) {
      await expect(list({ statusTimestampAfter: bad })).rejects.toEqual(invalidParams(binding));
    }
  });

  it('refuses a message without role (a required field) with -32602, creating nothing', async () => {
    const { client } = await setup({ worker: false });
    for (const role of [undefined, 'ROLE_UNSPECIFIED']) {
      await expect(client.sendMessage(sendRequest('no role', { role }, { returnImmediately: true }))).rejects.toEqual(
        invalidParams(binding),
      );
    }
    expect((await client.listTasks(ListTasksRequest.fromJSON({}))).totalSize).toBe(0);
  });
});
