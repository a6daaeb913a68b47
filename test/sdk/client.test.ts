import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BadRequestError, TaskhookClient, TaskhookError, type TaskView } from '@taskhook/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEventStream } from '../../sdks/typescript/src/sse.js';
import type { TestApp } from '../helpers/app.js';
import { DATABASES } from '../helpers/databases.js';
import { createAgent, createUser } from '../helpers/factories.js';
import { httpWorker, listeningApp, within } from './support.js';

const UNKNOWN_TASK = '0190b7a2-0000-7000-8000-000000000000';

/** The error a call fails with (it must fail). */
async function failure(promise: Promise<unknown>): Promise<TaskhookError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof TaskhookError)) throw new Error(`expected a TaskhookError, got ${String(err)}`);
  return err;
}

describe.each(DATABASES)('TaskhookClient on $name', (database) => {
  let t: TestApp;
  let baseUrl: string;

  beforeAll(async () => {
    ({ t, baseUrl } = await listeningApp(database));
  });
  afterAll(() => t.close());

  async function setup(agentBody: Record<string, unknown> = {}) {
    const user = await createUser(t);
    const agentId = (await createAgent(t, user, agentBody)).uuid;
    const client = new TaskhookClient({ baseUrl, apiKey: user.key });
    return { user, agentId, client, worker: httpWorker(baseUrl, user.key, agentId) };
  }

  it('submits (idempotently with a key), gets and lists tasks by status', async () => {
    const { agentId, client } = await setup();
    const input = { message: 'review PR 12', priority: 7, metadata: { pr: 12 } };
    const first = await client.submit(agentId, input, { idempotencyKey: 'pr-12' });
    expect(first).toMatchObject({ status: 'queued', task_id: expect.any(String) });
    expect(first.poll_url.endsWith(`/agent/${agentId}/task/${first.task_id}`)).toBe(true);
    const again = await client.submit(agentId, input, { idempotencyKey: 'pr-12' });
    expect(again.task_id).toBe(first.task_id);

    const reused = await failure(client.submit(agentId, { message: 'something else' }, { idempotencyKey: 'pr-12' }));
    expect(reused).toMatchObject({ status: 422, code: 'IDEMPOTENCY_KEY_REUSED' });

    const second = await client.submit(agentId, { message: 'review PR 13' });
    expect(second.task_id).not.toBe(first.task_id);

    const got = await client.get(agentId, first.task_id);
    expect(got).toMatchObject({
      task_id: first.task_id,
      status: 'queued',
      agent_uuid: agentId,
      message: 'review PR 12',
      priority: 7,
      metadata: { pr: 12 },
      messages: [{ role: 'user', content: 'review PR 12' }],
    });

    await client.cancel(agentId, second.task_id);
    const queued = await client.list(agentId, { status: 'queued' });
    expect(queued.tasks.map((x) => x.task_id)).toEqual([first.task_id]);
    expect(queued.pagination).toMatchObject({ total: 1 });
    const cancelled = await client.list(agentId, { status: 'cancelled' });
    expect(cancelled.tasks.map((x) => x.task_id)).toEqual([second.task_id]);
    const all = await client.list(agentId, { limit: 1 });
    expect(all.tasks.map((x) => x.task_id)).toEqual([second.task_id]); // newest first
    expect(all.pagination).toMatchObject({ limit: 1, total: 2 });
    const page2 = await client.list(agentId, { limit: 1, page: 2 });
    expect(page2.tasks.map((x) => x.task_id)).toEqual([first.task_id]);
  });

  it('messages and cancels a task; errors carry the status and code', async () => {
    const { agentId, client, worker } = await setup();
    const { task_id } = await client.submit(agentId, { message: 'review' });

    expect(await client.message(agentId, task_id, 'also look at the tests')).toEqual({
      task_id,
      status: 'queued',
      message_received: true,
    });
    expect((await client.get(agentId, task_id)).messages.map((m) => m.content)).toEqual([
      'review',
      'also look at the tests',
    ]);

    const cancelled = await client.cancel(agentId, task_id);
    expect(cancelled).toMatchObject({ task_id, status: 'cancelled', cancelled_at: expect.any(String) });
    expect(await client.cancel(agentId, task_id)).toEqual(cancelled);
    expect(await failure(client.message(agentId, task_id, 'hello?'))).toMatchObject({
      status: 400,
      code: 'TASK_NOT_ACCEPTING_MESSAGES',
    });

    const done = await client.submit(agentId, { message: 'quick one' });
    const claimed = await worker.claimOne();
    await worker.complete(claimed, { summary: 'fine' });
    const notCancellable = await failure(client.cancel(agentId, done.task_id));
    expect(notCancellable).toMatchObject({ name: 'BadRequestError', status: 400, code: 'TASK_NOT_CANCELLABLE' });
    expect(notCancellable).toBeInstanceOf(BadRequestError);
    expect(notCancellable.message).toEqual(expect.any(String));
    expect(notCancellable.body).toMatchObject({ error: { code: 'TASK_NOT_CANCELLABLE' } });

    expect(await failure(client.get(agentId, UNKNOWN_TASK))).toMatchObject({ status: 404, code: 'NOT_FOUND' });
    expect(await failure(client.message(agentId, task_id, ''))).toMatchObject({
      status: 400,
      code: 'INVALID_REQUEST',
    });
    expect(await failure(client.submit(agentId, { message: 'x', priority: 11 }))).toMatchObject({
      status: 400,
      code: 'INVALID_REQUEST',
    });

    // Another user's agent is not found; a bad key is a flat 401 without a code.
    const stranger = await setup();
    expect(await failure(stranger.client.get(agentId, task_id))).toMatchObject({ status: 404, code: 'NOT_FOUND' });
    const anonymous = new TaskhookClient({ baseUrl, apiKey: 'sk_service_not-a-key' });
    const unauthorized = await failure(anonymous.get(agentId, task_id));
    expect(unauthorized).toMatchObject({ status: 401, code: undefined });
    expect(unauthorized.message).not.toBe('');
  });

  it('waitFor resolves when a worker completes the task', async () => {
    const { agentId, client, worker } = await setup();
    const { task_id } = await client.submit(agentId, { message: 'review' });
    const waiting = client.waitFor(agentId, task_id, { intervalMs: 50, timeoutMs: 15_000 });

    const claimed = await worker.claimOne();
    await worker.progress(claimed, 'reading', 1, 2);
    await worker.complete(claimed, { summary: 'looks good', findings: [] });

    const done = await within(waiting, 15_000, 'waitFor');
    expect(done).toMatchObject({ task_id, status: 'completed', result: { summary: 'looks good', findings: [] } });
    expect(done.completed_at).toEqual(expect.any(String));
  });

  it('waitFor stops at the states in `until`, and gives up after `timeoutMs`', async () => {
    const { agentId, client, worker } = await setup();
    const { task_id } = await client.submit(agentId, { message: 'review' });
    await expect(client.waitFor(agentId, task_id, { intervalMs: 20, timeoutMs: 100 })).rejects.toThrow(/still queued/);

    const waiting = client.waitFor(agentId, task_id, { until: ['awaiting_input'], intervalMs: 50, timeoutMs: 15_000 });
    const claimed = await worker.claimOne();
    await worker.inputRequest(claimed, 'Which branch?');
    const asked = await within(waiting, 15_000, 'waitFor awaiting_input');
    expect(asked).toMatchObject({
      status: 'awaiting_input',
      input_request: { message: 'Which branch?', requested_at: expect.any(String) },
    });
    expect(asked.messages.map((m) => [m.role, m.content])).toEqual([
      ['user', 'review'],
      ['agent', 'Which branch?'],
    ]);
  });

  it('events() yields the current task, then every change, and ends after the final state', async () => {
    const { agentId, client, worker } = await setup();
    const { task_id } = await client.submit(agentId, { message: 'review' });
    const controller = new AbortController();
    const stream = client.events(agentId, task_id, { signal: controller.signal });
    const seen: Array<{ id: number; task: TaskView }> = [];
    const next = async () => {
      const r = await within(stream.next(), 10_000, 'an event');
      if (r.done) throw new Error('the stream ended early');
      seen.push(r.value);
      return r.value.task;
    };
    try {
      expect(await next()).toMatchObject({ task_id, status: 'queued' });
      const claimed = await worker.claimOne();
      expect(await next()).toMatchObject({ status: 'running' });
      await worker.progress(claimed, 'reading', 1, 3);
      expect(await next()).toMatchObject({
        status: 'running',
        progress: { current_step: 'reading', steps_completed: 1, total_steps: 3 },
      });
      await worker.inputRequest(claimed, 'Which branch?');
      expect(await next()).toMatchObject({ status: 'awaiting_input', input_request: { message: 'Which branch?' } });
      await client.message(agentId, task_id, 'main');
      expect(await next()).toMatchObject({ status: 'running' });
      const again = await worker.claimOne();
      await worker.complete(again, { summary: 'done' });
      // Whatever comes next, the stream ends by itself after `completed`.
      for (;;) {
        const r = await within(stream.next(), 10_000, 'the end of the stream');
        if (r.done) break;
        seen.push(r.value);
      }
    } finally {
      controller.abort();
    }

    const last = seen.at(-1)?.task;
    expect(last).toMatchObject({ status: 'completed', result: { summary: 'done' } });
    expect(last?.messages.map((m) => m.content)).toEqual(['review', 'Which branch?', 'main']);
    const ids = seen.map((e) => e.id);
    expect(ids.every((id, i) => Number.isInteger(id) && (i === 0 || id > (ids[i - 1] as number)))).toBe(true);
    expect(seen.every((e) => e.task.task_id === task_id)).toBe(true);

    // Resuming after the awaiting_input event yields only what came later.
    const askedAt = seen.findIndex((e) => e.task.status === 'awaiting_input');
    const resumed: Array<{ id: number; task: TaskView }> = [];
    await within(
      (async () => {
        for await (const e of client.events(agentId, task_id, { lastEventId: String(seen[askedAt]?.id) })) {
          resumed.push(e);
        }
      })(),
      10_000,
      'the resumed stream',
    );
    expect(resumed).toEqual(seen.slice(askedAt + 1));

    // Resuming after the final event ends at once.
    const after: unknown[] = [];
    for await (const e of client.events(agentId, task_id, { lastEventId: String(ids.at(-1)) })) after.push(e);
    expect(after).toEqual([]);
  });

  it('events() of a finished task is just that task; breaking out early closes the stream', async () => {
    const { agentId, client } = await setup();
    const a = await client.submit(agentId, { message: 'one' });
    await client.cancel(agentId, a.task_id);
    const whole: TaskView[] = [];
    for await (const e of client.events(agentId, a.task_id)) whole.push(e.task);
    expect(whole.map((x) => x.status)).toEqual(['cancelled']);

    const b = await client.submit(agentId, { message: 'two' });
    for await (const e of client.events(agentId, b.task_id)) {
      expect(e.task.status).toBe('queued');
      break;
    }
    // The connection was closed, so the task can still change and be read normally.
    await client.cancel(agentId, b.task_id);
    expect((await client.get(agentId, b.task_id)).status).toBe('cancelled');
  });

  it('events() of an unknown task fails with a TaskhookError 404 NOT_FOUND', async () => {
    const { agentId, client } = await setup();
    const err = await failure(client.events(agentId, UNKNOWN_TASK).next());
    expect(err).toMatchObject({ status: 404, code: 'NOT_FOUND' });
  });
});

