import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../../helpers/app.js';
import { eventually, type Receiver, startReceiver, verifyCallback } from '../../../helpers/callbacks.js';
import { DATABASES, ownDatabase } from '../../../helpers/databases.js';
import { createAgent, createUser } from '../../../helpers/factories.js';
import { cancelsOf, pushAgent, pushBodyOf, runsOf, usePushApp } from '../../../helpers/push-agent.js';
import {
  cancelTask,
  getTask,
  reportComplete,
  reportProgress,
  submitTask,
  waitForStatus,
} from '../../../helpers/tasks.js';

/*
 * Cancel and timeout of a task an http agent holds: the POST in flight is closed at once and the
 * agent gets one signed task.cancelled, whether the POST is in flight or was answered 202, and
 * whichever instance makes the change.
 */
describe.each(DATABASES)('http runtime: cancel and timeout on $name', (shared) => {
  const h = usePushApp(shared);

  it('cancel during the POST closes its connection and sends one signed task.cancelled', async () => {
    const agent = await h.httpAgent('/hang');
    const { task_id } = await submitTask(h.t, h.user, agent);
    const [post] = await h.runs(task_id, 1);
    expect((await cancelTask(h.t, h.user, agent, task_id)).statusCode).toBe(200);
    await eventually(
      () => (h.receiver.hungUp.includes(post as NonNullable<typeof post>) ? true : undefined),
      'hang-up',
    );
    const [notice] = await eventually(() => {
      const got = cancelsOf(h.receiver.requests, task_id);
      return got.length > 0 ? got : undefined;
    }, 'task.cancelled');
    const body = verifyCallback(h.secret, notice as NonNullable<typeof notice>) as ReturnType<typeof pushBodyOf>;
    expect(body.data).toEqual({
      task_id,
      agent_uuid: agent,
      lease_id: pushBodyOf(post as NonNullable<typeof post>).data.lease_id,
    });
    expect(notice?.headers['webhook-id']).not.toBe(body.data.lease_id);
    expect((await getTask(h.t, h.user, agent, task_id)).status).toBe('cancelled');
  });

  it('cancel after a 202 tells the agent once, and refuses its later reports', async () => {
    const agent = await h.httpAgent('/async');
    const { task_id } = await submitTask(h.t, h.user, agent);
    const [post] = await h.runs(task_id, 1);
    const lease = pushBodyOf(post as NonNullable<typeof post>).data.lease_id;
    await eventually(async () => {
      const res = await reportProgress(h.t, h.user, agent, task_id, {
        lease_id: lease,
        current_step: 'x',
        steps_completed: 0,
        total_steps: 1,
      });
      return res.statusCode === 200 ? true : undefined;
    }, 'the 202 applied');
    expect((await cancelTask(h.t, h.user, agent, task_id)).statusCode).toBe(200);
    const notices = await eventually(() => {
      const got = cancelsOf(h.receiver.requests, task_id);
      return got.length > 0 ? got : undefined;
    }, 'task.cancelled');
    expect(notices).toHaveLength(1);
    expect(pushBodyOf(notices[0] as NonNullable<(typeof notices)[0]>).data.lease_id).toBe(lease);
    const late = await reportComplete(h.t, h.user, agent, task_id, lease);
    expect(late.json().error.code).toBe('TASK_NOT_RUNNING');
  });

  it('a task that times out while the agent holds it after a 202 fails with TIMEOUT and the agent is told', async () => {
    const res = await call(h.t.app, 'POST', '/agent', {
      token: h.user.token,
      body: {
        name: 'slow',
        default_timeout_seconds: 1,
        runtime: { type: 'http', url: h.receiver.url.replace('/hook', '/async'), lease_seconds: 600 },
      },
    });
    const agent = res.json().uuid as string;
    const { task_id } = await submitTask(h.t, h.user, agent);
    const failed = await waitForStatus(h.t, h.user, agent, task_id, 'failed');
    expect(failed.error?.code).toBe('TIMEOUT');
    const [post] = await h.runs(task_id, 1);
    const notices = await eventually(() => {
      const got = cancelsOf(h.receiver.requests, task_id);
      return got.length > 0 ? got : undefined;
    }, 'task.cancelled');
    expect(pushBodyOf(notices[0] as NonNullable<(typeof notices)[0]>).data.lease_id).toBe(
      pushBodyOf(post as NonNullable<typeof post>).data.lease_id,
    );
  });
});

/*
 * Two instances on one PostgreSQL database: the instance that holds the push is not the one that
 * cancels. The change reaches the holder at once (the notifier), not at its next lease renewal.
 */
describe.each(DATABASES.filter((d) => d.name === 'postgres'))('http runtime across instances on $name', (shared) => {
  let holder: TestApp;
  let other: TestApp;
  let drop: () => Promise<void> = async () => undefined;
  let receiver: Receiver;

  beforeAll(async () => {
    receiver = await startReceiver(pushAgent);
    const own = await ownDatabase(shared);
    drop = own.drop;
    holder = await buildTestApp(own.database, { config: { allowPrivateUrls: true } });
    // Never looks for work on its own: only the holder's dispatcher (woken by the submit) pushes.
    other = await buildTestApp(own.database, { config: { allowPrivateUrls: true, sweepIntervalMs: 86_400_000 } });
  });
  afterAll(async () => {
    await holder.close();
    await other.close();
    await receiver.close();
    await drop();
  });

  it('a cancel on another instance aborts the POST in flight and sends one task.cancelled', async () => {
    const user = await createUser(holder);
    const runtime = { type: 'http', url: receiver.url.replace('/hook', '/hang'), lease_seconds: 600 };
    const agent = (await createAgent(holder, user, { runtime })).uuid;
    const { task_id } = await submitTask(holder, user, agent);
    const post = await eventually(() => runsOf(receiver.requests, task_id)[0], 'the POST');
    expect((await cancelTask(other, user, agent, task_id)).statusCode).toBe(200);
    // Well within the holder's first renewal (a third of 600 s).
    await eventually(() => (receiver.hungUp.includes(post) ? true : undefined), 'hang-up', 10_000);
    const notices = await eventually(() => {
      const got = cancelsOf(receiver.requests, task_id);
      return got.length > 0 ? got : undefined;
    }, 'task.cancelled');
    expect(notices).toHaveLength(1);
  });
});
