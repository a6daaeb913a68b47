import type { Db, Executor } from '../../db/connect.js';
import { UniqueViolationError } from '../../db/errors.js';
import { AppError, invalid, notFound } from '../../http/errors.js';
import { newId } from '../../lib/ids.js';
import { type Clock, iso } from '../../lib/time.js';
import type { AgentRow } from '../agents/agents-repo.js';
import type { AgentsService } from '../agents/agents-service.js';
import type { createEstimator } from './estimator.js';
import type { IdempotencyRecord, idempotencyRepo } from './idempotency-repo.js';
import { createInsertBatcher } from './insert-batcher.js';
import type { Lifecycle } from './lifecycle.js';
import { fromStoredEvent, needsConversation } from './task-events-fns.js';
import { requestHash, type TaskStatus } from './tasks-fns.js';
import { queuedTask } from './tasks-record.js';
import type { TaskRecord, TasksRepo } from './tasks-repo.js';
import { MAX_METADATA_BYTES, type SubmitInput, type SubmitResult, type TaskView } from './tasks-schemas.js';
import { taskView } from './tasks-view.js';
import type { TaskWriter } from './tasks-writer.js';
import { isClaimable, type TaskInput } from './transition-fns.js';

const DAY_MS = 24 * 60 * 60 * 1000;
/** Events read per query of an event stream (a stream resumed far back pages through them). */
export const EVENTS_PAGE = 100;
export const DEFAULT_PRIORITY = 5;
/** Tasks cancelled per transaction when their agent is deleted (a long transaction holds locks). */
export const CANCEL_BATCH = 500;

export interface TaskRef {
  workspaceUuid: string;
  agentUuid: string;
  taskUuid: string;
}

/** The caller's span a new task hangs under (its trace id and span id, lowercase hex). */
export interface TraceParent {
  traceId: string;
  spanId: string;
}

