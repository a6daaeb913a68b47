import { beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { type CapturedRequest, eventually, useCallbackApp, verifyCallback } from '../../helpers/callbacks.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { claimOne, reportComplete, reportInputRequest, reportProgress, workerHeaders } from '../../helpers/tasks.js';
import { a2aRpc, type Json, userMessage } from './a2a-rpc.js';

/*
 * A2A push notifications: each state change of a task after its config was stored is POSTed to
 * the config's URL as `{"task": Task}`, with its authentication and token, signed per Standard
 * Webhooks like callbacks, retried, in order per config, and listed in the deliveries log.
 * Receivers are real HTTP servers on 127.0.0.1.
 */

const CONFIG = { allowPrivateUrls: true, callbackRetrySchedule: [60], callbackTimeoutMs: 1_000 };

const stateOf = (r: CapturedRequest) => (JSON.parse(r.body) as Json).task.status.state as string;

describe.each(DATABASES)('A2A push delivery on $name', (database) => {
  const h = useCallbackApp(database, CONFIG);
  let t: TestApp;
  let user: TestUser;
  let agentId: string;
  beforeAll(async () => {
    t = h.t;
    user = await createUser(t);
    agentId = (await createAgent(t, user)).uuid;
  });

  const rpc = () => a2aRpc(t, user, agentId);

  async function sendWithPush(push: Record<string, unknown>) {
    const res = await rpc().rpc('SendMessage', {
      message: userMessage('notify me'),
      configuration: { returnImmediately: true, taskPushNotificationConfig: push },
    });
    expect(res.result, JSON.stringify(res)).toBeDefined();
    return res.result.task as Json;
  }

  it('sends the creation and every state change, with its authentication, token and signature', async () => {
    const r = await h.receiver();
    const task = await sendWithPush({
      id: 'main',
      url: `${r.url}?from=a2a`,
      token: 'the-token',
      authentication: { scheme: 'Bearer', credentials: 'receiver-secret' },
    });
    await eventually(() => (r.requests.length === 1 ? true : undefined), 'the creation notification');
    const lease = (await claimOne(t, user, agentId)).lease_id;
    await eventually(() => (r.requests.length === 2 ? true : undefined), 'the working notification');
    // A progress report changes no state: nothing is sent.
    const progress = { lease_id: lease, current_step: 'reading', steps_completed: 1, total_steps: 2 };
    expect((await reportProgress(t, user, agentId, task.id, progress)).statusCode).toBe(200);
    const result = { summary: 'done', findings: [] };
    expect((await reportComplete(t, user, agentId, task.id, lease, result)).statusCode).toBe(200);
    const log = await h.settled(user, agentId, task.id, 3);
    expect(r.requests.map(stateOf)).toEqual(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']);

    const secret = await h.signingSecret(user);
    const last = r.requests[2] as CapturedRequest;
    expect(last.method).toBe('POST');
    expect(last.path).toBe('/hook?from=a2a');
    expect(last.headers['content-type']).toBe('application/a2a+json');
    expect(last.headers.authorization).toBe('Bearer receiver-secret');
    expect(last.headers['x-a2a-notification-token']).toBe('the-token');
    expect(last.headers['x-api-key']).toBeUndefined();
    const body = verifyCallback(secret, last) as Json;
    // The Task as GetTask with historyLength 0 answers it (no history), the result artifact included.
    const got = (await rpc().rpc('GetTask', { id: task.id, historyLength: 0 })).result;
    expect(body).toEqual({ task: got });
    expect(body.task.history ?? []).toEqual([]);
    expect(body.task.artifacts[0].artifactId).toBe('result');

    expect(log.map((d) => [d.event_type, (d as Json).push_config_id, d.status])).toEqual([
      ['a2a.submitted', 'main', 'delivered'],
      ['a2a.working', 'main', 'delivered'],
      ['a2a.completed', 'main', 'delivered'],
    ]);
    expect(log.map((d) => d.delivery_id)).toEqual(r.requests.map((q) => q.headers['webhook-id']));
    // No secret of the config is shown by the deliveries log.
    expect(JSON.stringify(log)).not.toMatch(/receiver-secret|the-token/);
  });

  it('sends the change a message with a config causes, then the cancellation; nothing for the earlier state', async () => {
    const r = await h.receiver();
    const task = (
      await rpc().rpc('SendMessage', { message: userMessage('ask me'), configuration: { returnImmediately: true } })
    ).result.task;
    const lease = (await claimOne(t, user, agentId)).lease_id;
    expect((await reportInputRequest(t, user, agentId, task.id, lease, 'Which branch?')).statusCode).toBe(200);
    // The config comes with the reply, so the change the reply causes is sent to it.
    const reply = await rpc().rpc('SendMessage', {
      message: userMessage('main', { taskId: task.id }),
      configuration: { returnImmediately: true, taskPushNotificationConfig: { taskId: task.id, url: r.url } },
    });
    const afterReply = reply.result.task.status.state;
    expect(afterReply).not.toBe('TASK_STATE_INPUT_REQUIRED');
    await eventually(() => (r.requests.length === 1 ? true : undefined), 'the notification of the reply');
    expect((await rpc().rpc('CancelTask', { id: task.id })).result.status.state).toBe('TASK_STATE_CANCELED');
    const log = await h.settled(user, agentId, task.id, 2);
    expect(r.requests.map(stateOf)).toEqual([afterReply, 'TASK_STATE_CANCELED']);
    expect(log.map((d) => d.event_type)).toEqual([
      afterReply === 'TASK_STATE_WORKING' ? 'a2a.working' : 'a2a.submitted',
      'a2a.canceled',
    ]);
  });

  it('starts a notification only after the first attempt of the config’s previous one ended', async () => {
    // The first request hangs until the 1 s timeout; the others are answered.
    const r = await h.receiver((_req, index) => (index === 0 ? null : { status: 200 }));
    const task = (
      await rpc().rpc('SendMessage', { message: userMessage('ordered'), configuration: { returnImmediately: true } })
    ).result.task;
    await rpc().rpc('CreateTaskPushNotificationConfig', { taskId: task.id, id: 'ordered', url: r.url });
    const lease = (await claimOne(t, user, agentId)).lease_id;
    await eventually(() => (r.requests.length === 1 ? true : undefined), 'the working notification');
    expect((await reportComplete(t, user, agentId, task.id, lease, { summary: 'ok' })).statusCode).toBe(200);
    // While the first attempt hangs, the completion is not sent (a look for due deliveries takes nothing of it).
    await t.app.background.deliverCallbacks();
    expect(r.requests).toHaveLength(1);
    const pending = await h.deliveries(user, agentId, task.id);
    expect(pending.map((d) => [d.event_type, d.attempts.length])).toEqual([
      ['a2a.working', 0],
      ['a2a.completed', 0],
    ]);
    await eventually(() => (r.requests.length === 2 ? true : undefined), 'the completion after the timeout');
    expect(r.requests.map(stateOf)).toEqual(['TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']);
  });

  it.runIf(database.name === 'postgres')(
    'sends each notification once, in order, when two instances share the database',
    async () => {
      const second = await buildTestApp(h.storage, { config: CONFIG });
      try {
        const r = await h.receiver();
        const tasks: string[] = [];
        for (let i = 0; i < 20; i++) {
          const a = a2aRpc(i % 2 ? second : t, user, agentId);
          const res = await a.rpc('SendMessage', {
            message: userMessage(`task ${i}`),
            configuration: { returnImmediately: true, taskPushNotificationConfig: { id: 'both', url: r.url } },
          });
          tasks.push(res.result.task.id);
        }
        await Promise.all(tasks.map((id, i) => a2aRpc(i % 2 ? t : second, user, agentId).rpc('CancelTask', { id })));
        for (const id of tasks) {
          expect((await h.settled(user, agentId, id, 2)).map((d) => [d.event_type, d.status])).toEqual([
            ['a2a.submitted', 'delivered'],
            ['a2a.canceled', 'delivered'],
          ]);
        }
        const ids = r.requests.map((q) => q.headers['webhook-id']);
        expect(ids).toHaveLength(40);
        expect(new Set(ids).size).toBe(40);
        for (const id of tasks) {
          const states = r.requests.filter((q) => JSON.parse(q.body).task.id === id).map(stateOf);
          expect(states).toEqual(['TASK_STATE_SUBMITTED', 'TASK_STATE_CANCELED']);
        }
      } finally {
        await second.close();
      }
    },
  );

  it('deletes the config when the receiver answers 410, and sends nothing more to it', async () => {
    const r = await h.receiver(() => ({ status: 410 }));
    const task = await sendWithPush({ id: 'gone', url: r.url });
    const [first] = await h.settled(user, agentId, task.id, 1);
    expect(first?.status).toBe('failed');
    expect((await rpc().rpc('ListTaskPushNotificationConfigs', { taskId: task.id })).result.configs).toEqual([]);
    const lease = (await claimOne(t, user, agentId)).lease_id;
    expect((await reportComplete(t, user, agentId, task.id, lease, { summary: 'ok' })).statusCode).toBe(200);
    expect(await h.deliveries(user, agentId, task.id)).toHaveLength(1);
    expect(r.requests).toHaveLength(1);
  });

  it('drops pending retries of a deleted config, and refuses to retry them (409)', async () => {
    const r = await h.receiver(() => ({ status: 503 }));
    const task = await sendWithPush({ id: 'flaky', url: r.url });
    await eventually(async () => {
      const [d] = await h.deliveries(user, agentId, task.id);
      return d && d.attempts.length === 1 && d.status === 'pending' ? d : undefined;
    }, 'a first failed attempt with a retry due');
    const del = await rpc().rpc('DeleteTaskPushNotificationConfig', { taskId: task.id, id: 'flaky' });
    expect(del.result).toEqual({});
    const [ended] = await h.deliveries(user, agentId, task.id);
    expect(ended?.status).toBe('failed');
    const retry = await call(
      t.app,
      'POST',
      `/agent/${agentId}/task/${task.id}/deliveries/${ended?.delivery_id}/retry`,
      { headers: workerHeaders(user) },
    );
    expect(retry.statusCode).toBe(409);
    expect(retry.json().error.code).toBe('CONFLICT');
  });
});

describe.each(DATABASES)('A2A push delivery fairness on $name', (database) => {
  // Attempts hang for up to 10 s here, so a receiver that never answers holds its slots throughout.
  const h = useCallbackApp(database, { ...CONFIG, callbackTimeoutMs: 10_000 });

  it("a workspace's hanging receiver does not hold back another workspace's notifications", async () => {
    const t = h.t;
    const slow = await h.receiver(() => null);
    const fast = await h.receiver();
    const [busy, other] = [await createUser(t), await createUser(t)];
    const busyAgent = (await createAgent(t, busy)).uuid;
    const otherAgent = (await createAgent(t, other)).uuid;
    // Ten configs of one task: ten notifications to a receiver that never answers (4 slots per workspace).
    const task = (
      await a2aRpc(t, busy, busyAgent).rpc('SendMessage', {
        message: userMessage('slow'),
        configuration: { returnImmediately: true },
      })
    ).result.task;
    for (let i = 0; i < 10; i++) {
      await a2aRpc(t, busy, busyAgent).rpc('CreateTaskPushNotificationConfig', {
        taskId: task.id,
        id: `s${i}`,
        url: slow.url,
      });
    }
    await a2aRpc(t, busy, busyAgent).rpc('CancelTask', { id: task.id });
    await eventually(() => (slow.requests.length >= 4 ? true : undefined), 'the slow receiver holding its slots');
    await a2aRpc(t, other, otherAgent).rpc('SendMessage', {
      message: userMessage('fast'),
      configuration: { returnImmediately: true, taskPushNotificationConfig: { url: fast.url } },
    });
    await eventually(() => (fast.requests.length === 1 ? true : undefined), "the other workspace's notification");
    // The slow receiver's attempts are all still hanging when the other workspace's arrived.
    expect(slow.hungUp).toHaveLength(0);
    expect(slow.requests.length).toBeLessThan(10);
    await slow.close();
  }, 60_000);
});
