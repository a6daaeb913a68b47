import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../src/db/connect.js';
import { createEventHub } from '../../../src/lib/event-hub.js';
import { newId } from '../../../src/lib/ids.js';
import { createNotifier } from '../../../src/lib/notifier.js';
import { createLifecycle } from '../../../src/modules/tasks/lifecycle/lifecycle.js';
import { createTaskWriter } from '../../../src/modules/tasks/lifecycle/tasks-writer.js';
import { initial, type NewTask } from '../../../src/modules/tasks/lifecycle/transition-fns.js';
import { fairQueueRepo } from '../../../src/modules/tasks/queue/fair-queue-repo.js';
import { queueRepo } from '../../../src/modules/tasks/queue/queue-repo.js';
import { createInsertBatcher } from '../../../src/modules/tasks/submit/insert-batcher.js';
import { tasksRepo } from '../../../src/modules/tasks/tasks-repo.js';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser } from '../../helpers/factories.js';
import { getTask, submitTask, workerHeaders } from '../../helpers/tasks.js';

describe.each(DATABASES)('submits batched into one insert on $name', (database) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp(database);
  });
  afterAll(() => t.close());

  /** The app's database, counting the transactions run through it. */
  function counted(): { db: Db; transactions: () => number } {
    let n = 0;
    const db = t.runtime.db;
    return {
      db: {
        ...db,
        transaction: (fn) => {
          n++;
          return db.transaction(fn);
        },
      } as Db,
      transactions: () => n,
    };
  }

  /** The door over a writer of its own (a notifier nobody hears). */
  function door() {
    const writer = createTaskWriter({
      repo: tasksRepo,
      notifier: createNotifier({ log: { warn: () => undefined } }),
      events: createEventHub(),
    });
    return createLifecycle({ repo: tasksRepo, queue: queueRepo, fair: fairQueueRepo, writer, clock: t.runtime.clock });
  }

  /** New tasks like a submit makes (`initial`), with the fields of a real one and new ids. */
  async function records(count: number): Promise<NewTask[]> {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const { task_id } = await submitTask(t, user, agent);
    const model = await tasksRepo.findTask(t.runtime.db.kysely, {
      workspaceUuid: user.uuid,
      agentUuid: agent,
      taskUuid: task_id,
    });
    if (!model) throw new Error('no model task');
    return Array.from({ length: count }, () => initial({ ...model, uuid: newId() }, Date.parse(model.createdAt)));
  }

  it('commits the tasks of one turn of the event loop in one transaction', async () => {
    const { db, transactions } = counted();
    const batcher = createInsertBatcher({ db, lifecycle: door() });
    const tasks = await records(30);
    await Promise.all(tasks.map((task) => batcher.insert(task)));
    expect(transactions()).toBe(1);
    for (const task of tasks)
      expect(
        await tasksRepo.findTask(t.runtime.db.kysely, {
          workspaceUuid: task.workspaceUuid,
          agentUuid: task.agentUuid,
          taskUuid: task.uuid,
        }),
      ).toMatchObject({ uuid: task.uuid });
  });

  it('a bad row fails only its own submit: the others are committed one by one', async () => {
    const { db, transactions } = counted();
    const batcher = createInsertBatcher({ db, lifecycle: door() });
    const tasks = await records(4);
    const [first] = tasks as [NewTask];
    // The same id twice in one batch: the multi-row insert fails on its primary key.
    const outcomes = await Promise.allSettled([...tasks, { ...first }].map((task) => batcher.insert(task)));
    expect(outcomes.filter((o) => o.status === 'rejected')).toHaveLength(1);
    expect(transactions()).toBe(1 + 5);
    for (const task of tasks)
      expect(
        await tasksRepo.findTask(t.runtime.db.kysely, {
          workspaceUuid: task.workspaceUuid,
          agentUuid: task.agentUuid,
          taskUuid: task.uuid,
        }),
      ).toMatchObject({ uuid: task.uuid });
  });

  it('concurrent submits over HTTP all answer 202 with tasks that exist, and workers are woken', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user, { concurrency: 100 })).uuid;
    const claim = call(t.app, 'POST', `/agent/${agent}/tasks/claim`, {
      headers: workerHeaders(user),
      body: { wait_seconds: 10, max_tasks: 50 },
    });
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => submitTask(t, user, agent, { message: `m${i}` })),
    );
    for (const a of answers) expect((await getTask(t, user, agent, a.task_id)).status).not.toBe('failed');
    const claimed = await claim;
    expect(claimed.statusCode).toBe(200);
    expect(claimed.json().tasks.length).toBeGreaterThan(0);
  });
});
