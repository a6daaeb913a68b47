import type { Db, Executor } from '../../db/connect.js';
import { AppError } from '../../http/errors.js';
import type { Notifier } from './notifier.js';
import { outcomeOf, type TaskOperation } from './tasks-fns.js';
import type { TaskRecord, TasksRepo } from './tasks-repo.js';
import type { ConversationMessage, TaskView } from './tasks-schemas.js';
import { taskView } from './tasks-view.js';

/** Called in the transaction of every status change, e.g. to queue a callback (outbox). */
export type StatusChangeHook = (trx: Executor, task: TaskRecord, view: TaskView) => Promise<void>;

const ERROR_MESSAGES: Record<string, string> = {
  TASK_NOT_CANCELLABLE: 'Task cannot be cancelled: it has already finished',
  TASK_NOT_ACCEPTING_MESSAGES: 'Task is not accepting messages: it has finished',
  TASK_NOT_RUNNING: 'Task is not running under this lease',
};

/**
 * Applies a state-machine operation to a task inside a transaction: checks the transition table,
 * writes the changes, bumps the event sequence, logs the event snapshot, runs status-change hooks,
 * and remembers whom to wake once the transaction commits.
 */
export function createTaskWriter(deps: {
  db: Db;
  repo: TasksRepo;
  notifier: Notifier;
  hooks: StatusChangeHook[];
  /** Called with the task once a change to it has committed (e.g. to send a queued callback now). */
  committed?: Array<(task: TaskRecord) => void>;
}) {
  const { repo } = deps;
  const lock = deps.db.dialect === 'postgres';

  /** @throws AppError with the table's error code when the operation is not allowed in the task's state. */
  function check(task: TaskRecord, operation: TaskOperation) {
    const outcome = outcomeOf(task.status, operation);
    if ('error' in outcome) throw new AppError(outcome.error, ERROR_MESSAGES[outcome.error] ?? outcome.error);
    return outcome;
  }

  async function apply(
    trx: Executor,
    task: TaskRecord,
    operation: TaskOperation,
    changes: Partial<TaskRecord>,
    opts: { append?: ConversationMessage; now: string },
  ): Promise<{ task: TaskRecord; view: TaskView }> {
    const outcome = check(task, operation);
    const status = 'to' in outcome ? outcome.to : task.status;
    const all: Partial<TaskRecord> = { ...changes, status, updatedAt: opts.now };
    if (opts.append) all.messages = [...task.messages, opts.append];
    // An event only for a change a reader can see (a re-claim after a reply changes nothing visible).
    const visible = status !== task.status || opts.append !== undefined || changes.progress !== undefined;
    if (visible) all.seq = task.seq + 1;
    const next: TaskRecord = { ...task, ...all };
    await repo.updateTask(trx, task.uuid, all);
    const view = taskView(next);
    if (visible) await repo.insertEvent(trx, { taskUuid: task.uuid, seq: next.seq, data: view, createdAt: opts.now });
    if (status !== task.status) for (const hook of deps.hooks) await hook(trx, next, view);
    return { task: next, view };
  }

  /**
   * After commit: wakes SSE streams of the task and, when it became claimable or freed a
   * worker slot, the workers waiting on its agent.
   */
  function announce(task: TaskRecord, before?: Pick<TaskRecord, 'leaseExpiresAt'>) {
    deps.notifier.publish('task', task.uuid);
    for (const fn of deps.committed ?? []) fn(task);
    if (task.ready || (before?.leaseExpiresAt && !task.leaseExpiresAt)) deps.notifier.publish('work', task.agentUuid);
  }

  return { check, apply, announce, lock };
}

export type TaskWriter = ReturnType<typeof createTaskWriter>;
