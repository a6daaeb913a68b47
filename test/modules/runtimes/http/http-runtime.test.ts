import { describe, expect, it } from 'vitest';
import { call } from '../../../helpers/app.js';
import { eventually, verifyCallback } from '../../../helpers/callbacks.js';
import { DATABASES } from '../../../helpers/databases.js';
import { pushBodyOf, runsOf, usePushApp } from '../../../helpers/push-agent.js';
import {
  getTask,
  reportComplete,
  reportProgress,
  sendMessage,
  submitTask,
  waitForStatus,
  workerHeaders,
} from '../../../helpers/tasks.js';

/*
 * Agents that are an HTTP endpoint: the production app on storage of its own, a real receiver on
 * loopback whose webhooks are verified with the `standardwebhooks` package, and the task API as a
 * user sees it. Cancel and timeout: http-runtime-cancel.test.ts.
 */
describe.each(DATABASES)('agents that are an HTTP endpoint (http runtime) on $name', (shared) => {
  const h = usePushApp(shared);

  it('POSTs a signed task.run and completes the task with the result of a 200', async () => {
    const agent = await h.httpAgent('/sync', { headers: { 'X-Agent-Key': 'k-123' } });
    const { task_id } = await submitTask(h.t, h.user, agent, { message: 'review PR 7', metadata: { pr: 7 } });
    const done = await waitForStatus(h.t, h.user, agent, task_id, 'completed');
    expect(done.result).toEqual({
      summary: 'reviewed: review PR 7',
      findings: [{ file: 'a.ts', line: 1, severity: 'low', message: 'nit' }],
    });
    const [post] = await h.runs(task_id, 1);
    if (!post) throw new Error('no POST');
    // Verified by an independent implementation of Standard Webhooks with the owner's h.secret.
    const body = verifyCallback(h.secret, post) as ReturnType<typeof pushBodyOf>;
    expect(post.headers['webhook-id']).toBe(body.data.lease_id);
    expect(post.headers['content-type']).toBe('application/json');
    expect(post.headers['x-agent-key']).toBe('k-123');
    expect(post.headers.traceparent).toBe(body.data.traceparent);
    expect(body.type).toBe('task.run');
    const base = `${h.t.config.publicUrl}/agent/${agent}/task/${task_id}`;
    expect(body.data).toMatchObject({
      task_id,
      agent_uuid: agent,
      message: 'review PR 7',
      messages: [{ role: 'user', content: 'review PR 7' }],
      priority: 5,
      metadata: { pr: 7 },
      concurrency_key: null,
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
      'concurrency_key',
      'attempt',
      'lease_expires_at',
      'timeout_at',
      'traceparent',
      'urls',
    ]);
    expect(() => verifyCallback(h.secret, post, { 'webhook-id': 'another' })).toThrow();
  });

  it('asks for input, then POSTs again with the whole conversation once the user answers', async () => {
    const agent = await h.httpAgent('/ask');
    const { task_id } = await submitTask(h.t, h.user, agent, { message: 'review it' });
    const waiting = await waitForStatus(h.t, h.user, agent, task_id, 'awaiting_input');
    expect(waiting.input_request?.message).toBe('Which branch?');
    expect((await sendMessage(h.t, h.user, agent, task_id, 'main')).statusCode).toBe(200);
    const done = await waitForStatus(h.t, h.user, agent, task_id, 'completed');
    expect(done.result?.summary).toBe('reviewed main');
    expect(done.messages.map((m) => [m.role, m.content])).toEqual([
      ['user', 'review it'],
      ['agent', 'Which branch?'],
      ['user', 'main'],
    ]);
    const [first, second] = (await h.runs(task_id, 2)).map(
      (r) => verifyCallback(h.secret, r) as ReturnType<typeof pushBodyOf>,
    );
    expect(second?.data.messages.map((m) => m.content)).toEqual(['review it', 'Which branch?', 'main']);
    // The answer continues the same attempt under a new lease.
    expect([first?.data.attempt, second?.data.attempt]).toEqual([1, 1]);
    expect(second?.data.lease_id).not.toBe(first?.data.lease_id);
  });

  it('after a 202 the agent holds the task under its lease and reports through the worker endpoints', async () => {
    const agent = await h.httpAgent('/async', { lease_seconds: 120 });
    const { task_id } = await submitTask(h.t, h.user, agent);
    const [post] = await h.runs(task_id, 1);
    const lease = pushBodyOf(post as NonNullable<typeof post>).data.lease_id;
    await eventually(async () => {
      const task = await getTask(h.t, h.user, agent, task_id);
      return task.status === 'running' ? task : undefined;
    }, 'the task running');
    const progress = await reportProgress(h.t, h.user, agent, task_id, {
      lease_id: lease,
      current_step: 'cloning',
      steps_completed: 1,
      total_steps: 2,
    });
    expect(progress.statusCode, progress.body).toBe(200);
    // progress extends the lease by lease_seconds
    const expires = Date.parse(progress.json().lease_expires_at);
    expect(expires).toBeGreaterThan(Date.now() + 100_000);
    const complete = await reportComplete(h.t, h.user, agent, task_id, lease, { summary: 'async done' });
    expect(complete.statusCode, complete.body).toBe(200);
    expect((await getTask(h.t, h.user, agent, task_id)).result?.summary).toBe('async done');
    expect(runsOf(h.receiver.requests, task_id)).toHaveLength(1);
  });

  it('after a 202 whose lease runs out, POSTs again with attempt 2 and a new lease', async () => {
    const agent = await h.httpAgent('/async-then-sync', { lease_seconds: 1 });
    const { task_id } = await submitTask(h.t, h.user, agent);
    const done = await waitForStatus(h.t, h.user, agent, task_id, 'completed');
    expect(done.result?.summary).toBe('second attempt');
    const [first, second] = (await h.runs(task_id, 2)).map((r) => pushBodyOf(r).data);
    expect([first?.attempt, second?.attempt]).toEqual([1, 2]);
    expect(second?.lease_id).not.toBe(first?.lease_id);
    // The first lease is gone: a late report under it is refused.
    const late = await reportComplete(h.t, h.user, agent, task_id, first?.lease_id as string);
    expect(late.json().error.code).toBe('TASK_NOT_RUNNING');
  });

  it('retries a 503 no sooner than its Retry-After, then completes', async () => {
    const agent = await h.httpAgent('/flaky');
    const { task_id } = await submitTask(h.t, h.user, agent);
    const done = await waitForStatus(h.t, h.user, agent, task_id, 'completed');
    expect(done.result?.summary).toBe('after a retry');
    const [first, second] = await h.runs(task_id, 2);
    expect(pushBodyOf(second as NonNullable<typeof second>).data.attempt).toBe(2);
    expect((second?.receivedAt ?? 0) - (first?.receivedAt ?? 0)).toBeGreaterThanOrEqual(950);
  });

  it('fails with DELIVERY_FAILED after three attempts that got a 500', async () => {
    const agent = await h.httpAgent('/broken');
    const { task_id } = await submitTask(h.t, h.user, agent);
    const failed = await waitForStatus(h.t, h.user, agent, task_id, 'failed', 15_000);
    expect(failed.error).toEqual({ code: 'DELIVERY_FAILED', message: 'The agent answered HTTP 500' });
    expect(runsOf(h.receiver.requests, task_id).map((r) => pushBodyOf(r).data.attempt)).toEqual([1, 2, 3]);
  });

  it("fails at once with the agent's own error, and with INVALID_AGENT_RESPONSE for an answer of another shape", async () => {
    const agent = await h.httpAgent('/fails');
    const { task_id } = await submitTask(h.t, h.user, agent);
    const failed = await waitForStatus(h.t, h.user, agent, task_id, 'failed');
    expect(failed.error).toEqual({ code: 'REPO_GONE', message: 'the repository is gone' });

    const weird = await h.httpAgent('/weird');
    const second = await submitTask(h.t, h.user, weird);
    const invalid = await waitForStatus(h.t, h.user, weird, second.task_id, 'failed');
    expect(invalid.error?.code).toBe('INVALID_AGENT_RESPONSE');
    expect(runsOf(h.receiver.requests, second.task_id)).toHaveLength(1);
  });

  it('fails with DELIVERY_FAILED when the agent does not answer within timeout_seconds', async () => {
    const agent = await h.httpAgent('/hang', { timeout_seconds: 1 });
    const { task_id } = await submitTask(h.t, h.user, agent);
    const failed = await waitForStatus(h.t, h.user, agent, task_id, 'failed', 20_000);
    expect(failed.error).toEqual({ code: 'DELIVERY_FAILED', message: 'The agent did not answer within 1 s' });
    expect(runsOf(h.receiver.requests, task_id)).toHaveLength(3);
  });

  it('masks header values, keeps them when the mask comes back, and stores them encrypted', async () => {
    const agent = await h.httpAgent('/sync', { headers: { 'X-Agent-Key': 'original-secret' } });
    const got = (await call(h.t.app, 'GET', `/agent/${agent}`, { token: h.user.token })).json();
    // As stored: no defaults filled in, the value masked.
    expect(got.runtime).toEqual({ type: 'http', url: expect.any(String), headers: { 'X-Agent-Key': '********' } });
    const row = await h.t.runtime.db.kysely
      .selectFrom('agents')
      .select('runtime')
      .where('uuid', '=', agent)
      .executeTakeFirstOrThrow();
    expect(JSON.stringify(row.runtime)).not.toContain('original-secret');

    const patched = await call(h.t.app, 'PATCH', `/agent/${agent}`, {
      token: h.user.token,
      body: { runtime: { ...got.runtime, headers: { ...got.runtime.headers, 'X-Other': 'two' } } },
    });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json().runtime.headers).toEqual({ 'X-Agent-Key': '********', 'X-Other': '********' });
    const { task_id } = await submitTask(h.t, h.user, agent);
    await waitForStatus(h.t, h.user, agent, task_id, 'completed');
    const [post] = await h.runs(task_id, 1);
    expect(post?.headers['x-agent-key']).toBe('original-secret');
    expect(post?.headers['x-other']).toBe('two');

    const unknown = await call(h.t.app, 'PATCH', `/agent/${agent}`, {
      token: h.user.token,
      body: { runtime: { ...got.runtime, headers: { 'X-New': '********' } } },
    });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().error.details.field).toBe('runtime.headers');
  });

  it('refuses worker claims on an http agent', async () => {
    const agent = await h.httpAgent('/sync');
    const claim = await call(h.t.app, 'POST', `/agent/${agent}/tasks/claim`, {
      headers: workerHeaders(h.user),
      body: {},
    });
    expect(claim.statusCode).toBe(400);
    expect(claim.json().error).toMatchObject({ code: 'INVALID_REQUEST', details: { field: 'runtime' } });
  });
});
