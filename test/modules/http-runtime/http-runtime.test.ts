import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { eventually, ownDatabase, type Receiver, startReceiver, verifyCallback } from '../../helpers/callbacks.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { cancelsOf, pushAgent, pushBodyOf, runsOf } from '../../helpers/push-agent.js';
import {
  cancelTask,
  getTask,
  reportComplete,
  reportProgress,
  sendMessage,
  submitTask,
  waitForStatus,
  workerHeaders,
} from '../../helpers/tasks.js';

/*
 * Agents that are an HTTP endpoint: the production app on storage of its own (its dispatcher
 * pushes every http agent's tasks it finds), a real receiver on loopback that verifies every
 * webhook with the `standardwebhooks` package, and the task API as a user sees it.
 */
describe.each(DATABASES)('agents that are an HTTP endpoint (http runtime) on $name', (shared) => {
  let t: TestApp;
  let drop: () => Promise<void> = async () => undefined;
  let receiver: Receiver;
  let user: TestUser;
  let secret: string;

  const httpAgent = async (path: string, extra: Record<string, unknown> = {}) =>
    (
      await createAgent(t, user, {
        runtime: { type: 'http', url: `${receiver.url.replace('/hook', '')}${path}`, ...extra },
      })
    ).uuid;

  /** The task.run POSTs of a task once there are `count`, each verified against the owner's signing secret. */
  const runs = (taskId: string, count: number) =>
    eventually(() => {
      const got = runsOf(receiver.requests, taskId);
      return got.length >= count ? got : undefined;
    }, `${count} task.run POSTs of ${taskId}`);

  beforeAll(async () => {
    receiver = await startReceiver(pushAgent);
    const own = await ownDatabase(shared);
    drop = own.drop;
    t = await buildTestApp(own.database, { config: { allowPrivateUrls: true, sweepIntervalMs: 100 } });
    user = await createUser(t);
    secret = (await call(t.app, 'GET', '/auth/webhook_signing_secret', { token: user.token })).json().secret;
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
    await drop();
  });

  it('POSTs a signed task.run and completes the task with the result of a 200', async () => {
    const agent = await httpAgent('/sync', { headers: { 'X-Agent-Key': 'k-123' } });
    const { task_id } = await submitTask(t, user, agent, { message: 'review PR 7', metadata: { pr: 7 } });
    const done = await waitForStatus(t, user, agent, task_id, 'completed');
    expect(done.result).toEqual({
      summary: 'reviewed: review PR 7',
      findings: [{ file: 'a.ts', line: 1, severity: 'low', message: 'nit' }],
    });
    const [post] = await runs(task_id, 1);
    if (!post) throw new Error('no POST');
    // Verified by an independent implementation of Standard Webhooks with the owner's secret.
    const body = verifyCallback(secret, post) as ReturnType<typeof pushBodyOf>;
    expect(post.headers['webhook-id']).toBe(body.data.lease_id);
    expect(post.headers['content-type']).toBe('application/json');
    expect(post.headers['x-agent-key']).toBe('k-123');
    expect(post.headers.traceparent).toBe(body.data.traceparent);
    expect(body.type).toBe('task.run');
    const base = `${t.config.publicUrl}/agent/${agent}/task/${task_id}`;
    expect(body.data).toMatchObject({
      task_id,
      agent_uuid: agent,
      message: 'review PR 7',
      messages: [{ role: 'user', content: 'review PR 7' }],
      priority: 5,
      metadata: { pr: 7 },
      attempt: 1,
      urls: {
        task: base,
        progress: `${base}/progress`,
        input_request: `${base}/input_request`,
        complete: `${base}/complete`,
        fail: `${base}/fail`,
      },
    });
    expect(Object.keys(body.data)).toEqual([
      'task_id',
      'agent_uuid',
      'lease_id',
      'message',
      'messages',
      'priority',
      'metadata',
      'attempt',
      'lease_expires_at',
      'timeout_at',
      'traceparent',
      'urls',
    ]);
    expect(() => verifyCallback(secret, post, { 'webhook-id': 'another' })).toThrow();
  });

  it('asks for input, then POSTs again with the whole conversation once the user answers', async () => {
    const agent = await httpAgent('/ask');
    const { task_id } = await submitTask(t, user, agent, { message: 'review it' });
    const waiting = await waitForStatus(t, user, agent, task_id, 'awaiting_input');
    expect(waiting.input_request?.message).toBe('Which branch?');
    expect((await sendMessage(t, user, agent, task_id, 'main')).statusCode).toBe(200);
    const done = await waitForStatus(t, user, agent, task_id, 'completed');
    expect(done.result?.summary).toBe('reviewed main');
    expect(done.messages.map((m) => [m.role, m.content])).toEqual([
      ['user', 'review it'],
      ['agent', 'Which branch?'],
      ['user', 'main'],
    ]);
    const [first, second] = (await runs(task_id, 2)).map(
      (r) => verifyCallback(secret, r) as ReturnType<typeof pushBodyOf>,
    );
    expect(second?.data.messages.map((m) => m.content)).toEqual(['review it', 'Which branch?', 'main']);
    // The answer continues the same attempt under a new lease.
    expect([first?.data.attempt, second?.data.attempt]).toEqual([1, 1]);
    expect(second?.data.lease_id).not.toBe(first?.data.lease_id);
  });

  it('after a 202 the agent holds the task under its lease and reports through the worker endpoints', async () => {
    const agent = await httpAgent('/async', { lease_seconds: 120 });
    const { task_id } = await submitTask(t, user, agent);
    const [post] = await runs(task_id, 1);
    const lease = pushBodyOf(post as NonNullable<typeof post>).data.lease_id;
    await eventually(async () => {
      const task = await getTask(t, user, agent, task_id);
      return task.status === 'running' ? task : undefined;
    }, 'the task running');
    const progress = await reportProgress(t, user, agent, task_id, {
      lease_id: lease,
      current_step: 'cloning',
      steps_completed: 1,
      total_steps: 2,
    });
    expect(progress.statusCode, progress.body).toBe(200);
    // progress extends the lease by lease_seconds
    const expires = Date.parse(progress.json().lease_expires_at);
    expect(expires).toBeGreaterThan(Date.now() + 100_000);
    const complete = await reportComplete(t, user, agent, task_id, lease, { summary: 'async done' });
    expect(complete.statusCode, complete.body).toBe(200);
    expect((await getTask(t, user, agent, task_id)).result?.summary).toBe('async done');
    expect(runsOf(receiver.requests, task_id)).toHaveLength(1);
  });

  it('after a 202 whose lease runs out, POSTs again with attempt 2 and a new lease', async () => {
    const agent = await httpAgent('/async-then-sync', { lease_seconds: 1 });
    const { task_id } = await submitTask(t, user, agent);
    const done = await waitForStatus(t, user, agent, task_id, 'completed');
    expect(done.result?.summary).toBe('second attempt');
    const [first, second] = (await runs(task_id, 2)).map((r) => pushBodyOf(r).data);
    expect([first?.attempt, second?.attempt]).toEqual([1, 2]);
    expect(second?.lease_id).not.toBe(first?.lease_id);
    // The first lease is gone: a late report under it is refused.
    const late = await reportComplete(t, user, agent, task_id, first?.lease_id as string);
    expect(late.json().error.code).toBe('TASK_NOT_RUNNING');
  });

  it('retries a 503 no sooner than its Retry-After, then completes', async () => {
    const agent = await httpAgent('/flaky');
    const { task_id } = await submitTask(t, user, agent);
    const done = await waitForStatus(t, user, agent, task_id, 'completed');
    expect(done.result?.summary).toBe('after a retry');
    const [first, second] = await runs(task_id, 2);
    expect(pushBodyOf(second as NonNullable<typeof second>).data.attempt).toBe(2);
    expect((second?.receivedAt ?? 0) - (first?.receivedAt ?? 0)).toBeGreaterThanOrEqual(950);
  });

  it('fails with DELIVERY_FAILED after three attempts that got a 500', async () => {
    const agent = await httpAgent('/broken');
    const { task_id } = await submitTask(t, user, agent);
    const failed = await waitForStatus(t, user, agent, task_id, 'failed', 15_000);
    expect(failed.error).toEqual({ code: 'DELIVERY_FAILED', message: 'The agent answered HTTP 500' });
    expect(runsOf(receiver.requests, task_id).map((r) => pushBodyOf(r).data.attempt)).toEqual([1, 2, 3]);
  });

  it("fails at once with the agent's own error, and with INVALID_AGENT_RESPONSE for an answer of another shape", async () => {
    const agent = await httpAgent('/fails');
    const { task_id } = await submitTask(t, user, agent);
    const failed = await waitForStatus(t, user, agent, task_id, 'failed');
    expect(failed.error).toEqual({ code: 'REPO_GONE', message: 'the repository is gone' });

    const weird = await httpAgent('/weird');
    const second = await submitTask(t, user, weird);
    const invalid = await waitForStatus(t, user, weird, second.task_id, 'failed');
    expect(invalid.error?.code).toBe('INVALID_AGENT_RESPONSE');
    expect(runsOf(receiver.requests, second.task_id)).toHaveLength(1);
  });

  it('fails with DELIVERY_FAILED when the agent does not answer within timeout_seconds', async () => {
    const agent = await httpAgent('/hang', { timeout_seconds: 1 });
    const { task_id } = await submitTask(t, user, agent);
    const failed = await waitForStatus(t, user, agent, task_id, 'failed', 20_000);
    expect(failed.error).toEqual({ code: 'DELIVERY_FAILED', message: 'The agent did not answer within 1 s' });
    expect(runsOf(receiver.requests, task_id)).toHaveLength(3);
  });

  it('cancel during the POST closes its connection and sends one signed task.cancelled', async () => {
    const agent = await httpAgent('/hang');
    const { task_id } = await submitTask(t, user, agent);
    const [post] = await runs(task_id, 1);
    expect((await cancelTask(t, user, agent, task_id)).statusCode).toBe(200);
    await eventually(() => (receiver.hungUp.includes(post as NonNullable<typeof post>) ? true : undefined), 'hang-up');
    const [notice] = await eventually(() => {
      const got = cancelsOf(receiver.requests, task_id);
      return got.length > 0 ? got : undefined;
    }, 'task.cancelled');
    const body = verifyCallback(secret, notice as NonNullable<typeof notice>) as ReturnType<typeof pushBodyOf>;
    expect(body.data).toEqual({
      task_id,
      agent_uuid: agent,
      lease_id: pushBodyOf(post as NonNullable<typeof post>).data.lease_id,
    });
    expect(notice?.headers['webhook-id']).not.toBe(body.data.lease_id);
    expect((await getTask(t, user, agent, task_id)).status).toBe('cancelled');
  });

  it('cancel after a 202 tells the agent once, and refuses its later reports', async () => {
    const agent = await httpAgent('/async');
    const { task_id } = await submitTask(t, user, agent);
    const [post] = await runs(task_id, 1);
    const lease = pushBodyOf(post as NonNullable<typeof post>).data.lease_id;
    await eventually(async () => {
      const res = await reportProgress(t, user, agent, task_id, {
        lease_id: lease,
        current_step: 'x',
        steps_completed: 0,
        total_steps: 1,
      });
      return res.statusCode === 200 ? true : undefined;
    }, 'the 202 applied');
    expect((await cancelTask(t, user, agent, task_id)).statusCode).toBe(200);
    const notices = await eventually(() => {
      const got = cancelsOf(receiver.requests, task_id);
      return got.length > 0 ? got : undefined;
    }, 'task.cancelled');
    expect(notices).toHaveLength(1);
    expect(pushBodyOf(notices[0] as NonNullable<(typeof notices)[0]>).data.lease_id).toBe(lease);
    const late = await reportComplete(t, user, agent, task_id, lease);
    expect(late.json().error.code).toBe('TASK_NOT_RUNNING');
  });

  it('a task that times out while the agent holds it after a 202 fails with TIMEOUT and the agent is told', async () => {
    const res = await call(t.app, 'POST', '/agent', {
      token: user.token,
      body: {
        name: 'slow',
        default_timeout_seconds: 1,
        runtime: { type: 'http', url: receiver.url.replace('/hook', '/async'), lease_seconds: 600 },
      },
    });
    const agent = res.json().uuid as string;
    const { task_id } = await submitTask(t, user, agent);
    const failed = await waitForStatus(t, user, agent, task_id, 'failed');
    expect(failed.error?.code).toBe('TIMEOUT');
    const [post] = await runs(task_id, 1);
    const notices = await eventually(() => {
      const got = cancelsOf(receiver.requests, task_id);
      return got.length > 0 ? got : undefined;
    }, 'task.cancelled');
    expect(pushBodyOf(notices[0] as NonNullable<(typeof notices)[0]>).data.lease_id).toBe(
      pushBodyOf(post as NonNullable<typeof post>).data.lease_id,
    );
  });

  it('masks header values, keeps them when the mask comes back, and stores them encrypted', async () => {
    const agent = await httpAgent('/sync', { headers: { 'X-Agent-Key': 'original-secret' } });
    const got = (await call(t.app, 'GET', `/agent/${agent}`, { token: user.token })).json();
    // As stored: no defaults filled in, the value masked.
    expect(got.runtime).toEqual({ type: 'http', url: expect.any(String), headers: { 'X-Agent-Key': '********' } });
    const row = await t.runtime.db.kysely
      .selectFrom('agents')
      .select('runtime')
      .where('uuid', '=', agent)
      .executeTakeFirstOrThrow();
    expect(JSON.stringify(row.runtime)).not.toContain('original-secret');

    const patched = await call(t.app, 'PATCH', `/agent/${agent}`, {
      token: user.token,
      body: { runtime: { ...got.runtime, headers: { ...got.runtime.headers, 'X-Other': 'two' } } },
    });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json().runtime.headers).toEqual({ 'X-Agent-Key': '********', 'X-Other': '********' });
    const { task_id } = await submitTask(t, user, agent);
    await waitForStatus(t, user, agent, task_id, 'completed');
    const [post] = await runs(task_id, 1);
    expect(post?.headers['x-agent-key']).toBe('original-secret');
    expect(post?.headers['x-other']).toBe('two');

    const unknown = await call(t.app, 'PATCH', `/agent/${agent}`, {
      token: user.token,
      body: { runtime: { ...got.runtime, headers: { 'X-New': '********' } } },
    });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().error.details.field).toBe('runtime.headers');
  });

  it('refuses worker claims on an http agent', async () => {
    const agent = await httpAgent('/sync');
    const claim = await call(t.app, 'POST', `/agent/${agent}/tasks/claim`, { headers: workerHeaders(user), body: {} });
    expect(claim.statusCode).toBe(400);
    expect(claim.json().error).toMatchObject({ code: 'INVALID_REQUEST', details: { field: 'runtime' } });
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
