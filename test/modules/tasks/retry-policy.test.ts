import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { iso } from '../../../src/lib/time.js';
import { buildTestApp, call, manualClock, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser } from '../../helpers/factories.js';
import { claimOne, claimTasks, getTask, report, reportFail, submitTask, sweptTask } from '../../helpers/tasks.js';

const DEFAULT = { max_attempts: 3, backoff: { initial_seconds: 0, factor: 2, max_seconds: 3600 } };

describe.each(DATABASES)('retry policies on $name', (database) => {
  let t: TestApp;
  let clock: ReturnType<typeof manualClock>;

  beforeAll(async () => {
    clock = manualClock();
    // The sweeper runs only when a test asks (sweptTask).
    t = await buildTestApp(database, { clock, config: { sweepIntervalMs: 24 * 60 * 60 * 1000 } });
  });
  afterAll(() => t.close());

  it('an agent shows its retry policy with every member filled in; PATCH replaces it whole', async () => {
    const user = await createUser(t);
    const plain = await createAgent(t, user);
    expect((plain as unknown as { retry: unknown }).retry).toEqual(DEFAULT);
    const made = await call(t.app, 'POST', '/agent', {
      token: user.token,
      body: { name: 'retrying', retry: { max_attempts: 5, backoff: { initial_seconds: 1.5 } } },
    });
    expect(made.statusCode).toBe(201);
    expect(made.json().retry).toEqual({ max_attempts: 5, backoff: { ...DEFAULT.backoff, initial_seconds: 1.5 } });
    const patched = await call(t.app, 'PATCH', `/agent/${made.json().uuid}`, {
      token: user.token,
      body: { retry: { backoff: { factor: 3 } } },
    });
    expect(patched.statusCode).toBe(200);
    expect(patched.json().retry).toEqual({ max_attempts: 3, backoff: { ...DEFAULT.backoff, factor: 3 } });
    const read = await call(t.app, 'GET', `/agent/${made.json().uuid}`, { token: user.token });
    expect(read.json().retry).toEqual(patched.json().retry);
  });

  it.each([
    [{ max_attempts: 0 }, 'retry.max_attempts'],
    [{ max_attempts: 101 }, 'retry.max_attempts'],
    [{ max_attempts: 2.5 }, 'retry.max_attempts'],
    [{ backoff: { factor: 11 } }, 'retry.backoff.factor'],
    [{ backoff: { factor: '2' } }, 'retry.backoff.factor'],
    [{ backoff: { initial_seconds: -1 } }, 'retry.backoff.initial_seconds'],
    [{ backoff: { max_seconds: 86401 } }, 'retry.backoff.max_seconds'],
    [{ backoff: { jitter: true } }, 'retry.backoff.jitter'],
    [{ tries: 2 }, 'retry.tries'],
    [null, 'retry'],
  ])('refuses retry %j with 400 naming %s, and changes nothing', async (retry, field) => {
    const user = await createUser(t);
    const made = await call(t.app, 'POST', '/agent', { token: user.token, body: { name: 'x', retry } });
    expect(made.statusCode).toBe(400);
    expect(made.json().error).toMatchObject({ code: 'INVALID_REQUEST', details: { field } });
    const agent = await createAgent(t, user);
    const patched = await call(t.app, 'PATCH', `/agent/${agent.uuid}`, { token: user.token, body: { retry } });
    expect(patched.statusCode).toBe(400);
    expect(patched.json().error.details.field).toBe(field);
    const read = await call(t.app, 'GET', `/agent/${agent.uuid}`, { token: user.token });
    expect(read.json().retry).toEqual(DEFAULT);
  });

  it('every task shows attempt, max_attempts, last_error and available_at (only while queued)', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const { task_id, created_at } = await submitTask(t, user, agent);
    expect(await getTask(t, user, agent, task_id)).toMatchObject({
      status: 'queued',
      attempt: 1,
      max_attempts: 3,
      last_error: null,
      available_at: created_at,
    });
    const claimed = await claimOne(t, user, agent);
    expect(await getTask(t, user, agent, task_id)).toMatchObject({ status: 'running', available_at: null });
    await reportFail(t, user, agent, task_id, claimed.lease_id, { code: 'BROKEN', message: 'no' });
    const failed = await getTask(t, user, agent, task_id);
    expect(failed).toMatchObject({
      status: 'failed',
      attempt: 1,
      available_at: null,
      error: { code: 'BROKEN', message: 'no' },
      last_error: { code: 'BROKEN', message: 'no', attempt: 1, at: failed.failed_at },
    });
  });

  it("a retryable failure waits the policy's backoff; the last attempt fails; a later PATCH leaves the task's policy", async () => {
    const user = await createUser(t);
    const made = await call(t.app, 'POST', '/agent', {
      token: user.token,
      body: {
        name: 'backing off',
        retry: { max_attempts: 3, backoff: { initial_seconds: 10, factor: 3, max_seconds: 20 } },
      },
    });
    const agent = made.json().uuid as string;
    const { task_id } = await submitTask(t, user, agent);
    // Tasks created from now on would never be retried; this one keeps its 3 attempts.
    await call(t.app, 'PATCH', `/agent/${agent}`, { token: user.token, body: { retry: { max_attempts: 1 } } });

    const first = await claimOne(t, user, agent);
    const failAt = clock.now();
    const res = await reportFail(t, user, agent, task_id, first.lease_id, { message: 'flaky' }, true);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      status: 'queued',
      attempt: 2,
      max_attempts: 3,
      available_at: iso(failAt + 10_000),
      estimated_start: iso(failAt + 10_000),
      last_error: { code: 'AGENT_ERROR', message: 'flaky', attempt: 1, at: iso(failAt) },
    });
    // Not handed out before available_at.
    clock.advance(9_999);
    expect(await claimTasks(t, user, agent)).toEqual([]);
    clock.advance(1);
    const second = await claimOne(t, user, agent);
    expect(second).toMatchObject({ task_id, attempt: 2 });
    expect(Date.parse(second.lease_expires_at) - 60_000).toBeGreaterThanOrEqual(failAt + 10_000);

    // Attempt 2's wait is min(20, 10 × 3) = 20 s.
    const again = await reportFail(t, user, agent, task_id, second.lease_id, { message: 'flaky' }, true);
    expect(again.json()).toMatchObject({ attempt: 3, available_at: iso(clock.now() + 20_000) });
    clock.advance(20_000);
    const third = await claimOne(t, user, agent);
    const last = await reportFail(t, user, agent, task_id, third.lease_id, { message: 'still flaky' }, true);
    expect(last.json()).toMatchObject({
      status: 'failed',
      attempt: 3,
      error: { message: 'still flaky' },
      last_error: { message: 'still flaky', attempt: 3 },
    });
    // The PATCHed policy applies to the next task.
    const next = await submitTask(t, user, agent);
    expect((await getTask(t, user, agent, next.task_id)).max_attempts).toBe(1);
  });

  it('retry_after_seconds asks for a longer wait (not capped by max_seconds); it needs retryable', async () => {
    const user = await createUser(t);
    const made = await call(t.app, 'POST', '/agent', {
      token: user.token,
      body: { name: 'asked', retry: { backoff: { initial_seconds: 5, max_seconds: 5 } } },
    });
    const agent = made.json().uuid as string;
    const { task_id } = await submitTask(t, user, agent);
    const claimed = await claimOne(t, user, agent);
    const alone = await report(t, user, agent, task_id, 'fail', {
      lease_id: claimed.lease_id,
      error: { message: 'x' },
      retry_after_seconds: 30,
    });
    expect(alone.statusCode).toBe(400);
    expect(alone.json().error).toMatchObject({ code: 'INVALID_REQUEST', details: { field: 'retry_after_seconds' } });
    expect((await getTask(t, user, agent, task_id)).status).toBe('running');
    const tooLong = await report(t, user, agent, task_id, 'fail', {
      lease_id: claimed.lease_id,
      error: { message: 'x' },
      retryable: true,
      retry_after_seconds: 86401,
    });
    expect(tooLong.json().error.details.field).toBe('retry_after_seconds');
    const asked = await report(t, user, agent, task_id, 'fail', {
      lease_id: claimed.lease_id,
      error: { message: 'rate limited' },
      retryable: true,
      retry_after_seconds: 30,
    });
    expect(asked.json()).toMatchObject({ status: 'queued', available_at: iso(clock.now() + 30_000) });
    // A shorter ask than the policy's delay: the policy's.
    clock.advance(30_000);
    const second = await claimOne(t, user, agent);
    const shorter = await report(t, user, agent, task_id, 'fail', {
      lease_id: second.lease_id,
      error: { message: 'again' },
      retryable: true,
      retry_after_seconds: 1,
    });
    expect(shorter.json()).toMatchObject({ attempt: 3, available_at: iso(clock.now() + 5_000) });
  });

  it('a lease expiry waits from the lease end; after max_attempts it fails LEASE_EXPIRED with last_error', async () => {
    const user = await createUser(t);
    const made = await call(t.app, 'POST', '/agent', {
      token: user.token,
      body: { name: 'expiring', retry: { max_attempts: 2, backoff: { initial_seconds: 60 } } },
    });
    const agent = made.json().uuid as string;
    const { task_id } = await submitTask(t, user, agent);
    // Leases far longer than a test runs: other files' apps share the PostgreSQL database and sweep on
    // the real clock, so a short lease could expire under them while this test holds the clock.
    const first = await claimOne(t, user, agent, { lease_seconds: 600 });
    clock.advance(610_000);
    const requeued = await sweptTask(t, user, agent, task_id);
    expect(requeued).toMatchObject({
      status: 'queued',
      attempt: 2,
      available_at: iso(Date.parse(first.lease_expires_at) + 60_000),
      last_error: { code: 'LEASE_EXPIRED', attempt: 1, at: first.lease_expires_at },
    });
    expect(await claimTasks(t, user, agent)).toEqual([]);
    clock.advance(55_000);
    const second = await claimOne(t, user, agent, { lease_seconds: 600 });
    expect(second.attempt).toBe(2);
    clock.advance(610_000);
    const failed = await sweptTask(t, user, agent, task_id);
    expect(failed).toMatchObject({
      status: 'failed',
      error: { code: 'LEASE_EXPIRED' },
      last_error: { code: 'LEASE_EXPIRED', attempt: 2, at: second.lease_expires_at },
    });
  });

  it('max_attempts 1 never retries', async () => {
    const user = await createUser(t);
    const made = await call(t.app, 'POST', '/agent', {
      token: user.token,
      body: { name: 'once', retry: { max_attempts: 1 } },
    });
    const agent = made.json().uuid as string;
    const { task_id } = await submitTask(t, user, agent);
    const claimed = await claimOne(t, user, agent);
    const res = await reportFail(t, user, agent, task_id, claimed.lease_id, { message: 'x' }, true);
    expect(res.json()).toMatchObject({ status: 'failed', attempt: 1, max_attempts: 1 });
  });
});