describe('SDK transport', () => {
  it('parses server-sent events split across chunks, with CRLF, comments and multi-line data', async () => {
    const text = ': hello\r\nid: 1\r\nevent: task\r\ndata: {"a":\r\ndata: 1}\r\n\r\nretry: 10\n\nid: 2\ndata: x\n\n';
    const bytes = new TextEncoder().encode(text);
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 3) controller.enqueue(bytes.slice(i, i + 3));
        controller.close();
      },
    });
    const events = [];
    for await (const e of parseEventStream(body)) events.push(e);
    expect(events).toEqual([
      { id: '1', event: 'task', data: '{"a":\n1}' },
      { id: '2', event: 'message', data: 'x' },
    ]);
  });

  it('cancels the body when the consumer stops early', async () => {
    let cancelled = false;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('data: one\n\ndata: two\n\n'));
      },
      cancel() {
        cancelled = true;
      },
    });
    for await (const e of parseEventStream(body)) {
      expect(e.data).toBe('one');
      break;
    }
    expect(cancelled).toBe(true);
  });

  it('turns a non-JSON error answer (a proxy page) into a TaskhookError with the status', async () => {
    const server = createServer((_req, res) => {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.end('<html><body>Bad gateway</body></html>');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const port = (server.address() as AddressInfo).port;
      const client = new TaskhookClient({ baseUrl: `http://127.0.0.1:${port}/api`, apiKey: 'k', maxRetries: 0 });
      const err = await failure(client.get(UNKNOWN_TASK, UNKNOWN_TASK));
      expect(err).toMatchObject({
        name: 'ServerError',
        status: 502,
        code: undefined,
        message: 'The server answered HTTP 502',
      });
      expect(err.body).toContain('Bad gateway');
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
