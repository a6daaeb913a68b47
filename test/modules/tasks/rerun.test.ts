import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, manualClock, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { cancelTask, claimOne, getTask, report, submitTask, workerHeaders } from '../../helpers/tasks.js';

const PUBLIC_URL = 'http://taskhook.test';

/** POST /agent/:id/task/:taskId/rerun with an optional body and headers. */
function rerun(t: TestApp, user: TestUser, agent: string, task: string, body?: unknown, headers = {}) {
  return call(t.app, 'POST', `/agent/${agent}/task/${task}/rerun`, {
    headers: { ...workerHeaders(user), ...headers },
    ...(body === undefined ? {} : { body }),
  });
}

describe.each(DATABASES)('rerun on $name', (database) => {
  let t: TestApp;
  let clock: ReturnType<typeof manualClock>;

  beforeAll(async () => {
    clock = manualClock();
    t = await buildTestApp(database, { clock, config: { publicUrl: PUBLIC_URL } });
  });
  afterAll(() => t.close());

  /** A task of a fresh agent, completed after a conversation. */
  async function completedTask(body: Record<string, unknown> = {}) {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const { task_id } = await submitTask(t, user, agent, {
      message: 'first words',
      priority: 8,
      metadata: { team: 'a', n: [1, 2] },
      timeout_override: 120,
      concurrency_key: 'k1',
      ...body,
    });
    const { lease_id } = await claimOne(t, user, agent);
    await report(t, user, agent, task_id, 'input_request', { lease_id, message: 'which?' });
    await call(t.app, 'POST', `/agent/${agent}/task/${task_id}/message`, {
      headers: workerHeaders(user),
      body: { message: 'main' },
    });
    const again = await claimOne(t, user, agent);
    const done = await report(t, user, agent, task_id, 'complete', {
      lease_id: again.lease_id,
      result: { summary: 'ok' },
    });
    expect(done.statusCode).toBe(200);
    return { user, agent, task_id };
  }

  it('copies the original submit fields into a new queued task, attempt 1, rerun_of set; the source is unchanged', async () => {
    const { user, agent, task_id } = await completedTask();
    const before = await getTask(t, user, agent, task_id);
    clock.advance(5000);
    const res = await rerun(t, user, agent, task_id);
    expect(res.statusCode).toBe(202);
    const answer = res.json();
    expect(Object.keys(answer).sort()).toEqual(
      ['task_id', 'status', 'created_at', 'estimated_start', 'poll_url', 'cancel_url', 'rerun_of'].sort(),
    );
    expect(answer).toMatchObject({ status: 'queued', rerun_of: task_id });
    expect(res.headers.location).toBe(`${PUBLIC_URL}/agent/${agent}/task/${answer.task_id}`);
    const made = await getTask(t, user, agent, answer.task_id);
    expect(made).toMatchObject({
      status: 'queued',
      message: 'first words',
      priority: 8,
      metadata: { team: 'a', n: [1, 2] },
      concurrency_key: 'k1',
      attempt: 1,
      last_error: null,
      rerun_of: task_id,
      parent_task_id: null,
      created_at: answer.created_at,
    });
    expect(made.messages.map((m) => m.content)).toEqual(['first words']);
    expect(made.result).toBeUndefined();
    expect(await getTask(t, user, agent, task_id)).toEqual(before);
    // The timeout came along: a claim of the rerun runs for 120 s.
    const claimed = await claimOne(t, user, agent);
    expect(Date.parse(claimed.timeout_at) - clock.now()).toBe(120_000);
  });

  it('takes overrides ({} and none alike), validates the merged body as a submit, and reruns a rerun', async () => {
    const { user, agent, task_id } = await completedTask();
    expect((await rerun(t, user, agent, task_id, {})).statusCode).toBe(202);
    const res = await rerun(t, user, agent, task_id, {
      message: 'other words',
      priority: 2,
      metadata: { only: true },
      concurrency_key: null,
      delay_seconds: 60,
    });
    expect(res.statusCode).toBe(202);
    const made = await getTask(t, user, agent, res.json().task_id);
    expect(made).toMatchObject({
      message: 'other words',
      priority: 2,
      metadata: { only: true },
      concurrency_key: null,
    });
    expect(Date.parse(made.available_at as string) - Date.parse(made.created_at)).toBe(60_000);

    const bad = await rerun(t, user, agent, task_id, { priority: 11 });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.details.field).toBe('priority');
    const unknown = await rerun(t, user, agent, task_id, { nope: 1 });
    expect(unknown.json().error.details.field).toBe('nope');
    const both = await rerun(t, user, agent, task_id, {
      run_at: new Date(clock.now()).toISOString(),
      delay_seconds: 1,
    });
    expect(both.statusCode).toBe(400);
    const hook = await rerun(t, user, agent, task_id, { callback_mode: 'webhook' });
    expect(hook.json().error).toMatchObject({ code: 'INVALID_REQUEST', details: { field: 'webhook_url' } });
    const privateHook = await rerun(t, user, agent, task_id, {
      callback_mode: 'webhook',
      webhook_url: 'http://10.0.0.1/hook',
    });
    expect(privateHook.statusCode).toBe(400);
    expect(privateHook.json().error.details.field).toBe('webhook_url');
    const parent = await rerun(t, user, agent, task_id, { parent_task_id: task_id });
    expect(parent.statusCode).toBe(400);
    expect(parent.json().error).toMatchObject({ code: 'INVALID_REQUEST', details: { field: 'parent_task_id' } });

    // A rerun of a rerun names the task actually rerun.
    const first = res.json().task_id;
    await call(t.app, 'POST', `/agent/${agent}/task/${first}/cancel`, { headers: workerHeaders(user) });
    const second = await rerun(t, user, agent, first);
    expect(second.json().rerun_of).toBe(first);
    expect((await getTask(t, user, agent, second.json().task_id)).rerun_of).toBe(first);
  });

  it('refuses an open task (409), an unknown or foreign task (404) and an unavailable agent (503), creating nothing', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const queued = await submitTask(t, user, agent);
    expect((await rerun(t, user, agent, queued.task_id)).json().error.code).toBe('CONFLICT');
    expect((await rerun(t, user, agent, queued.task_id)).statusCode).toBe(409);
    const { lease_id } = await claimOne(t, user, agent);
    expect((await rerun(t, user, agent, queued.task_id)).statusCode).toBe(409);
    await report(t, user, agent, queued.task_id, 'input_request', { lease_id, message: 'which?' });
    expect((await rerun(t, user, agent, queued.task_id)).statusCode).toBe(409);

    const other = await createAgent(t, user);
    expect((await rerun(t, user, other.uuid, queued.task_id)).statusCode).toBe(404);
    const stranger = await createUser(t);
    expect((await rerun(t, stranger, agent, queued.task_id)).statusCode).toBe(404);
    expect((await rerun(t, user, agent, crypto.randomUUID())).statusCode).toBe(404);

    expect((await cancelTask(t, user, agent, queued.task_id)).statusCode).toBe(200);
    const paused = await call(t.app, 'PATCH', `/agent/${agent}`, { token: user.token, body: { status: 'paused' } });
    expect(paused.statusCode).toBe(200);
    const refused = await rerun(t, user, agent, queued.task_id);
    expect(refused.statusCode).toBe(503);
    expect(refused.json().error.code).toBe('AGENT_UNAVAILABLE');
    const list = await call(t.app, 'GET', `/agent/${agent}/tasks`, { headers: workerHeaders(user) });
    expect(list.json().tasks).toHaveLength(1);
  });

  it('an Idempotency-Key answers the first rerun again; another source or body under it is 422', async () => {
    const { user, agent, task_id } = await completedTask();
    const key = { 'idempotency-key': `rerun-${crypto.randomUUID()}` };
    const first = await rerun(t, user, agent, task_id, { priority: 3 }, key);
    expect(first.statusCode).toBe(202);
    const again = await rerun(t, user, agent, task_id, { priority: 3 }, key);
    expect(again.statusCode).toBe(202);
    expect(again.json()).toEqual(first.json());
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect((await rerun(t, user, agent, task_id, { priority: 4 }, key)).statusCode).toBe(422);
    // A submit under the same key is another request.
    const submitted = await call(t.app, 'POST', `/agent/request/${agent}`, {
      headers: { ...workerHeaders(user), ...key },
      body: { message: 'first words' },
    });
    expect(submitted.statusCode).toBe(422);
    const list = await call(t.app, 'GET', `/agent/${agent}/tasks`, { headers: workerHeaders(user) });
    expect(list.json().tasks).toHaveLength(2);
  });
});