/** The user's side of tasks: submit, read, converse, cancel. */
export function createTasksService(deps: {
  db: Db;
  repo: TasksRepo;
  idempotency: typeof idempotencyRepo;
  agents: Pick<AgentsService, 'requireOwned'>;
  writer: Pick<TaskWriter, 'insert' | 'insertMany'>;
  lifecycle: Pick<Lifecycle, 'apply' | 'cancelOpenOfAgent'>;
  estimator: ReturnType<typeof createEstimator>;
  clock: Clock;
  publicUrl: string;
  /** @throws AppError INVALID_REQUEST when the callback address may not be called. */
  checkWebhookUrl: (url: string) => Promise<void>;
}) {
  const { db, repo, writer, lifecycle } = deps;
  const batcher = createInsertBatcher({ db, writer });

  function urls(agentUuid: string, taskUuid: string) {
    const poll = `${deps.publicUrl}/agent/${agentUuid}/task/${taskUuid}`;
    return { poll_url: poll, cancel_url: `${poll}/cancel` };
  }

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

  async function validate(input: SubmitInput) {
    if (input.metadata && Buffer.byteLength(JSON.stringify(input.metadata)) > MAX_METADATA_BYTES) {
      throw invalid('metadata', `must be at most ${MAX_METADATA_BYTES} bytes as JSON`);
    }
    const mode = input.callback_mode ?? 'poll';
    if (mode === 'webhook' && !input.webhook_url)
      throw invalid('webhook_url', 'is required with callback_mode webhook');
    if (mode === 'poll' && input.webhook_url)
      throw invalid('webhook_url', 'is only allowed with callback_mode webhook');
    if (input.webhook_url) await deps.checkWebhookUrl(input.webhook_url);
  }

  /**
   * The first response to a live Idempotency-Key of the user, or null when there is none.
   * @throws AppError IDEMPOTENCY_KEY_REUSED when the key was used for another agent or body.
   */
  async function replayOf(
    workspaceUuid: string,
    key: string,
    hash: string,
    nowMs: number,
  ): Promise<SubmitResult | null> {
    const first = await deps.idempotency.find(db.kysely, workspaceUuid, key);
    if (!first || first.expiresAt <= iso(nowMs)) return null;
    if (first.requestHash !== hash) {
      throw new AppError(
        'IDEMPOTENCY_KEY_REUSED',
        'This Idempotency-Key was used with a different agent or request body',
      );
    }
    return first.response as SubmitResult;
  }

  /** A new queued task for the agent and the submit response announcing it (nothing written yet). */
  async function prepare(
    agent: Pick<AgentRow, 'uuid' | 'concurrency' | 'default_timeout_seconds'>,
    workspaceUuid: string,
    input: SubmitInput,
    nowMs: number,
    parent: TraceParent | null = null,
  ): Promise<{ task: TaskRecord; response: SubmitResult }> {
    const now = iso(nowMs);
    const priority = input.priority ?? DEFAULT_PRIORITY;
    const uuid = newId();
    const estimatedStart = iso(await deps.estimator.estimate(agent, priority, nowMs));
    const task = queuedTask(
      {
        uuid,
        agentUuid: agent.uuid,
        workspaceUuid,
        ready: isClaimable('queued', null),
        priority,
        message: input.message,
        metadata: input.metadata ?? {},
        callbackMode: input.callback_mode ?? 'poll',
        webhookUrl: input.webhook_url ?? null,
        timeoutSeconds: input.timeout_override ?? agent.default_timeout_seconds,
        estimatedStart,
        traceId: parent?.traceId ?? null,
        traceParentSpanId: parent?.spanId ?? null,
        concurrencyKey: input.concurrency_key ?? null,
      },
      now,
    );
    const response: SubmitResult = {
      task_id: uuid,
      status: 'queued',
      created_at: now,
      estimated_start: estimatedStart,
      ...urls(agent.uuid, uuid),
    };
    return { task, response };
  }

  return {
    urls,

    /**
     * For other capabilities that create tasks in their own transaction (webhook triggers):
     * `prepare` outside it, `insert` inside it (workers are woken once it commits).
     */
    prepare,
    insert: (trx: Executor, task: TaskRecord) => writer.insert(trx, task),
    /** `insert` for several tasks in one multi-row INSERT (a batch of webhook deliveries). */
    insertMany: (trx: Executor, tasks: TaskRecord[]) => writer.insertMany(trx, tasks),

    /**
     * Queues a task. With an idempotency key, a repeat of the same request within 24 h answers
     * the first response and creates nothing. `alsoWrite` commits with the task's insert (what
     * else records the task, e.g. the MCP server's list); a replay does not run it.
     * @throws AppError NOT_FOUND, AGENT_UNAVAILABLE, INVALID_REQUEST, IDEMPOTENCY_KEY_REUSED.
     */
    async submit(
      workspaceUuid: string,
      agentUuid: string,
      input: SubmitInput,
      idempotencyKey?: string,
      parent: TraceParent | null = null,
      alsoWrite?: (trx: Executor, task: { uuid: string; createdAt: string }) => Promise<unknown>,
    ): Promise<{ response: SubmitResult; replayed: boolean }> {
      await validate(input);
      const agent = await deps.agents.requireOwned(workspaceUuid, agentUuid);
      const nowMs = deps.clock.now();
      // Only a submit with an Idempotency-Key is compared with another: hashing costs the others.
      const hash = idempotencyKey ? requestHash(agentUuid, input) : '';
      // A retry gets the first answer whatever happened since, e.g. the agent was paused.
      const earlier = idempotencyKey ? await replayOf(workspaceUuid, idempotencyKey, hash, nowMs) : null;
      if (earlier) return { response: earlier, replayed: true };
      if (agent.status !== 'active') {
        throw new AppError('AGENT_UNAVAILABLE', `Agent is ${agent.status} and does not accept tasks`);
      }
      const { task, response } = await prepare(agent, workspaceUuid, input, nowMs, parent);
      const now = task.createdAt;
      const uuid = task.uuid;
      const key: IdempotencyRecord | null = idempotencyKey
        ? {
            workspaceUuid,
            key: idempotencyKey,
            requestHash: hash,
            taskUuid: uuid,
            response,
            createdAt: now,
            expiresAt: iso(nowMs + DAY_MS),
          }
        : null;
      // Without an Idempotency-Key the insert is the whole write: it joins the submits of this
      // turn of the event loop in one transaction (see insert-batcher.ts).
      if (!key && !alsoWrite) {
        await batcher.insert(task);
        return { response, replayed: false };
      }
      try {
        await db.transaction(async (trx) => {
          if (key) await deps.idempotency.claim(trx, key);
          await writer.insert(trx, task);
          await alsoWrite?.(trx, task);
        });
      } catch (err) {
        if (!(err instanceof UniqueViolationError) || !key) throw err;
        const first = await replayOf(workspaceUuid, key.key, hash, nowMs);
        if (!first) throw new AppError('CONFLICT', 'A request with this Idempotency-Key is in flight; retry');
        return { response: first, replayed: true };
      }
      return { response, replayed: false };
    },

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
