import { randomBytes, randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { type CapturedRequest, eventually, taskIdOf, useCallbackApp, verifyCallback } from '../../helpers/callbacks.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import {
  cancelTask,
  claimOne,
  claimTasks,
  getTask,
  reportComplete,
  reportFail,
  reportInputRequest,
  sendMessage,
  submitTask,
  workerHeaders,
} from '../../helpers/tasks.js';

/*
 * A task submitted with callback_mode webhook is announced to its webhook_url on
 * awaiting_input, completed, failed and cancelled, signed per Standard Webhooks (checked with the
 * standardwebhooks package). Receivers are real HTTP servers on 127.0.0.1.
 */

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const SIGNATURE = /^v1,[A-Za-z0-9+/]+=*$/;
const CONFIG = { allowPrivateUrls: true, callbackRetrySchedule: [0.2, 0.2, 0.2], callbackTimeoutMs: 1_000 };

describe.each(DATABASES)('task callbacks on $name', (database) => {
  const h = useCallbackApp(database, CONFIG);
  const { receiver, signingSecret, deliveries, settled, webhookTask, cancel } = h;
  let t: TestApp;
  beforeAll(() => {
    t = h.t;
  });

  it('POSTs task.completed with the GET body, signed per Standard Webhooks with the user secret', async () => {
    const r = await receiver();
    const { user, agent, taskId } = await webhookTask(`${r.url}?source=test`);
    const lease = (await claimOne(t, user, agent)).lease_id;
    const result = { summary: 'all good', findings: [{ file: 'a.ts', line: 3, severity: 'low', message: 'nit' }] };
    expect((await reportComplete(t, user, agent, taskId, lease, result)).statusCode).toBe(200);

    const [delivery, ...others] = await settled(user, agent, taskId);
    expect(others).toEqual([]);
    const task = await getTask(t, user, agent, taskId);
    expect(r.requests).toHaveLength(1);
    const request = r.requests[0] as CapturedRequest;
    expect(request.method).toBe('POST');
    expect(request.path).toBe('/hook?source=test');
    expect(request.headers['content-type']).toMatch(/^application\/json/);
    expect(request.headers['webhook-signature']).toMatch(SIGNATURE);
    expect(request.headers['webhook-timestamp']).toMatch(/^\d{10}$/);

    const secret = await signingSecret(user);
    expect(secret).toMatch(/^whsec_/);
    const payload = verifyCallback(secret, request);
    expect(payload).toEqual({ type: 'task.completed', timestamp: expect.stringMatching(ISO), data: task });
    expect(task).toMatchObject({ status: 'completed', result });
    expect(request.headers['webhook-id']).toBe(delivery?.delivery_id);
    expect(delivery).toMatchObject({ event_type: 'task.completed', status: 'delivered', next_attempt_at: null });
    expect(delivery?.attempts).toEqual([
      { at: expect.stringMatching(ISO), status_code: 200, duration_ms: expect.any(Number), error: null },
    ]);

    // What the signature protects: the body, the timestamp's age, the secret.
    const tampered = { ...request, body: request.body.replace('all good', 'all bad') };
    expect(tampered.body).not.toBe(request.body);
    expect(() => verifyCallback(secret, tampered)).toThrow('No matching signature found');
    const reserialised = { ...request, body: JSON.stringify(JSON.parse(request.body), null, 1) };
    expect(() => verifyCallback(secret, reserialised)).toThrow('No matching signature found');
    const old = String(Number(request.headers['webhook-timestamp']) - 6 * 60);
    expect(() => verifyCallback(secret, request, { 'webhook-timestamp': old })).toThrow('Message timestamp too old');
    const strangersSecret = await signingSecret(await createUser(t));
    expect(() => verifyCallback(strangersSecret, request)).toThrow('No matching signature found');
  });

  it('announces awaiting_input, completed, failed and cancelled once each; running and poll mode nothing', async () => {
    const r = await receiver();
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const hook = { callback_mode: 'webhook', webhook_url: r.url };
    const asking = (await submitTask(t, user, agent, { ...hook, message: 'asking' })).task_id;
    const completing = (await submitTask(t, user, agent, { ...hook, message: 'completing' })).task_id;
    const failing = (await submitTask(t, user, agent, { ...hook, message: 'failing' })).task_id;
    const cancelled = (await submitTask(t, user, agent, { ...hook, message: 'cancelled' })).task_id;
    const polled = (await submitTask(t, user, agent, { message: 'polled' })).task_id;
    const retried = (await submitTask(t, user, agent, { ...hook, message: 'retried' })).task_id;
    await cancel(user, agent, cancelled);
    const leases = new Map((await claimTasks(t, user, agent, { max_tasks: 10 })).map((c) => [c.task_id, c.lease_id]));
    expect([...leases.keys()].sort()).toEqual([asking, completing, failing, polled, retried].sort());
    const lease = (id: string) => leases.get(id) as string;
    expect((await reportInputRequest(t, user, agent, asking, lease(asking), 'Which branch?')).statusCode).toBe(200);
    expect((await reportComplete(t, user, agent, completing, lease(completing))).statusCode).toBe(200);
    expect((await reportFail(t, user, agent, failing, lease(failing))).statusCode).toBe(200);
    expect((await reportComplete(t, user, agent, polled, lease(polled))).statusCode).toBe(200);
    // A retryable failure with attempts left queues the task again: not a final failure, not announced.
    const requeued = await reportFail(t, user, agent, retried, lease(retried), { message: 'flaky' }, true);
    expect(requeued.json()).toMatchObject({ status: 'queued' });

    const expected: Array<[string, string]> = [
      [asking, 'awaiting_input'],
      [completing, 'completed'],
      [failing, 'failed'],
      [cancelled, 'cancelled'],
    ];
    for (const [taskId, status] of expected) {
      const list = await settled(user, agent, taskId);
      expect(list.map((d) => [d.event_type, d.status, d.attempts.length])).toEqual([
        [`task.${status}`, 'delivered', 1],
      ]);
      const got = r.requests.filter((req) => taskIdOf(req) === taskId);
      expect(got).toHaveLength(1);
      expect(got[0]?.headers['webhook-id']).toBe(list[0]?.delivery_id);
      const body = JSON.parse(got[0]?.body ?? '{}');
      expect(body).toMatchObject({ type: `task.${status}`, data: { task_id: taskId, status } });
    }
    // The outbox is written in the transaction of the change: none now means none ever.
    expect(await deliveries(user, agent, polled)).toEqual([]);
    expect(await deliveries(user, agent, retried)).toEqual([]);
    expect(r.requests).toHaveLength(4);

    // A reply makes it running (not announced); completing it is announced.
    await cancel(user, agent, retried);
    await settled(user, agent, retried);
    expect((await sendMessage(t, user, agent, asking, 'main')).json()).toMatchObject({ status: 'running' });
    const again = await claimOne(t, user, agent);
    expect((await reportComplete(t, user, agent, asking, again.lease_id)).statusCode).toBe(200);
    const list = await settled(user, agent, asking, 2);
    expect(list.map((d) => d.event_type)).toEqual(['task.awaiting_input', 'task.completed']);
    expect(new Set(list.map((d) => d.delivery_id)).size).toBe(2);
    expect(r.requests).toHaveLength(6);
  });

  it('signs with both secrets for a day after a rotation', async () => {
    const r = await receiver();
    const user = await createUser(t);
    const before = await signingSecret(user);
    const rotated = await call(t.app, 'POST', '/auth/webhook_signing_secret/rotate', { token: user.token });
    expect(rotated.statusCode, rotated.body).toBe(200);
    const after = rotated.json().secret as string;
    expect(after).toMatch(/^whsec_/);
    expect(after).not.toBe(before);
    expect(await signingSecret(user)).toBe(after);

    const { agent, taskId } = await webhookTask(r.url, user);
    await cancel(user, agent, taskId);
    await settled(user, agent, taskId);
    const request = r.requests[0] as CapturedRequest;
    const signatures = String(request.headers['webhook-signature']).split(' ');
    expect(signatures).toHaveLength(2);
    for (const s of signatures) expect(s).toMatch(SIGNATURE);
    for (const secret of [before, after])
      expect(verifyCallback(secret, request)).toMatchObject({ type: 'task.cancelled' });
    const unrelated = `whsec_${randomBytes(24).toString('base64')}`;
    expect(() => verifyCallback(unrelated, request)).toThrow('No matching signature found');
  });

  it("announces the cancellation of an agent's open tasks when the agent is deleted", async () => {
    const r = await receiver();
    const { user, agent, taskId } = await webhookTask(r.url);
    const deleted = await call(t.app, 'DELETE', `/agent/${agent}`, { headers: workerHeaders(user) });
    expect(deleted.statusCode, deleted.body).toBe(204);
    const request = await eventually(() => r.requests[0], 'the cancellation callback');
    expect(verifyCallback(await signingSecret(user), request)).toMatchObject({
      type: 'task.cancelled',
      data: { task_id: taskId, status: 'cancelled', cancelled_at: expect.stringMatching(ISO) },
    });
  });

  it.runIf(database.name === 'postgres')('sends each callback once when two instances share the database', async () => {
    const second = await buildTestApp(h.storage, { config: CONFIG });
    try {
      const r = await receiver();
      const user = await createUser(t);
      const agent = (await createAgent(t, user)).uuid;
      const taskIds: string[] = [];
      for (let i = 0; i < 40; i++) {
        const body = { message: `task ${i}`, callback_mode: 'webhook', webhook_url: r.url };
        taskIds.push((await submitTask(i % 2 ? second : t, user, agent, body)).task_id);
      }
      await Promise.all(taskIds.map((id, i) => cancelTask(i % 2 ? t : second, user, agent, id)));
      for (const id of taskIds) expect((await settled(user, agent, id)).map((d) => d.status)).toEqual(['delivered']);
      const ids = r.requests.map((req) => req.headers['webhook-id']);
      expect(ids).toHaveLength(40);
      expect(new Set(ids).size).toBe(40);
      expect(new Set(r.requests.map(taskIdOf))).toEqual(new Set(taskIds));
    } finally {
      await second.close();
    }
  });

  it("answers 404 for another user's task deliveries, and for an unknown task", async () => {
    const r = await receiver();
    const { user, agent, taskId } = await webhookTask(r.url);
    await cancel(user, agent, taskId);
    const [delivery] = await settled(user, agent, taskId);
    const stranger = await createUser(t);
    const strangersAgent = (await createAgent(t, stranger)).uuid;
    const get = (who: TestUser, path: string) => call(t.app, 'GET', path, { headers: workerHeaders(who) });
    for (const path of [
      `/agent/${agent}/task/${taskId}/deliveries`,
      `/agent/${strangersAgent}/task/${taskId}/deliveries`,
    ]) {
      const res = await get(stranger, path);
      expect(res.statusCode).toBe(404);
      expect(res.json().error.code).toBe('NOT_FOUND');
      expect(res.body).not.toContain(delivery?.delivery_id);
    }
    expect((await get(user, `/agent/${agent}/task/${randomUUID()}/deliveries`)).statusCode).toBe(404);
    expect((await get(user, `/agent/${agent}/task/${taskId}/deliveries`)).statusCode).toBe(200);
  });
});
