import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../../src/http/errors.js';
import { createEventHub } from '../../../src/lib/event-hub.js';
import { createNotifier } from '../../../src/lib/notifier.js';
import { iso } from '../../../src/lib/time.js';
import { createLifecycle } from '../../../src/modules/tasks/lifecycle/lifecycle.js';
import { createTaskWriter } from '../../../src/modules/tasks/lifecycle/tasks-writer.js';
import { fairQueueRepo } from '../../../src/modules/tasks/queue/fair-queue-repo.js';
import { queueRepo } from '../../../src/modules/tasks/queue/queue-repo.js';
import { tasksRepo } from '../../../src/modules/tasks/tasks-repo.js';
import { buildTestApp, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser } from '../../helpers/factories.js';
import { submitTask } from '../../helpers/tasks.js';

/*
 * The door itself: what `apply` answers and throws, and the options by which the worker protocol
 * and the push dispatcher share one `claim`.
 */
describe.each(DATABASES)('the lifecycle door on $name', (database) => {
  let t: TestApp;
  let lifecycle: ReturnType<typeof createLifecycle>;
  beforeAll(async () => {
    t = await buildTestApp(database);
    const writer = createTaskWriter({
      repo: tasksRepo,
      notifier: createNotifier({ log: { warn: () => undefined } }),
      events: createEventHub(),
    });
    lifecycle = createLifecycle({
      repo: tasksRepo,
      queue: queueRepo,
      fair: fairQueueRepo,
      writer,
      clock: t.runtime.clock,
    });
  });
  afterAll(() => t.close());

  const lease = () => ({ leaseSeconds: 30, workerId: 'w' });

  it("answers whether a change was made, and throws NOT_FOUND for another user's task", async () => {
    const [owner, stranger] = [await createUser(t), await createUser(t)];
    const agent = (await createAgent(t, owner)).uuid;
    const { task_id } = await submitTask(t, owner, agent);
    const ref = { workspaceUuid: owner.uuid, agentUuid: agent, taskUuid: task_id };
    const db = t.runtime.db;
    const first = await db.transaction((trx) => lifecycle.apply(trx, ref, { op: 'cancel' }));
    expect(first).toMatchObject({ changed: true, task: { status: 'cancelled' }, view: { status: 'cancelled' } });
    const again = await db.transaction((trx) => lifecycle.apply(trx, { taskUuid: task_id }, { op: 'cancel' }));
    expect(again).toMatchObject({ changed: false, task: { cancelledAt: first.task.cancelledAt } });
    const refused = await db
      .transaction((trx) => lifecycle.apply(trx, { ...ref, workspaceUuid: stranger.uuid }, { op: 'cancel' }))
      .catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(AppError);
    expect((refused as AppError).code).toBe('NOT_FOUND');
  });

  it('claims nothing for an agent it does not accept, nor a task before its available_at', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const { task_id } = await submitTask(t, user, agent);
    const db = t.runtime.db;
    const refused = await db.transaction((trx) => lifecycle.claim(trx, agent, 5, { lease, accepts: () => false }));
    expect(refused).toEqual({ runtime: null, tasks: [], nextAvailableAt: null });
    // A retry whose wait runs for another minute: no claim hands it out before, and says when.
    const later = iso(t.runtime.clock.now() + 60_000);
    await db.kysely.updateTable('tasks').set({ attempt: 2, available_at: later }).where('uuid', '=', task_id).execute();
    const waiting = await db.transaction((trx) => lifecycle.claim(trx, agent, 5, { lease }));
    expect(waiting).toMatchObject({ tasks: [], nextAvailableAt: later });
    // Its wait over: handed out.
    const over = iso(t.runtime.clock.now() - 1);
    await db.kysely.updateTable('tasks').set({ available_at: over }).where('uuid', '=', task_id).execute();
    const claimed = await db.transaction((trx) => lifecycle.claim(trx, agent, 5, { lease }));
    expect(claimed.runtime).toMatchObject({ type: 'worker' });
    expect(claimed.tasks.map((task) => [task.uuid, task.status, task.workerId])).toEqual([[task_id, 'running', 'w']]);
  });
});
