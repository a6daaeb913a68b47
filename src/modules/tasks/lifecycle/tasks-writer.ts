import type { Executor } from '../../../db/connect.js';
import { afterCommit } from '../../../db/transactions.js';
import type { EventHub } from '../../../lib/event-hub.js';
import type { Notifier } from '../../../lib/notifier.js';
import { toStoredEvent } from '../events/task-events-fns.js';
import type { TaskOperation } from '../tasks-fns.js';
import type { TaskRecord } from '../tasks-record.js';
import type { TasksRepo } from '../tasks-repo.js';
import type { TaskView } from '../tasks-schemas.js';
import { taskView } from '../tasks-view.js';
import type { Change, NewTask } from './transition-fns.js';

/**
 * A saved change of a task, given to subscribers inside its transaction. `operation` is
 * `submit` for a new task (then `before` is null). Work that must wait for the commit is
 * scheduled with `afterCommit(trx, …)`.
 */
export interface TaskChangeEvent {
  trx: Executor;
  operation: TaskOperation | 'submit';
  before: TaskRecord | null;
  task: TaskRecord;
  view: TaskView;
}

export interface SavedTask {
  task: TaskRecord;
  view: TaskView;
}

export type TaskChangeListener = (event: TaskChangeEvent) => Promise<void> | void;

declare module '../../../lib/notifier.js' {
  interface NotifierChannels {
    /** An agent may have claimable work (a task became claimable, or a held one was freed); id: the agent. */
    work: true;
    /** A task changed in a way a reader sees (a new event in its log); id: the task. */
    task: true;
  }
}

declare module '../../../lib/event-hub.js' {
  interface HubEvents {
    /**
     * A task's status changed, or a task was submitted: heard inside the change's transaction (a
     * throw rolls it back), before `task:changed`. For work that must commit with the change.
     */
    'task:statusChanged': TaskChangeEvent;
    /** Every saved change of a task, and every new task, under the same rules. */
    'task:changed': TaskChangeEvent;
  }
}

/**
 * Saves what the transition function decided, and is the only code that writes tasks: the
 * changed fields, the event a reader can see, the subscribers of the change (in the same
 * transaction, through the event hub: e.g. a callback's outbox row), and the wake-ups once the transaction commits
 * (SSE streams of the task; workers of the agent when a task became claimable or freed a slot).
 */
export function createTaskWriter(deps: { repo: TasksRepo; notifier: Notifier; events: Pick<EventHub, 'emit'> }) {
  const { repo, notifier, events } = deps;

  async function tell(event: TaskChangeEvent) {
    const statusChanged = event.before === null || event.before.status !== event.task.status;
    if (statusChanged) await events.emit('task:statusChanged', event);
    await events.emit('task:changed', event);
  }

  function wake(before: TaskRecord | null, task: TaskRecord, visible: boolean) {
    if (visible) notifier.publish('task', task.uuid);
    if (task.ready || (before?.leaseExpiresAt && !task.leaseExpiresAt)) notifier.publish('work', task.agentUuid);
  }

  /**
   * Saves the changes `transition` made to many tasks (each read under a row lock in `trx`, each
   * listed once) in a constant number of statements: the task rows, then their events in one
   * INSERT; then, task by task in the order given, the subscribers and the after-commit wake-ups,
   * as `save` does for one.
   */
  async function saveMany(trx: Executor, items: Array<{ before: TaskRecord; change: Change }>): Promise<SavedTask[]> {
    if (new Set(items.map((item) => item.before.uuid)).size !== items.length)
      throw new Error('saveMany: a task listed twice (save its changes one at a time)');
    await repo.updateTasks(
      trx,
      items.map(({ before, change }) => ({ uuid: before.uuid, changes: change.changes })),
    );
    const saved = items.map(({ change }) => ({ task: change.next, view: taskView(change.next) }));
    const events = saved
      .filter((_, i) => items[i]?.change.event)
      .map(({ task, view }) => ({
        taskUuid: task.uuid,
        seq: task.seq,
        data: toStoredEvent(view),
        createdAt: task.updatedAt,
      }));
    if (events.length > 0) await repo.insertEvents(trx, events);
    for (const [i, { before, change }] of items.entries()) {
      const { task, view } = saved[i] as SavedTask;
      await tell({ trx, operation: change.operation, before, task, view });
      afterCommit(trx, () => wake(before, task, change.event));
    }
    return saved;
  }

  return {
    /**
     * Wakes the agent's waiting claims once `trx` commits, for a change outside its tasks that may
     * let them take more (the agent resumed, its concurrency raised).
     */
    wakeWork(trx: Executor, agentUuid: string): void {
      afterCommit(trx, () => notifier.publish('work', agentUuid));
    },

    /** Inserts a new task (as `initial` made it); its agent's workers are woken once the transaction commits. */
    async insert(trx: Executor, task: NewTask): Promise<void> {
      await repo.insertTask(trx, task);
      await tell({ trx, operation: 'submit', before: null, task, view: taskView(task) });
      afterCommit(trx, () => wake(null, task, true));
    },

    /** Inserts new tasks in one statement; as `insert` for each. */
    async insertMany(trx: Executor, tasks: NewTask[]): Promise<void> {
      await repo.insertTasks(trx, tasks);
      for (const task of tasks) {
        await tell({ trx, operation: 'submit', before: null, task, view: taskView(task) });
        afterCommit(trx, () => wake(null, task, true));
      }
    },

    /** Saves a change `transition` made to `before` (read under a row lock in `trx`). */
    async save(trx: Executor, before: TaskRecord, change: Change): Promise<SavedTask> {
      const [saved] = await saveMany(trx, [{ before, change }]);
      return saved as SavedTask;
    },

    saveMany,
  };
}

export type TaskWriter = ReturnType<typeof createTaskWriter>;
