import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { call, type TestApp } from '../../helpers/app.js';
import { answering, type CapturedRequest, useCallbackApp, verifyCallback } from '../../helpers/callbacks.js';
import { DATABASES } from '../../helpers/databases.js';
import { createUser } from '../../helpers/factories.js';
import { submitTask, workerHeaders } from '../../helpers/tasks.js';

/*
 * Any 2xx is delivered; anything else, or no answer in time, is retried per the
 * schedule (shortened here through configuration) honouring Retry-After; 410 stops; redirects are
 * never followed; every attempt is recorded on the delivery, which keeps one webhook-id throughout.
 */

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const CONFIG = { allowPrivateUrls: true, callbackRetrySchedule: [0.2, 0.2, 0.2], callbackTimeoutMs: 1_000 };

describe.each(DATABASES)('callback retries on $name', (database) => {
  const h = useCallbackApp(database, CONFIG);
  const { receiver, signingSecret, settled, webhookTask, cancel } = h;
  let t: TestApp;
  beforeAll(() => {
    t = h.t;
  });

  it('retries a 500 with the same webhook-id until a 2xx, recording every attempt', async () => {
    const r = await receiver(answering(500, 500, 200));
    const { user, agent, taskId } = await webhookTask(r.url);
    await cancel(user, agent, taskId);
    const [delivery] = await settled(user, agent, taskId);
    expect(delivery).toMatchObject({ status: 'delivered', next_attempt_at: null });
    expect(delivery?.attempts.map((a) => [a.status_code, a.error])).toEqual([
      [500, 'HTTP 500'],
      [500, 'HTTP 500'],
      [200, null],
    ]);
    for (const a of delivery?.attempts ?? []) {
      expect(a.at).toMatch(ISO);
      expect(Number.isInteger(a.duration_ms) && a.duration_ms >= 0).toBe(true);
    }
    expect(r.requests.map((req) => req.headers['webhook-id'])).toEqual(Array(3).fill(delivery?.delivery_id));
    const secret = await signingSecret(user);
    for (const req of r.requests) expect(verifyCallback(secret, req)).toMatchObject({ type: 'task.cancelled' });
  });

  it('stops at a 410: failed after one attempt', async () => {
    const r = await receiver(answering(410, 200));
    const { user, agent, taskId } = await webhookTask(r.url);
    await cancel(user, agent, taskId);
    const [delivery] = await settled(user, agent, taskId);
    expect(delivery).toMatchObject({ status: 'failed', next_attempt_at: null });
    expect(delivery?.attempts.map((a) => [a.status_code, a.error])).toEqual([[410, 'HTTP 410']]);
    expect(r.requests).toHaveLength(1);
  });

  it('honours Retry-After: the next attempt comes no earlier than the delay asked for', async () => {
    const r = await receiver((_req, index) =>
      index === 0 ? { status: 503, headers: { 'retry-after': '2' } } : { status: 200 },
    );
    const { user, agent, taskId } = await webhookTask(r.url);
    await cancel(user, agent, taskId);
    const [delivery] = await settled(user, agent, taskId);
    expect(delivery?.status).toBe('delivered');
    const [first, second] = delivery?.attempts ?? [];
    expect([first?.status_code, second?.status_code]).toEqual([503, 200]);
    // Without the header the schedule (0.2 s ± 20%) would have retried after at most 240 ms.
    expect(Date.parse(second?.at ?? '') - Date.parse(first?.at ?? '')).toBeGreaterThanOrEqual(1_950);
  });

  it('gives up when the schedule runs out: failed after the first attempt and one per entry', async () => {
    const r = await receiver(answering(500));
    const { user, agent, taskId } = await webhookTask(r.url);
    await cancel(user, agent, taskId);
    const [delivery] = await settled(user, agent, taskId);
    expect(delivery).toMatchObject({ status: 'failed', next_attempt_at: null });
    expect(delivery?.attempts.map((a) => a.status_code)).toEqual([500, 500, 500, 500]);
    expect(r.requests.map((req) => req.headers['webhook-id'])).toEqual(Array(4).fill(delivery?.delivery_id));
  });

  it('sends a failed delivery again on request, with the same webhook-id', async () => {
    const r = await receiver(answering(410, 200));
    const { user, agent, taskId } = await webhookTask(r.url);
    await cancel(user, agent, taskId);
    const [failed] = await settled(user, agent, taskId);
    expect(failed?.status).toBe('failed');
    const id = failed?.delivery_id as string;

    const retry = (path: string, who = user) => call(t.app, 'POST', path, { headers: workerHeaders(who) });
    const res = await retry(`/agent/${agent}/task/${taskId}/deliveries/${id}/retry`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ delivery_id: id, event_type: 'task.cancelled' });
    const [delivered] = await settled(user, agent, taskId);
    expect(delivered).toMatchObject({ delivery_id: id, status: 'delivered', next_attempt_at: null });
    expect(delivered?.attempts.map((a) => a.status_code)).toEqual([410, 200]);
    expect(r.requests.map((req) => req.headers['webhook-id'])).toEqual([id, id]);
    const secret = await signingSecret(user);
    expect(verifyCallback(secret, r.requests[1] as CapturedRequest)).toEqual(
      verifyCallback(secret, r.requests[0] as CapturedRequest),
    );

    expect((await retry(`/agent/${agent}/task/${taskId}/deliveries/${randomUUID()}/retry`)).statusCode).toBe(404);
    const other = (await submitTask(t, user, agent, { message: 'another task' })).task_id;
    expect((await retry(`/agent/${agent}/task/${other}/deliveries/${id}/retry`)).statusCode).toBe(404);
    const stranger = await createUser(t);
    expect((await retry(`/agent/${agent}/task/${taskId}/deliveries/${id}/retry`, stranger)).statusCode).toBe(404);
  });

  it('never follows a redirect: the canary behind a 302 sees nothing and the attempt is not delivered', async () => {
    const canary = await receiver();
    const r = await receiver(() => ({ status: 302, headers: { location: canary.url } }));
    const { user, agent, taskId } = await webhookTask(r.url);
    await cancel(user, agent, taskId);
    const [delivery] = await settled(user, agent, taskId);
    expect(delivery?.status).toBe('failed');
    expect(delivery?.attempts.map((a) => [a.status_code, a.error])).toEqual(Array(4).fill([302, 'HTTP 302']));
    expect(r.requests).toHaveLength(4);
    expect(canary.requests).toHaveLength(0);
  });

  it('retries a receiver that does not answer in time', async () => {
    const r = await receiver((_req, index) => (index === 0 ? null : { status: 200 }));
    const { user, agent, taskId } = await webhookTask(r.url);
    await cancel(user, agent, taskId);
    const [delivery] = await settled(user, agent, taskId);
    expect(delivery?.status).toBe('delivered');
    expect(delivery?.attempts.map((a) => a.status_code)).toEqual([null, 200]);
    expect(delivery?.attempts[0]?.error).toEqual(expect.any(String));
    expect(r.requests.map((req) => req.headers['webhook-id'])).toEqual([delivery?.delivery_id, delivery?.delivery_id]);
  });
});
