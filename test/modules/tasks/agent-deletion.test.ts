import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Executor } from '../../../src/db/connect.js';
import { createEventHub } from '../../../src/lib/event-hub.js';
import { newId } from '../../../src/lib/ids.js';
import { createNotifier } from '../../../src/lib/notifier.js';
import { createLifecycle } from '../../../src/modules/tasks/lifecycle/lifecycle.js';
import { createTaskWriter } from '../../../src/modules/tasks/lifecycle/tasks-writer.js';
import { fairQueueRepo } from '../../../src/modules/tasks/queue/fair-queue-repo.js';
import { queueRepo } from '../../../src/modules/tasks/queue/queue-repo.js';
import type { TaskRecord } from '../../../src/modules/tasks/tasks-record.js';
import { tasksRepo } from '../../../src/modules/tasks/tasks-repo.js';
import { CANCEL_BATCH, createTasksService } from '../../../src/modules/tasks/tasks-service.js';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser, type TestUser } from '../../helpers/factories.js';
import { sqlitePlans } from '../../helpers/query-plans.js';
import { claimOne, reportInputRequest, submitTask } from '../../helpers/tasks.js';

/*
 * Deleting an agent cancels all its open tasks, at most CANCEL_BATCH per transaction (one long
 * transaction held the locks of every task and stalled the agent's other work). More tasks than
 * one batch, in every open status, must all end cancelled, and the agent deleted.
 */
const never = async () => {
  throw new Error('not expected');
};

describe.each(DATABASES)('agent deletion with many open tasks on $name', (database) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp(database);
  });
  afterAll(() => t.close());

  /** `count` more queued copies of the agent's task `model`, written straight to storage. */
  async function copies(model: TaskRecord, count: number): Promise<string[]> {
    const tasks = Array.from({ length: count }, () => ({ ...model, uuid: newId() }));
    await t.runtime.db.transaction(async (trx) => {
      for (let at = 0; at < tasks.length; at += 100) await tasksRepo.insertTasks(trx, tasks.slice(at, at + 100));
    });
    return tasks.map((task) => task.uuid);
  }

  async function openAgent(user: TestUser, extra: number) {
    const agent = (await createAgent(t, user)).uuid;
    const first = await submitTask(t, user, agent, { message: 'asks' });
    const running = await submitTask(t, user, agent, { message: 'runs' });
    const asking = await claimOne(t, user, agent);
    await reportInputRequest(t, user, agent, asking.task_id, asking.lease_id, 'which one?');
    await claimOne(t, user, agent);
    const ref = { workspaceUuid: user.uuid, agentUuid: agent, taskUuid: first.task_id };
    const model = (await tasksRepo.findTask(t.runtime.db.kysely, { ...ref, taskUuid: running.task_id })) as TaskRecord;
    const queued = await copies(
      {
        ...model,
        ...{ status: 'queued', ready: true, leaseId: null, leaseSeconds: null, leaseExpiresAt: null, workerId: null },
        ...{ startedAt: null, timeoutAt: null, claimedAt: null },
      },
      extra,
    );
    return { agent, tasks: [first.task_id, running.task_id, ...queued] };
  }

  const statuses = async (uuids: string[]) =>
    (await t.runtime.db.kysely.selectFrom('tasks').select('status').where('uuid', 'in', uuids).execute()).map(
      (r) => r.status,
    );

  it('cancels every open task, in any status, and deletes the agent', async () => {
    const user = await createUser(t);
    const { agent, tasks } = await openAgent(user, CANCEL_BATCH + 40);
    expect(new Set(await statuses(tasks))).toEqual(new Set(['queued', 'running', 'awaiting_input']));
    const res = await call(t.app, 'DELETE', `/agent/${agent}`, { token: user.token });
    expect(res.statusCode).toBe(204);
    const after = await statuses(tasks);
    expect(after).toHaveLength(tasks.length);
    expect(new Set(after)).toEqual(new Set(['cancelled']));
    expect((await call(t.app, 'GET', `/agent/${agent}`, { token: user.token })).statusCode).toBe(404);
  });

  it('cancels in transactions of at most CANCEL_BATCH tasks, and the rest with the deletion', async () => {
    const user = await createUser(t);
    const { agent, tasks } = await openAgent(user, 2 * CANCEL_BATCH + 3);
    const events = createEventHub();
    const writer = createTaskWriter({
      repo: tasksRepo,
      notifier: createNotifier({ log: { warn: () => undefined } }),
      events,
    });
    const lifecycle = createLifecycle({
      repo: tasksRepo,
      queue: queueRepo,
      fair: fairQueueRepo,
      writer,
      clock: t.runtime.clock,
    });
    const batches: Array<{ trx: Executor; cancelled: number }> = [];
    events.on('task:statusChanged', ({ trx }) => {
      const last = batches.at(-1);
      if (last?.trx === trx) last.cancelled++;
      else batches.push({ trx, cancelled: 1 });
    });
    // Only the deletion's parts of the service are used here.
    const service = createTasksService({ db: t.runtime.db, repo: tasksRepo, lifecycle } as never);
    await service.cancelAllOfAgent(agent);
    expect(batches.map((b) => b.cancelled)).toEqual([CANCEL_BATCH, CANCEL_BATCH, 5]);
    // What arrives before the deleting transaction is cancelled in it.
    const late = await submitTask(t, user, agent, { message: 'late' });
    await t.runtime.db.transaction((trx) => service.cancelRestOfAgent(trx, agent, t.runtime.clock.now()));
    expect(batches.map((b) => b.cancelled)).toEqual([CANCEL_BATCH, CANCEL_BATCH, 5, 1]);
    expect(new Set(await statuses([...tasks, late.task_id]))).toEqual(new Set(['cancelled']));
  });

  it.runIf(database.name === 'sqlite')("finds an agent's open tasks through the agent's status index", async () => {
    const user = await createUser(t);
    const { agent } = await openAgent(user, 3);
    const lifecycle = createLifecycle({
      repo: tasksRepo,
      queue: queueRepo,
      fair: fairQueueRepo,
      writer: { save: never, saveMany: async () => [], insert: never, insertMany: never },
      clock: t.runtime.clock,
    });
    const plans = await sqlitePlans(t, /^select \* from "tasks"/i, () =>
      t.runtime.db.transaction((trx) => lifecycle.cancelOpenOfAgent(trx, agent, CANCEL_BATCH)),
    );
    const steps = plans.flatMap((p) => p.steps).filter((step) => /^(SEARCH|SCAN) tasks\b/.test(step));
    expect(steps).toEqual([
      expect.stringMatching(/^SEARCH tasks USING INDEX tasks_status_idx \(agent_uuid=\? AND status=\?\)/),
    ]);
  });

  it("answers 404 for another user's agent and cancels none of its tasks", async () => {
    const [owner, stranger] = [await createUser(t), await createUser(t)];
    const { agent, tasks } = await openAgent(owner, 3);
    const res = await call(t.app, 'DELETE', `/agent/${agent}`, { token: stranger.token });
    expect(res.statusCode).toBe(404);
    expect(await statuses(tasks)).not.toContain('cancelled');
  });
});
