import type { Db, Executor } from '../../db/connect.js';
import { AppError, notFound } from '../../http/errors.js';
import type { AgentsService } from '../agents/agents-service.js';
import { fromStoredEvent, needsConversation } from './events/task-events-fns.js';
import type { Lifecycle } from './lifecycle/lifecycle.js';
import type { TaskInput } from './lifecycle/transition-fns.js';
import type { TaskStatus } from './tasks-fns.js';
import type { TaskRecord } from './tasks-record.js';
import type { TasksRepo } from './tasks-repo.js';
import type { TaskView } from './tasks-schemas.js';
import { taskView } from './tasks-view.js';

/** Events read per query of an event stream (a stream resumed far back pages through them). */
export const EVENTS_PAGE = 100;
/** Tasks cancelled per transaction when their agent is deleted (a long transaction holds locks). */
export const CANCEL_BATCH = 500;

export interface TaskRef {
  workspaceUuid: string;
  agentUuid: string;
  taskUuid: string;
}

/** The user's side of tasks once they exist: read, list, converse, cancel (submitting: `submit/task-submitter.ts`). */
export function createTasksService(deps: {
  db: Db;
  repo: TasksRepo;
  agents: Pick<AgentsService, 'requireOwned'>;
  lifecycle: Pick<Lifecycle, 'apply' | 'cancelOpenOfAgent'>;
}) {
  const { db, repo, lifecycle } = deps;

  /** @throws AppError NOT_FOUND unless the task exists under this agent of this user. */
  async function requireTask(ref: TaskRef) {
    const task = await repo.findTask(db.kysely, ref);
    if (!task) throw notFound('Task');
    return task;
  }

  const view = (task: TaskRecord): TaskView => taskView(task);

  /** The user's change of a task through the lifecycle door, in `trx`. @returns the task afterwards. */
  async function changeIn(trx: Executor, ref: TaskRef, input: TaskInput): Promise<TaskRecord> {
    return (await lifecycle.apply(trx, ref, input)).task;
  }

  /** `changeIn` in a transaction of its own. */
  function change(ref: TaskRef, input: TaskInput): Promise<TaskRecord> {
    return db.transaction((trx) => changeIn(trx, ref, input));
  }

  return {
    async get(ref: TaskRef): Promise<TaskView> {
      return view(await requireTask(ref));
    },

    /** The task's body with its event sequence number (the SSE event id). */
    async snapshot(ref: TaskRef): Promise<{ seq: number; view: TaskView }> {
      const task = await requireTask(ref);
      return { seq: task.seq, view: view(task) };
    },

    /**
     * The task bodies of up to `limit` events after `seq`, oldest first (fewer than `limit`: no
     * more for now). Events are read before the conversation, which can only have grown since.
     */
    async eventsAfter(
      taskUuid: string,
      seq: number,
      limit = EVENTS_PAGE,
    ): Promise<Array<{ seq: number; data: TaskView }>> {
      const stored = await repo.eventsAfter(db.kysely, taskUuid, seq, limit);
      if (!stored.some((e) => needsConversation(e.data))) return stored as Array<{ seq: number; data: TaskView }>;
      const conversation = await repo.conversation(db.kysely, taskUuid);
      if (!conversation) return [];
      return stored.map((e) => ({ seq: e.seq, data: fromStoredEvent(e.data, conversation) }));
    },

    async list(workspaceUuid: string, agentUuid: string, status: TaskStatus | undefined, page: number, limit: number) {
      await deps.agents.requireOwned(workspaceUuid, agentUuid);
      const { tasks, total } = await repo.listTasks(
        db.kysely,
        { agentUuid, workspaceUuid, status },
        (page - 1) * limit,
        limit,
      );
      return { tasks: tasks.map(view), total };
    },

    /**
     * Sends a user message. awaiting_input → running (claimable again with the whole conversation);
     * queued or running: appended for the agent; finished: TASK_NOT_ACCEPTING_MESSAGES.
     */
    async message(ref: TaskRef, content: string) {
      const task = await change(ref, { op: 'message', content });
      return { task_id: task.uuid, status: task.status, message_received: true };
    },

    /**
     * `message` inside the caller's transaction (another capability records something with the
     * message, e.g. the A2A server its sender's messageId). @returns the task as saved.
     */
    messageIn: (trx: Executor, ref: TaskRef, content: string) => changeIn(trx, ref, { op: 'message', content }),

    /** Cancels an open task; repeating it answers the original cancelled_at. */
    async cancel(ref: TaskRef) {
      const task = await change(ref, { op: 'cancel' });
      return { task_id: task.uuid, status: 'cancelled' as const, cancelled_at: task.cancelledAt as string };
    },

    /**
     * Cancels an open task and refuses any finished one, an already cancelled one included (A2A's
     * CancelTask: a task in a final state is not cancelable); the refusal changes nothing.
     * @throws AppError NOT_FOUND, TASK_NOT_CANCELLABLE.
     */
    async cancelOpen(ref: TaskRef): Promise<void> {
      const applied = await db.transaction((trx) => lifecycle.apply(trx, ref, { op: 'cancel' }));
      if (!applied.changed) {
        throw new AppError('TASK_NOT_CANCELLABLE', 'Task cannot be cancelled: it is already cancelled');
      }
    },

    /**
     * Cancels open tasks of an agent that is about to be deleted, `CANCEL_BATCH` per transaction
     * of their own, until none is left; what arrives meanwhile is cancelled by `cancelRestOfAgent`.
     */
    async cancelAllOfAgent(agentUuid: string) {
      while (
        (await db.transaction((trx) => lifecycle.cancelOpenOfAgent(trx, agentUuid, CANCEL_BATCH))) === CANCEL_BATCH
      );
    },

    /** In the transaction that deletes the agent: cancels its open tasks left (batch by batch). */
    async cancelRestOfAgent(trx: Executor, agentUuid: string, nowMs: number) {
      while ((await lifecycle.cancelOpenOfAgent(trx, agentUuid, CANCEL_BATCH, nowMs)) === CANCEL_BATCH);
    },

    requireTask,
  };
}

export type TasksService = ReturnType<typeof createTasksService>;
