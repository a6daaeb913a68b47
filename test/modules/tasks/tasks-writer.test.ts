import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../../src/http/errors.js';
import { createEventHub } from '../../../src/lib/event-hub.js';
import { createNotifier } from '../../../src/lib/notifier.js';
import { createTaskWriter, type TaskChangeEvent } from '../../../src/modules/tasks/lifecycle/tasks-writer.js';
import { type TaskInput, transition } from '../../../src/modules/tasks/lifecycle/transition-fns.js';
import type { TaskRecord } from '../../../src/modules/tasks/tasks-record.js';
import { tasksRepo } from '../../../src/modules/tasks/tasks-repo.js';
import { buildTestApp, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser } from '../../helpers/factories.js';
import { submitTask } from '../../helpers/tasks.js';

class Refused extends Error {}

/*
 * The writer over real storage: subscribers see each saved change inside its transaction, a
 * subscriber's failure rolls the change back, and wake-ups are published only after the commit.
 */
describe.each(DATABASES)('task writer on $name', (database) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp(database);
  });
  afterAll(() => t.close());

  async function queuedTask() {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const { task_id } = await submitTask(t, user, agent);
    return { workspaceUuid: user.uuid, agentUuid: agent, taskUuid: task_id };
  }

  /** A writer of its own over the app's database, with a notifier that records what it publishes. */
  function writerWith(listener: (event: TaskChangeEvent) => Promise<void> | void) {
    const notifier = createNotifier({ log: { warn: () => undefined } });
    const published: string[] = [];
    const events = createEventHub();
    const writer = createTaskWriter({ repo: tasksRepo, notifier, events });
    events.on('task:statusChanged', listener);
    const record = (channel: 'task' | 'work', id: string) =>
      notifier.subscribe(channel, id, () => published.push(channel));
    return { writer, published, record };
  }

  async function apply(writer: ReturnType<typeof writerWith>['writer'], ref: Awaited<ReturnType<typeof queuedTask>>) {
    const input: TaskInput = { op: 'claim', leaseId: 'lease-x', leaseSeconds: 30, workerId: null };
    return t.runtime.db.transaction(async (trx) => {
      const current = (await tasksRepo.lockTask(trx, ref)) as TaskRecord;
      const change = transition(current, input, Date.now());
      if (!change || change instanceof AppError) throw new Error('claim refused');
      return writer.save(trx, current, change);
    });
  }

  it('tells subscribers inside the transaction and wakes streams only after the commit', async () => {
    const ref = await queuedTask();
    const seen: Array<{ operation: string; from?: string; to: string; stored?: string; published: number }> = [];
    const { writer, published, record } = writerWith(async (event) => {
      const stored = await tasksRepo.findTask(event.trx, ref);
      seen.push({
        operation: event.operation,
        from: event.before?.status,
        to: event.task.status,
        stored: stored?.status,
        published: published.length,
      });
    });
    record('task', ref.taskUuid);
    const { task } = await apply(writer, ref);
    expect(task.status).toBe('running');
    // Inside the transaction the change is written and nothing has been announced yet.
    expect(seen).toEqual([{ operation: 'claim', from: 'queued', to: 'running', stored: 'running', published: 0 }]);
    expect(published).toEqual(['task']);
    const events = await tasksRepo.eventsAfter(t.runtime.db.kysely, ref.taskUuid, 0, 100);
    // Event 1 is the task's creation, stored with the task.
    expect(events.map((e) => [e.seq, (e.data as { status: string }).status])).toEqual([
      [1, 'queued'],
      [2, 'running'],
    ]);
  });

  it('a subscriber that throws rolls the change back, and nothing is announced', async () => {
    const ref = await queuedTask();
    const { writer, published, record } = writerWith(() => {
      throw new Refused();
    });
    record('task', ref.taskUuid);
    record('work', ref.agentUuid);
    await expect(apply(writer, ref)).rejects.toBeInstanceOf(Refused);
    expect((await tasksRepo.findTask(t.runtime.db.kysely, ref))?.status).toBe('queued');
    const events = await tasksRepo.eventsAfter(t.runtime.db.kysely, ref.taskUuid, 0, 100);
    expect(events.map((e) => e.seq)).toEqual([1]);
    expect(published).toEqual([]);
  });
});
