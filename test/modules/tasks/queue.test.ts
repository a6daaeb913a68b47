import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { iso } from '../../../src/lib/time.js';
import { buildTestApp, call, manualClock, type TestApp } from '../../helpers/app.js';
import { DATABASES, type TestDatabase } from '../../helpers/databases.js';
import { createAgent, createUser } from '../../helpers/factories.js';
import {
  cancelTask,
  claimOne,
  claimTasks,
  getTask,
  listTasks,
  reportBody,
  reportComplete,
  reportFail,
  reportInputRequest,
  reportProgress,
  sendMessage,
  submitTask,
  sweptTask,
  within,
  workerHeaders,
} from '../../helpers/tasks.js';

/**
 * An app whose time only moves when the test says so, and whose sweeper runs only when the test
 * says so (`sweptTask`), so what a sweep does or leaves alone is checked without waiting.
 */
async function buildClockedApp(database: TestDatabase) {
  const clock = manualClock();
  const t = await buildTestApp(database, { clock, config: { sweepIntervalMs: 24 * 60 * 60 * 1000 } });
  return { t, clock };
}

/**
 * Resolves once the user has a long-polling claim in progress (it holds a wait slot from before
 * its first look until it answers), so what the test does next happens during the wait.
 */
async function claimWaiting(t: TestApp, userUuid: string) {
  await vi.waitFor(() => expect(t.app.connections.held(userUuid, 'wait')).toBe(1), { timeout: 5000, interval: 5 });
}

