import type { IncomingMessage } from 'node:http';
import {
  type ClaimedTask,
  type RunningWorker,
  runWorker,
  TaskFailure,
  type TaskHandler,
  TaskhookClient,
} from '@taskhook/sdk';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { DATABASES } from '../helpers/databases.js';
import { createAgent, createUser } from '../helpers/factories.js';
import { eventually, httpWorker, listeningApp, within } from './support.js';

/** A promise the test opens when it wants. */
function gate() {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

/** Resolves when `signal` aborts; fails after `ms` so a handler never hangs a test. */
function aborted(signal: AbortSignal, ms = 15_000): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return within(
    new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true })),
    ms,
    'the abort signal',
  );
}

describe.each(DATABASES)('runWorker on $name', (database) => {
  let t: TestApp;
  let baseUrl: string;
  const workers: RunningWorker[] = [];

  beforeAll(async () => {
    ({ t, baseUrl } = await listeningApp(database));
  });
  afterEach(async () => {
    // Every test stops its worker; this only cleans up after a failed one.
    await Promise.all(workers.splice(0).map((w) => w.stop()));
  });
  afterAll(() => t.close());

  async function setup(agentBody: Record<string, unknown> = { concurrency: 10 }) {
    const user = await createUser(t);
    const agentId = (await createAgent(t, user, agentBody)).uuid;
    const client = new TaskhookClient({ baseUrl, apiKey: user.key });
    const start = (
      handler: TaskHandler,
      opts: { concurrency?: number; leaseSeconds?: number; gracePeriodMs?: number } = {},
    ) => {
      const worker = runWorker({
        baseUrl,
        apiKey: user.key,
        agentId,
        handler,
        concurrency: opts.concurrency ?? 1,
        leaseSeconds: opts.leaseSeconds ?? 30,
        gracePeriodMs: opts.gracePeriodMs ?? 10_000,
        waitSeconds: 1,
        handleSignals: false,
        log: () => {},
      });
      workers.push(worker);
      return worker;
    };
    const waitFor = (taskId: string, until?: Array<'awaiting_input' | 'completed' | 'failed' | 'cancelled'>) =>
      client.waitFor(agentId, taskId, { until, intervalMs: 50, timeoutMs: 20_000 });
    return { user, agentId, client, start, waitFor };
  }

  it("completes tasks with the handler's result", async () => {
    const { agentId, client, start, waitFor } = await setup();
    const ids = await Promise.all(
      ['a', 'b', 'c'].map(async (m) => (await client.submit(agentId, { message: m, metadata: { m } })).task_id),
    );
    const worker = start(async (task) => ({
      summary: `reviewed ${task.message}`,
      findings: [{ file: String(task.metadata.m), line: task.attempt, severity: 'info', message: 'ok' }],
    }));
    for (const [i, id] of ids.entries()) {
      const m = ['a', 'b', 'c'][i];
      const done = await waitFor(id);
      expect(done).toMatchObject({
        status: 'completed',
        result: { summary: `reviewed ${m}`, findings: [{ file: m, line: 1, severity: 'info', message: 'ok' }] },
      });
    }
    await worker.stop();
    await within(worker.done, 5000, 'worker.done');
  });

  it('tasks finished together are completed in one batch request', async () => {
    const { agentId, client, start, waitFor } = await setup({ concurrency: 20 });
    const ids = await Promise.all(
      Array.from({ length: 8 }, async (_, i) => (await client.submit(agentId, { message: `t${i}` })).task_id),
    );
    // Every handler waits for the same moment, so their completions arrive in one turn of the loop.
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let started = 0;
    const calls: string[] = [];
    const seen = (req: IncomingMessage) => calls.push(`${req.method} ${req.url}`);
    t.app.server.on('request', seen);
    try {
      const worker = start(
        async (task) => {
          started++;
          if (started === ids.length) release();
          await gate;
          return { summary: task.message, findings: [] };
        },
        { concurrency: 20 },
      );
      for (const id of ids) expect((await waitFor(id)).status).toBe('completed');
      await worker.stop();
    } finally {
      t.app.server.off('request', seen);
    }
    const completes = calls.filter((c) => c.includes('complete'));
    expect(completes).toEqual([`POST /agent/${agentId}/tasks/complete`]);
  });

  it('flushed progress is visible through GET while the handler runs', async () => {
    const { agentId, client, start, waitFor } = await setup();
    const { task_id } = await client.submit(agentId, { message: 'review' });
    const proceed = gate();
    const worker = start(async (_task, ctx) => {
      await ctx.progress('reading files', 1, 3, true);
      await within(proceed.opened, 15_000, 'the test');
      await ctx.progress('checking rules', 2, 3, true);
      return { summary: 'done' };
    });
    const running = await eventually(
      () => client.get(agentId, task_id),
      (task) => task.progress?.steps_completed === 1,
      'the first progress report',
    );
    expect(running).toMatchObject({
      status: 'running',
      progress: { current_step: 'reading files', steps_completed: 1, total_steps: 3 },
    });
    proceed.open();
    const done = await waitFor(task_id);
    expect(done.status).toBe('completed');
    await worker.stop();
  });

  it('askForInput waits for the user, then runs the handler again with the whole conversation', async () => {
    const { agentId, client, start, waitFor } = await setup();
    const { task_id } = await client.submit(agentId, { message: 'review my change' });
    const runs: ClaimedTask[] = [];
    const worker = start(async (task, ctx) => {
      runs.push(task);
      if (!task.messages.some((m) => m.role === 'user' && m.content.startsWith('diff'))) {
        return ctx.askForInput('Please paste the diff.');
      }
      return { summary: task.messages.map((m) => `${m.role}: ${m.content}`).join(' | ') };
    });

    const asked = await waitFor(task_id, ['awaiting_input']);
    expect(asked.input_request?.message).toBe('Please paste the diff.');
    expect(await client.message(agentId, task_id, 'diff --git a/x b/x')).toMatchObject({
      status: 'running',
      message_received: true,
    });
    const done = await waitFor(task_id);
    expect(done).toMatchObject({
      status: 'completed',
      result: { summary: 'user: review my change | agent: Please paste the diff. | user: diff --git a/x b/x' },
    });
    expect(runs).toHaveLength(2);
    expect(runs[1]?.messages.map((m) => m.role)).toEqual(['user', 'agent', 'user']);
    // Asking for input does not use up an attempt.
    expect(runs.map((r) => r.attempt)).toEqual([1, 1]);
    await worker.stop();
  });

  it('a handler that throws fails the task with its message', async () => {
    const { agentId, client, start, waitFor } = await setup();
    const { task_id } = await client.submit(agentId, { message: 'review' });
    const worker = start(async () => {
      throw new Error('the repository is gone');
    });
    const failed = await waitFor(task_id);
    expect(failed).toMatchObject({
      status: 'failed',
      error: { code: 'AGENT_ERROR', message: 'the repository is gone' },
      failed_at: expect.any(String),
    });
    await worker.stop();
  });

  it('TaskFailure reports its code; retryable queues the task again with attempt + 1', async () => {
    const { agentId, client, start, waitFor } = await setup();
    const flaky = await client.submit(agentId, { message: 'flaky' });
    const final = await client.submit(agentId, { message: 'final' });
    const always = await client.submit(agentId, { message: 'always' });
    const attempts: Record<string, number[]> = { flaky: [], final: [], always: [] };
    const worker = start(async (task) => {
      attempts[task.message]?.push(task.attempt);
      if (task.message === 'final') throw new TaskFailure('not a repository', { code: 'NOT_A_REPO' });
      if (task.message === 'flaky' && task.attempt > 1) return { summary: `ok on attempt ${task.attempt}` };
      throw new TaskFailure('upstream timed out', { code: 'X_BAD', retryable: true });
    });

    expect(await waitFor(flaky.task_id)).toMatchObject({
      status: 'completed',
      result: { summary: 'ok on attempt 2' },
    });
    expect(await waitFor(final.task_id)).toMatchObject({
      status: 'failed',
      error: { code: 'NOT_A_REPO', message: 'not a repository' },
    });
    // Three attempts in all, then the last failure is the task's.
    expect(await waitFor(always.task_id)).toMatchObject({
      status: 'failed',
      error: { code: 'X_BAD', message: 'upstream timed out' },
    });
    expect(attempts).toEqual({ flaky: [1, 2], final: [1], always: [1, 2, 3] });
    await worker.stop();
  });

  it('a retryable TaskFailure puts the task back in the queue with attempt + 1', async () => {
    const { user, agentId, client, start } = await setup();
    const { task_id } = await client.submit(agentId, { message: 'review' });
    const failedOnce = gate();
    const worker = start(async (task) => {
      failedOnce.open();
      throw new TaskFailure(`attempt ${task.attempt} failed`, { code: 'X_BAD', retryable: true });
    });
    await within(failedOnce.opened, 15_000, 'the first run');
    // Stop claiming; the failure report of the running handler still goes out.
    await worker.stop();
    const queued = await client.get(agentId, task_id);
    expect(queued.status).toBe('queued');
    const again = await httpWorker(baseUrl, user.key, agentId).claimOne();
    expect(again).toMatchObject({ task_id, attempt: 2 });
  });

  it('a TaskFailure with retryAfterSeconds asks for that wait before the retry', async () => {
    const { agentId, client, start } = await setup();
    const { task_id } = await client.submit(agentId, { message: 'review' });
    const failedOnce = gate();
    const worker = start(async () => {
      failedOnce.open();
      throw new TaskFailure('rate limited', { retryable: true, retryAfterSeconds: 120 });
    });
    await within(failedOnce.opened, 15_000, 'the first run');
    await worker.stop();
    const queued = (await client.get(agentId, task_id)) as unknown as {
      status: string;
      available_at: string;
      last_error: { at: string; attempt: number };
    };
    expect(queued).toMatchObject({ status: 'queued', last_error: { attempt: 1 } });
    expect(Date.parse(queued.available_at) - Date.parse(queued.last_error.at)).toBe(120_000);
  });

  it('cancelling a task aborts ctx.signal (learnt from a heartbeat) and it stays cancelled', async () => {
    const { agentId, client, start } = await setup();
    const { task_id } = await client.submit(agentId, { message: 'review' });
    const started = gate();
    let sawAbort = false;
    const worker = start(
      async (_task, ctx) => {
        started.open();
        await aborted(ctx.signal);
        sawAbort = true;
        // Whatever a cancelled handler returns is dropped.
        return { summary: 'too late' };
      },
      { leaseSeconds: 3 },
    );
    await within(started.opened, 15_000, 'the handler to start');
    await client.cancel(agentId, task_id);
    await eventually(
      async () => sawAbort,
      (seen) => seen,
      'the handler to see the abort',
    );
    // stop() waits for the handler to finish, so any report it would make has been made.
    await worker.stop();
    const task = await client.get(agentId, task_id);
    expect(task.status).toBe('cancelled');
    expect(task.result).toBeUndefined();
  });

  it('runs at most `concurrency` handlers at once', async () => {
    const { agentId, client, start, waitFor } = await setup({ concurrency: 10 });
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push((await client.submit(agentId, { message: `task ${i}` })).task_id);
    let active = 0;
    let most = 0;
    const worker = start(
      async () => {
        active++;
        most = Math.max(most, active);
        await new Promise((r) => setTimeout(r, 100));
        active--;
        return { summary: 'ok' };
      },
      { concurrency: 2 },
    );
    for (const id of ids) expect((await waitFor(id)).status).toBe('completed');
    expect(most).toBe(2);
    await worker.stop();
  });

  it('stop() lets a running handler finish within the grace period and claims nothing more', async () => {
    const { agentId, client, start } = await setup();
    const { task_id } = await client.submit(agentId, { message: 'review' });
    const started = gate();
    const proceed = gate();
    let signal: AbortSignal | undefined;
    const worker = start(
      async (_task, ctx) => {
        signal = ctx.signal;
        started.open();
        await within(proceed.opened, 15_000, 'the test');
        return { summary: 'finished while stopping' };
      },
      { gracePeriodMs: 15_000 },
    );
    await within(started.opened, 15_000, 'the handler to start');
    const stopping = worker.stop();
    proceed.open();
    await within(stopping, 15_000, 'stop()');
    await within(worker.done, 5000, 'worker.done');
    expect(signal?.aborted).toBe(false);
    expect(await client.get(agentId, task_id)).toMatchObject({
      status: 'completed',
      result: { summary: 'finished while stopping' },
    });
    const later = await client.submit(agentId, { message: 'after stop' });
    expect((await client.get(agentId, later.task_id)).status).toBe('queued');
  });

  it('keeps retrying a claim that fails (logging it) and still stops at once', async () => {
    const { user } = await setup();
    const logged: Array<{ level: string; message: string }> = [];
    const worker = runWorker({
      baseUrl,
      apiKey: user.key,
      agentId: '0190b7a2-0000-7000-8000-000000000000',
      handler: async () => ({ summary: 'never' }),
      waitSeconds: 1,
      handleSignals: false,
      log: (level, message) => logged.push({ level, message }),
    });
    workers.push(worker);
    await eventually(
      async () => logged.filter((l) => l.message === 'claim failed; retrying').length,
      (n) => n >= 2,
      'two failed claims',
    );
    expect(logged.every((l) => l.level === 'warn')).toBe(true);
    await within(worker.stop(), 5000, 'stop()');
    await within(worker.done, 5000, 'worker.done');
  });

  // stop() abandons the worker's pending long poll; the server must not claim work for a worker
  // that has hung up (it would sit `running` until its lease expired).
  it('a task submitted right after stop() stays queued (the abandoned long poll does not take it)', async () => {
    const { user, agentId, client } = await setup();
    const worker = runWorker({
      baseUrl,
      apiKey: user.key,
      agentId,
      handler: async () => ({ summary: 'never' }),
      waitSeconds: 5,
      handleSignals: false,
      log: () => {},
    });
    workers.push(worker);
    // Let the first claim reach the server and start waiting (it waits 5 s).
    await new Promise((r) => setTimeout(r, 1000));
    await worker.stop();
    const { task_id } = await client.submit(agentId, { message: 'after stop' });
    // Until the abandoned poll is surely over (5 s), the task must not leave the queue.
    const deadline = Date.now() + 6000;
    let status = 'queued';
    while (status === 'queued' && Date.now() < deadline) {
      status = (await client.get(agentId, task_id)).status;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe('queued');
  });

  it('after a short grace period stop() aborts a running handler and releases its task', async () => {
    const { user, agentId, client, start } = await setup();
    const { task_id } = await client.submit(agentId, { message: 'review' });
    const started = gate();
    let sawAbort = false;
    const worker = start(
      async (_task, ctx) => {
        started.open();
        await aborted(ctx.signal);
        sawAbort = true;
        throw new Error('aborted');
      },
      { gracePeriodMs: 200 },
    );
    await within(started.opened, 15_000, 'the handler to start');
    expect((await client.get(agentId, task_id)).status).toBe('running');
    await within(worker.stop(), 15_000, 'stop()');
    expect(sawAbort).toBe(true);
    const released = await client.get(agentId, task_id);
    expect(released.status).toBe('queued');
    expect(released.error).toBeUndefined();
    // Released, not failed: the attempt is unchanged and another worker can take it.
    const again = await httpWorker(baseUrl, user.key, agentId).claimOne();
    expect(again).toMatchObject({ task_id, attempt: 1 });
  });
});
