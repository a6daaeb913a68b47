import type { Executor } from '../../../db/connect.js';
import { afterCommit, beforeCommit } from '../../../db/transactions.js';
import type { EventHub } from '../../../lib/event-hub.js';
import type { Notifier } from '../../../lib/notifier.js';
import type { AgentTaskEvent } from '../events/agent-events-repo.js';
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
    /** A task of the agent was created or changed in a way a reader sees (a new event in the agent's stream); id: the agent. */
    tasks: true;
    /** The agent was deleted (its stream ends); id: the agent. */
    'agent-deleted': true;
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
    if (visible) {
      notifier.publish('task', task.uuid);
      notifier.publish('tasks', task.agentUuid);
    }
    if (task.ready || (before?.leaseExpiresAt && !task.leaseExpiresAt)) notifier.publish('work', task.agentUuid);
  }

  /** The events each open transaction has made so far, written together just before its commit. */
  const unwritten = new WeakMap<Executor, AgentTaskEvent[]>();

  /**
   * Queues the events of `saved` (a creation, or a change a reader sees) for the end of `trx`:
   * one write for all of the transaction's events, numbered in their agents' streams as it commits
   * (see agent-events-repo.ts). The task's own stream reads them only after the commit too.
   */
  function record(trx: Executor, saved: readonly SavedTask[]) {
    if (saved.length === 0) return;
    let events = unwritten.get(trx);
    if (!events) {
      const mine: AgentTaskEvent[] = [];
      unwritten.set(trx, mine);
      beforeCommit(trx, () => repo.appendEvents(trx, mine));
      events = mine;
    }
    for (const { task, view } of saved) {
      events.push({
        agentUuid: task.agentUuid,
        taskUuid: task.uuid,
        seq: task.seq,
        data: toStoredEvent(view),
        createdAt: task.updatedAt,
      });
    }
  }

  /**
   * Saves the changes `transition` made to many tasks (each read under a row lock in `trx`, each
   * listed once) in a constant number of statements: the task rows now, their events with the
   * rest of the transaction's just before it commits (`record`); then, task by task in the order
   * given, the subscribers and the after-commit wake-ups, as `save` does for one.
   */
  async function saveMany(trx: Executor, items: Array<{ before: TaskRecord; change: Change }>): Promise<SavedTask[]> {
    if (new Set(items.map((item) => item.before.uuid)).size !== items.length)
      throw new Error('saveMany: a task listed twice (save its changes one at a time)');
    await repo.updateTasks(
      trx,
      items.map(({ before, change }) => ({ uuid: before.uuid, changes: change.changes })),
    );
    const saved = items.map(({ change }) => ({ task: change.next, view: taskView(change.next) }));
    record(
      trx,
      saved.filter((_, i) => items[i]?.change.event),
    );
    for (const [i, { before, change }] of items.entries()) {
      const { task, view } = saved[i] as SavedTask;
      await tell({ trx, operation: change.operation, before, task, view });
      afterCommit(trx, () => wake(before, task, change.event));
    }
    return saved;
  }

  /** Inserts new tasks in one statement; as `insert` for each. */
  async function insertMany(trx: Executor, tasks: NewTask[]): Promise<void> {
    await repo.insertTasks(trx, tasks);
    const saved = tasks.map((task) => ({ task, view: taskView(task) }));
    record(trx, saved);
    for (const { task, view } of saved) {
      await tell({ trx, operation: 'submit', before: null, task, view });
      afterCommit(trx, () => wake(null, task, true));
    }
  }

  return {
    /** Tells the agent's streams, once `trx` commits, that the agent is deleted. */
    agentDeleted(trx: Executor, agentUuid: string): void {
      afterCommit(trx, () => notifier.publish('agent-deleted', agentUuid));
    },

    /**
     * Wakes the agent's waiting claims once `trx` commits, for a change outside its tasks that may
     * let them take more (the agent resumed, its concurrency raised).
     */
    wakeWork(trx: Executor, agentUuid: string): void {
      afterCommit(trx, () => notifier.publish('work', agentUuid));
    },

    /**
     * Inserts a new task (as `initial` made it) and its first event (event 1, queued); its
     * agent's workers are woken once the transaction commits.
     */
    insert(trx: Executor, task: NewTask): Promise<void> {
      return insertMany(trx, [task]);
    },

    insertMany,

    /** Saves a change `transition` made to `before` (read under a row lock in `trx`). */
    async save(trx: Executor, before: TaskRecord, change: Change): Promise<SavedTask> {
      const [saved] = await saveMany(trx, [{ before, change }]);
      return saved as SavedTask;
    },

    saveMany,
  };
}

export type TaskWriter = ReturnType<typeof createTaskWriter>;