describe.each(DATABASES)('task queue on $name', (database) => {
  let t: TestApp;

  beforeAll(async () => {
    // The exactly-once test alone makes thousands of requests as one user.
    t = await buildTestApp(database, { config: { rateLimit: 1_000_000 } });
  });
  afterAll(() => t.close());

  it('hands out each of 2,000 tasks exactly once to 4 concurrent workers', { timeout: 180_000 }, async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user, { concurrency: 1000 })).uuid;
    const submitted = new Set<string>();
    for (let batch = 0; batch < 20; batch++) {
      const answers = await Promise.all(
        Array.from({ length: 100 }, (_, i) => submitTask(t, user, agent, { message: `task ${batch * 100 + i}` })),
      );
      for (const a of answers) submitted.add(a.task_id);
    }
    expect(submitted.size).toBe(2000);

    async function worker(name: string): Promise<string[]> {
      const done: string[] = [];
      for (;;) {
        const tasks = await claimTasks(t, user, agent, { worker_id: name, max_tasks: 10 });
        if (tasks.length === 0) return done;
        expect(tasks.length).toBeLessThanOrEqual(10);
        const results = await Promise.all(
          tasks.map((task) => reportComplete(t, user, agent, task.task_id, task.lease_id, { summary: name })),
        );
        for (const res of results) expect(res.statusCode, res.body).toBe(200);
        done.push(...tasks.map((task) => task.task_id));
      }
    }
    const perWorker = await Promise.all(['w1', 'w2', 'w3', 'w4'].map(worker));
    const all = perWorker.flat();

    expect(all).toHaveLength(2000);
    expect(new Set(all).size).toBe(2000);
    expect(new Set(all)).toEqual(submitted);
    // The workers really ran side by side.
    expect(perWorker.filter((done) => done.length > 0).length).toBeGreaterThan(1);
    expect((await listTasks(t, user, agent, '?status=completed&limit=1')).pagination.total).toBe(2000);
    for (const status of ['queued', 'running', 'failed']) {
      expect((await listTasks(t, user, agent, `?status=${status}&limit=1`)).pagination.total).toBe(0);
    }
  });

  it('claims by priority (10 first), then age', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const priorities = [5, 1, 10, 5, 10, 3, 1, undefined];
    const ids: string[] = [];
    for (const priority of priorities) {
      ids.push((await submitTask(t, user, agent, priority === undefined ? {} : { priority })).task_id);
    }
    const expected = [2, 4, 0, 3, 7, 5, 1, 6].map((i) => ids[i]);

    const oneByOne: string[] = [];
    for (let i = 0; i < ids.length; i++) oneByOne.push((await claimOne(t, user, agent)).task_id);
    expect(oneByOne).toEqual(expected);
    expect(await claimTasks(t, user, agent)).toEqual([]);

    const second = (await createAgent(t, user)).uuid;
    const secondIds: string[] = [];
    for (const priority of priorities) {
      secondIds.push((await submitTask(t, user, second, priority === undefined ? {} : { priority })).task_id);
    }
    const batch = await claimTasks(t, user, second, { max_tasks: 10 });
    expect(batch.map((task) => task.task_id)).toEqual([2, 4, 0, 3, 7, 5, 1, 6].map((i) => secondIds[i]));
    expect(batch.map((task) => task.priority)).toEqual([10, 10, 5, 5, 5, 3, 1, 1]);
  });

  it("honours the agent's concurrency: a third claim gets nothing until a slot frees", async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user, { concurrency: 2 })).uuid;
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await submitTask(t, user, agent, { message: `t${i}` })).task_id);

    const first = await claimTasks(t, user, agent, { max_tasks: 10 });
    expect(first.map((task) => task.task_id)).toEqual(ids.slice(0, 2));
    expect(await claimTasks(t, user, agent, { max_tasks: 10 })).toEqual([]);

    const [a, b] = first;
    if (!a || !b) throw new Error('expected two claims');
    expect((await reportComplete(t, user, agent, a.task_id, a.lease_id)).statusCode).toBe(200);
    const third = await claimTasks(t, user, agent, { max_tasks: 10 });
    expect(third.map((task) => task.task_id)).toEqual([ids[2]]);
    expect(await claimTasks(t, user, agent)).toEqual([]);

    // A task waiting for its user does not hold a slot.
    expect((await reportInputRequest(t, user, agent, b.task_id, b.lease_id, 'which file?')).statusCode).toBe(200);
    expect((await claimOne(t, user, agent)).task_id).toBe(ids[3]);
    expect(await claimTasks(t, user, agent)).toEqual([]);
    // A cancelled task frees its slot at once; the user's reply queues the waiting task for it.
    expect((await cancelTask(t, user, agent, ids[2] as string)).statusCode).toBe(200);
    expect((await sendMessage(t, user, agent, b.task_id, 'src/a.ts')).statusCode).toBe(200);
    const resumed = await claimOne(t, user, agent);
    expect(resumed.task_id).toBe(b.task_id);
    expect(resumed.attempt).toBe(1);
  });

  it('a long-polling claim returns the task as soon as it is submitted', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const waiting = claimTasks(t, user, agent, { wait_seconds: 5 });
    const settled = { done: false };
    void waiting.then(() => {
      settled.done = true;
    });
    await claimWaiting(t, user.uuid);
    expect(settled.done).toBe(false);

    const { task_id } = await submitTask(t, user, agent, { message: 'wake up' });
    const claimed = await within(waiting, 3500, 'claim');
    expect(claimed.map((task) => task.task_id)).toEqual([task_id]);
    expect((await getTask(t, user, agent, task_id)).status).toBe('running');
  });

  it('a long poll is woken by a reply that makes a task claimable and by a slot that frees', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user, { concurrency: 1 })).uuid;
    const asking = (await submitTask(t, user, agent, { message: 'asks' })).task_id;
    const askingClaim = await claimOne(t, user, agent);
    await reportInputRequest(t, user, agent, asking, askingClaim.lease_id, 'which?');

    const waitingForReply = claimTasks(t, user, agent, { wait_seconds: 5 });
    await claimWaiting(t, user.uuid);
    expect((await sendMessage(t, user, agent, asking, 'this one')).statusCode).toBe(200);
    const resumed = await within(waitingForReply, 3500, 'claim');
    expect(resumed.map((task) => task.task_id)).toEqual([asking]);

    // The only slot is held; the next task waits for it.
    const next = (await submitTask(t, user, agent, { message: 'next' })).task_id;
    const waitingForSlot = claimTasks(t, user, agent, { wait_seconds: 5 });
    await claimWaiting(t, user.uuid);
    expect((await reportComplete(t, user, agent, asking, resumed[0]?.lease_id as string)).statusCode).toBe(200);
    expect((await within(waitingForSlot, 3500, 'claim')).map((task) => task.task_id)).toEqual([next]);
  });

  it('a long poll with no work answers an empty list when its wait runs out', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    expect(await claimTasks(t, user, agent, { wait_seconds: 1 })).toEqual([]);
  });

  it('a task cancelled while running: the heartbeat says cancelled, the late complete is refused', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const { task_id } = await submitTask(t, user, agent);
    const claimed = await claimOne(t, user, agent);
    const cancelled = await cancelTask(t, user, agent, task_id);
    expect(cancelled.statusCode).toBe(200);

    const heartbeat = await reportProgress(t, user, agent, task_id, reportBody('progress', claimed.lease_id));
    expect(heartbeat.statusCode).toBe(200);
    expect(heartbeat.json().status).toBe('cancelled');
    const late = await reportComplete(t, user, agent, task_id, claimed.lease_id);
    expect(late.statusCode).toBe(400);
    expect(late.json().error.code).toBe('TASK_NOT_RUNNING');
    const task = await getTask(t, user, agent, task_id);
    expect(task.status).toBe('cancelled');
    expect(task.cancelled_at).toBe(cancelled.json().cancelled_at);
    expect(task).not.toHaveProperty('result');
  });

  it('a retryable failure queues the task again with attempt + 1, and the third one is final', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const { task_id } = await submitTask(t, user, agent);
    for (const attempt of [1, 2]) {
      const claimed = await claimOne(t, user, agent);
      expect(claimed).toMatchObject({ task_id, attempt });
      const res = await reportFail(t, user, agent, task_id, claimed.lease_id, { message: `try ${attempt}` }, true);
      expect(res.statusCode).toBe(200);
      expect(res.json().status).toBe('queued');
      expect(res.json()).not.toHaveProperty('error');
      // The failing worker's lease is over.
      const stale = await reportComplete(t, user, agent, task_id, claimed.lease_id);
      expect(stale.json().error.code).toBe('TASK_NOT_RUNNING');
    }
    const last = await claimOne(t, user, agent);
    expect(last.attempt).toBe(3);
    const res = await reportFail(t, user, agent, task_id, last.lease_id, { code: 'FLAKY', message: 'try 3' }, true);
    expect(res.json()).toMatchObject({ status: 'failed', error: { code: 'FLAKY', message: 'try 3' } });
    expect(await getTask(t, user, agent, task_id)).toEqual(res.json());
    expect(await claimTasks(t, user, agent)).toEqual([]);
  });

  it('a released task is queued again at once without using up an attempt', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user, { concurrency: 1 })).uuid;
    const { task_id } = await submitTask(t, user, agent);
    const first = await claimOne(t, user, agent);
    const released = await call(t.app, 'POST', `/agent/${agent}/task/${task_id}/release`, {
      headers: workerHeaders(user),
      body: { lease_id: first.lease_id },
    });
    expect(released.statusCode).toBe(200);
    expect(released.json().status).toBe('queued');
    const late = await reportComplete(t, user, agent, task_id, first.lease_id);
    expect(late.json().error.code).toBe('TASK_NOT_RUNNING');
    const again = await claimOne(t, user, agent);
    expect(again).toMatchObject({ task_id, attempt: 1 });
    expect((await reportComplete(t, user, agent, task_id, again.lease_id)).statusCode).toBe(200);
  });

  it('a failure that is not retryable is final at once', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const { task_id } = await submitTask(t, user, agent);
    const claimed = await claimOne(t, user, agent);
    const res = await reportFail(t, user, agent, task_id, claimed.lease_id, { message: 'no' }, false);
    expect(res.json()).toMatchObject({ status: 'failed', error: { code: 'AGENT_ERROR', message: 'no' } });
    expect(await claimTasks(t, user, agent)).toEqual([]);
  });

  it('deleting an agent cancels its open tasks and leaves finished ones alone', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const done = (await submitTask(t, user, agent, { message: 'done' })).task_id;
    const doneClaim = await claimOne(t, user, agent);
    await reportComplete(t, user, agent, done, doneClaim.lease_id);
    const waiting = (await submitTask(t, user, agent, { message: 'waiting' })).task_id;
    const waitingClaim = await claimOne(t, user, agent);
    await reportInputRequest(t, user, agent, waiting, waitingClaim.lease_id, 'which?');
    const running = (await submitTask(t, user, agent, { message: 'running' })).task_id;
    const runningClaim = await claimOne(t, user, agent);
    const queued = (await submitTask(t, user, agent, { message: 'queued' })).task_id;

    expect((await call(t.app, 'DELETE', `/agent/${agent}`, { token: user.token })).statusCode).toBe(204);

    for (const id of [waiting, running, queued]) {
      const task = await getTask(t, user, agent, id);
      expect(task.status, id).toBe('cancelled');
      expect(task.cancelled_at).toEqual(expect.any(String));
    }
    expect((await getTask(t, user, agent, done)).status).toBe('completed');
    const heartbeat = await reportProgress(t, user, agent, running, reportBody('progress', runningClaim.lease_id));
    expect(heartbeat.json().status).toBe('cancelled');
    const late = await reportComplete(t, user, agent, running, runningClaim.lease_id);
    expect(late.json().error.code).toBe('TASK_NOT_RUNNING');
    const submit = await call(t.app, 'POST', `/agent/request/${agent}`, {
      headers: workerHeaders(user),
      body: { message: 'too late' },
    });
    expect(submit.statusCode).toBe(404);
  });

  describe('with a manual clock', () => {
    it('an expired lease requeues the task with attempt + 1; after 3 expiries it fails LEASE_EXPIRED', async () => {
      const { t: app, clock } = await buildClockedApp(database);
      try {
        const user = await createUser(app);
        const agent = (await createAgent(app, user)).uuid;
        const { task_id } = await submitTask(app, user, agent, { message: 'slow work' });

        const first = await claimOne(app, user, agent, { worker_id: 'a', lease_seconds: 5 });
        expect(first).toMatchObject({ task_id, attempt: 1, lease_expires_at: iso(clock.now() + 5000) });
        clock.advance(6000);
        expect((await sweptTask(app, user, agent, task_id)).status).toBe('queued');

        const second = await claimOne(app, user, agent, { worker_id: 'b', lease_seconds: 5 });
        expect(second).toMatchObject({ task_id, attempt: 2 });
        expect(second.lease_id).not.toBe(first.lease_id);
        expect(second.messages.map((m) => m.content)).toEqual(['slow work']);
        expect(second.timeout_at).toBe(first.timeout_at);
        const late = await reportComplete(app, user, agent, task_id, first.lease_id);
        expect(late.statusCode).toBe(400);
        expect(late.json().error.code).toBe('TASK_NOT_RUNNING');
        const lateBeat = await reportProgress(app, user, agent, task_id, reportBody('progress', first.lease_id));
        expect(lateBeat.statusCode).toBe(400);
        expect((await getTask(app, user, agent, task_id)).status).toBe('running');

        clock.advance(6000);
        expect((await sweptTask(app, user, agent, task_id)).status).toBe('queued');
        const third = await claimOne(app, user, agent, { worker_id: 'c', lease_seconds: 5 });
        expect(third.attempt).toBe(3);

        clock.advance(6000);
        const failed = await sweptTask(app, user, agent, task_id);
        expect(failed.status).toBe('failed');
        expect(failed.error?.code).toBe('LEASE_EXPIRED');
        expect(failed.failed_at).toEqual(expect.any(String));
        expect((await reportComplete(app, user, agent, task_id, third.lease_id)).json().error.code).toBe(
          'TASK_NOT_RUNNING',
        );
        expect(await claimTasks(app, user, agent)).toEqual([]);
      } finally {
        await app.close();
      }
    });

    it('a heartbeat extends the lease by its lease_seconds', async () => {
      const { t: app, clock } = await buildClockedApp(database);
      try {
        const user = await createUser(app);
        const agent = (await createAgent(app, user)).uuid;
        const { task_id } = await submitTask(app, user, agent);
        const claimed = await claimOne(app, user, agent, { lease_seconds: 5 });
        for (let i = 0; i < 3; i++) {
          clock.advance(4000);
          const beat = await reportProgress(app, user, agent, task_id, reportBody('progress', claimed.lease_id));
          expect(beat.json()).toEqual({ task_id, status: 'running', lease_expires_at: iso(clock.now() + 5000) });
        }
        // Twelve seconds after a 5 s claim, and still held: a sweep leaves it alone.
        expect((await sweptTask(app, user, agent, task_id)).status).toBe('running');
        expect((await reportComplete(app, user, agent, task_id, claimed.lease_id)).statusCode).toBe(200);
      } finally {
        await app.close();
      }
    });

    it('a task running past its timeout fails with TIMEOUT; the clock starts when it starts', async () => {
      const { t: app, clock } = await buildClockedApp(database);
      try {
        const user = await createUser(app);
        const agent = (await createAgent(app, user)).uuid;
        const { task_id } = await submitTask(app, user, agent, { timeout_override: 1 });
        // Time in the queue does not count.
        clock.advance(10_000);
        expect((await sweptTask(app, user, agent, task_id)).status).toBe('queued');

        const claimed = await claimOne(app, user, agent);
        expect(claimed.timeout_at).toBe(iso(clock.now() + 1000));
        clock.advance(2000);
        const failed = await sweptTask(app, user, agent, task_id);
        expect(failed.status).toBe('failed');
        expect(failed.error?.code).toBe('TIMEOUT');
        const late = await reportComplete(app, user, agent, task_id, claimed.lease_id);
        expect(late.json().error.code).toBe('TASK_NOT_RUNNING');
        expect((await getTask(app, user, agent, task_id)).status).toBe('failed');
      } finally {
        await app.close();
      }
    });

    it('an expired lease frees its slot, and the requeued task keeps its place by age', async () => {
      const { t: app, clock } = await buildClockedApp(database);
      try {
        const user = await createUser(app);
        const agent = (await createAgent(app, user, { concurrency: 1 })).uuid;
        const { task_id } = await submitTask(app, user, agent);
        const other = (await submitTask(app, user, agent)).task_id;
        const claimed = await claimOne(app, user, agent, { lease_seconds: 5 });
        expect(claimed.task_id).toBe(task_id);
        // The expired lease frees the only slot for the requeued task, first in line again.
        clock.advance(6000);
        expect((await sweptTask(app, user, agent, task_id)).status).toBe('queued');
        const next = await claimOne(app, user, agent, { lease_seconds: 60 });
        expect(next).toMatchObject({ task_id, attempt: 2 });
        expect(await claimTasks(app, user, agent)).toEqual([]);
        expect((await getTask(app, user, agent, other)).status).toBe('queued');
      } finally {
        await app.close();
      }
    });
  });
});
