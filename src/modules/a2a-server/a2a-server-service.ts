import { randomUUID } from 'node:crypto';
import type { Db } from '../../db/connect.js';
import { UniqueViolationError } from '../../db/errors.js';
import { AppError } from '../../http/errors.js';
import type { Notifier } from '../../lib/notifier.js';
import { type Clock, iso } from '../../lib/time.js';
import type { AgentRow } from '../agents/agents-repo.js';
import type { AgentsService } from '../agents/agents-service.js';
import { watchTask } from '../tasks/events/task-watch.js';
import type { TaskSubmitter } from '../tasks/submit/task-submitter.js';
import { isSettled } from '../tasks/tasks-fns.js';
import type { TaskRecord } from '../tasks/tasks-record.js';
import type { TaskView } from '../tasks/tasks-schemas.js';
import type { TaskRef, TasksService } from '../tasks/tasks-service.js';
import { taskView } from '../tasks/tasks-view.js';
import { invalidParams, RPC_ERRORS, RpcError } from './a2a-errors.js';
import type { A2aPushService } from './a2a-push-service.js';
import { type ListParams, pageToken, type SendParams } from './a2a-rpc-fns.js';
import type { A2aServerRepo } from './a2a-server-repo.js';
import { type A2aTask, agentCard, concurrencyKeyOf, stateTimestamp, statusOfState, toA2aTask } from './a2a-task-fns.js';

const DAY_MS = 86_400_000;
const PUSH_FIELD = 'configuration.taskPushNotificationConfig.';

/**
 * The A2A methods over the tasks service: every state change goes through it (submit, message,
 * cancel), this module only adds what A2A needs (contextIds, messageIds) in the same transactions.
 */
export function createA2aServerService(deps: {
  db: Db;
  repo: A2aServerRepo;
  tasks: Pick<TasksService, 'messageIn' | 'cancelOpen' | 'requireTask'>;
  /** Creates the tasks of new conversations. */
  submitter: Pick<TaskSubmitter, 'prepare' | 'insert'>;
  agents: Pick<AgentsService, 'requireOwned'>;
  notifier: Pick<Notifier, 'subscribe' | 'fallbackPollMs'>;
  clock: Clock;
  publicUrl: string;
  maxWaitMs: number;
  /** Stores a push config sent with a message, in the message's transaction. */
  push: Pick<A2aPushService, 'store' | 'notifyCreated'>;
}) {
  const { db, repo, tasks } = deps;

  /** A task body as an A2A Task (its contextId and messageIds read from storage). */
  async function a2aView(view: TaskView, historyLength?: number): Promise<A2aTask> {
    const extras = await repo.extras(db.kysely, [view.task_id]);
    const messageIds = extras.messageIds.get(view.task_id) ?? new Map<number, string>();
    return toA2aTask(view, { contextId: extras.contexts.get(view.task_id), messageIds }, historyLength);
  }

  const a2aTask = (task: TaskRecord, historyLength?: number) => a2aView(taskView(task), historyLength);

  /** @throws RpcError -32001 unless the task is one of this agent's. */
  async function requireTask(ref: TaskRef): Promise<TaskRecord> {
    try {
      return await tasks.requireTask(ref);
    } catch (err) {
      throw rpcErrorOf(err);
    }
  }

  async function createTask(agent: AgentRow, workspaceUuid: string, p: SendParams, nowMs: number): Promise<TaskRecord> {
    if (agent.status !== 'active') {
      throw new RpcError(RPC_ERRORS.unsupportedOperation, `Agent is ${agent.status} and does not accept tasks`);
    }
    const { message } = p;
    const input = {
      message: message.text,
      ...(message.metadata ? { metadata: message.metadata } : {}),
      concurrency_key: concurrencyKeyOf(message.metadata),
    };
    const { task } = await deps.submitter.prepare(agent, workspaceUuid, input, nowMs);
    await db.transaction(async (trx) => {
      await deps.submitter.insert(trx, task);
      await repo.claimMessageId(trx, claim(agent.uuid, message.messageId, task.uuid, nowMs));
      await repo.insertContext(trx, {
        taskUuid: task.uuid,
        agentUuid: agent.uuid,
        contextId: message.contextId ?? randomUUID(),
      });
      await repo.insertHistoryId(trx, task.uuid, 0, message.messageId);
      // A push config sent with the creating message also hears of the creation.
      if (p.push) {
        const config = await deps.push.store(trx, task, p.push, PUSH_FIELD);
        await deps.push.notifyCreated(trx, task, config);
      }
    });
    return task;
  }

  async function continueTask(ref: TaskRef, p: SendParams, nowMs: number): Promise<TaskRecord> {
    const { message } = p;
    const current = await requireTask(ref);
    const extras = await repo.extras(db.kysely, [ref.taskUuid]);
    const contextId = extras.contexts.get(ref.taskUuid) ?? ref.taskUuid;
    if (message.contextId !== undefined && message.contextId !== contextId) {
      throw invalidParams('message.contextId', `message.contextId does not match the task's contextId ${contextId}`);
    }
    try {
      return await db.transaction(async (trx) => {
        // Stored before the message takes effect, so the change it causes is sent to it.
        if (p.push) await deps.push.store(trx, current, p.push, PUSH_FIELD);
        const saved = await tasks.messageIn(trx, ref, message.text);
        await repo.claimMessageId(trx, claim(ref.agentUuid, message.messageId, ref.taskUuid, nowMs));
        await repo.insertHistoryId(trx, ref.taskUuid, saved.messages.length - 1, message.messageId);
        return saved;
      });
    } catch (err) {
      throw err instanceof AppError ? rpcErrorOf(err) : err;
    }
  }

  const claim = (agentUuid: string, messageId: string, taskUuid: string, nowMs: number) => ({
    agentUuid,
    messageId,
    taskUuid,
    now: iso(nowMs),
    expiresAt: iso(nowMs + DAY_MS),
  });

  return {
    /** @throws AppError NOT_FOUND (HTTP 404) unless the agent is the workspace's. */
    agent: (workspaceUuid: string, agentUuid: string) => deps.agents.requireOwned(workspaceUuid, agentUuid),

    card: (agent: AgentRow) => agentCard(agent, deps.publicUrl),

    a2aTask,
    a2aView,

    /**
     * SendMessage without waiting: a new task (no taskId) or a message to one. A messageId this
     * agent saw in the last 24 hours returns the task it went to and changes nothing.
     * @throws RpcError for A2A's refusals (-32001, -32004, -32602).
     */
    async send(agent: AgentRow, workspaceUuid: string, p: SendParams): Promise<TaskRecord> {
      const nowMs = deps.clock.now();
      const seenTask = async () => {
        const seen = await repo.findMessageId(db.kysely, agent.uuid, p.message.messageId);
        if (!seen || seen.expires_at <= iso(nowMs)) return null;
        return requireTask({ workspaceUuid, agentUuid: agent.uuid, taskUuid: seen.task_uuid });
      };
      const earlier = await seenTask();
      if (earlier) return earlier;
      try {
        if (p.message.taskId === undefined) return await createTask(agent, workspaceUuid, p, nowMs);
        return await continueTask({ workspaceUuid, agentUuid: agent.uuid, taskUuid: p.message.taskId }, p, nowMs);
      } catch (err) {
        // A concurrent request with the same messageId got there first: answer what it made.
        if (!(err instanceof UniqueViolationError)) throw err;
        const first = await seenTask();
        if (!first) throw err;
        return first;
      }
    },

    /**
     * Waits until the task is completed, failed, cancelled or awaiting input, TASKHOOK_A2A_MAX_WAIT_SECONDS
     * pass, or `signal` aborts (the client went away). @returns the task as it is then.
     */
    async settle(ref: TaskRef, signal: AbortSignal): Promise<TaskRecord> {
      const deadline = performance.now() + deps.maxWaitMs;
      const watch = watchTask(deps.notifier, ref.taskUuid, { signal });
      try {
        for (;;) {
          const task = await requireTask(ref);
          const left = deadline - performance.now();
          if (isSettled(task.status) || left <= 0 || watch.closed) return task;
          await watch.wait(left);
        }
      } finally {
        watch.close();
      }
    },

    async get(ref: TaskRef, historyLength?: number): Promise<A2aTask> {
      return a2aTask(await requireTask(ref), historyLength);
    },

    /** Cancels an open task. @throws RpcError -32001, and -32002 for a completed, failed or cancelled one. */
    async cancel(ref: TaskRef): Promise<A2aTask> {
      try {
        await tasks.cancelOpen(ref);
      } catch (err) {
        throw rpcErrorOf(err);
      }
      return a2aTask(await requireTask(ref));
    },

    /**
     * ListTasks: the agent's tasks newest first, a page at a time; artifacts only when asked for.
     * `pageSize` in the answer is the page size used (asked for, or 50), as A2A's proto defines it.
     */
    async list(agent: AgentRow, workspaceUuid: string, p: ListParams) {
      const status = p.state === undefined ? undefined : statusOfState(p.state);
      if (status === null) return { tasks: [], nextPageToken: '', pageSize: p.pageSize, totalSize: 0 };
      const page = await listPage({ agentUuid: agent.uuid, workspaceUuid, status, contextId: p.contextId }, p);
      const extras = await repo.extras(
        db.kysely,
        page.tasks.map((t) => t.uuid),
      );
      const list = page.tasks.map((t) => {
        const { artifacts, ...task } = toA2aTask(
          taskView(t),
          { contextId: extras.contexts.get(t.uuid), messageIds: extras.messageIds.get(t.uuid) ?? new Map() },
          p.historyLength,
        );
        return p.includeArtifacts && artifacts ? { ...task, artifacts } : task;
      });
      return {
        tasks: list,
        nextPageToken: pageToken(p.offset + list.length, page.total),
        pageSize: p.pageSize,
        totalSize: page.total,
      };
    },
  };

  /**
   * One page of the agent's tasks. With `statusTimestampAfter`, the tasks changed since then are
   * read and kept when their status timestamp is later: a status timestamp is computed from the
   * task's body (stateTimestamp) and is never later than its last change, so the one rule that
   * says what a status timestamp is also decides the filter.
   */
  async function listPage(
    filter: { agentUuid: string; workspaceUuid: string; status: TaskView['status'] | undefined; contextId?: string },
    p: ListParams,
  ) {
    const after = p.statusTimestampAfter;
    if (after === undefined) return repo.listTasks(db.kysely, filter, { offset: p.offset, limit: p.pageSize });
    const changed = await repo.listTasks(db.kysely, { ...filter, changedAfter: after }, null);
    const kept = changed.tasks.filter((t) => stateTimestamp(taskView(t)) > after);
    return { tasks: kept.slice(p.offset, p.offset + p.pageSize), total: kept.length };
  }
}

/** A2A's error for a refusal of the tasks service; anything else is passed on unchanged. */
export function rpcErrorOf(err: unknown): unknown {
  if (!(err instanceof AppError)) return err;
  switch (err.code) {
    case 'NOT_FOUND':
      return new RpcError(RPC_ERRORS.taskNotFound, 'Task not found');
    case 'TASK_NOT_CANCELLABLE':
      return new RpcError(RPC_ERRORS.taskNotCancelable, err.message);
    case 'TASK_NOT_ACCEPTING_MESSAGES':
    case 'AGENT_UNAVAILABLE':
      return new RpcError(RPC_ERRORS.unsupportedOperation, err.message);
    case 'INVALID_REQUEST':
    case 'LIMIT_EXCEEDED':
      return err.status === 429 ? err : invalidParams(err.details?.field ?? '', err.message);
    default:
      return err;
  }
}

export type A2aServerService = ReturnType<typeof createA2aServerService>;
