import { type Selectable, sql } from 'kysely';
import type { Executor } from '../../db/connect.js';
import type { TasksTable } from '../../db/database.js';
import { withDbErrors as guard } from '../../db/errors.js';
import { fromDbJson, toDbJson } from '../../db/json.js';
import { prepareQuery } from '../../db/prepared.js';
import type { TaskStatus } from './tasks-fns.js';
import type { ConversationMessage, Progress, TaskResult } from './tasks-schemas.js';

export interface TaskRecord {
  uuid: string;
  agentUuid: string;
  userUuid: string;
  status: TaskStatus;
  /** Waiting for a worker: queued, or running again after a user's reply and not yet claimed. */
  ready: boolean;
  priority: number;
  message: string;
  /** The conversation, the original message first. */
  messages: ConversationMessage[];
  metadata: Record<string, unknown>;
  callbackMode: 'poll' | 'webhook';
  webhookUrl: string | null;
  timeoutSeconds: number;
  attempt: number;
  leaseId: string | null;
  leaseSeconds: number | null;
  /** Set only while a worker holds the task. */
  leaseExpiresAt: string | null;
  workerId: string | null;
  progress: Progress | null;
  inputRequest: { message: string; requested_at: string } | null;
  result: TaskResult | null;
  error: { code: string; message: string } | null;
  estimatedStart: string;
  createdAt: string;
  updatedAt: string;
  startedAt: string | null;
  timeoutAt: string | null;
  completedAt: string | null;
  failedAt: string | null;
  cancelledAt: string | null;
  /** Event sequence number: increases with every visible change. */
  seq: number;
}

const JSON_FIELDS = new Set(['messages', 'metadata', 'progress', 'inputRequest', 'result', 'error']);
const COLUMNS: Record<keyof TaskRecord, keyof TasksTable> = {
  uuid: 'uuid',
  agentUuid: 'agent_uuid',
  userUuid: 'user_uuid',
  status: 'status',
  ready: 'ready',
  priority: 'priority',
  message: 'message',
  messages: 'messages',
  metadata: 'metadata',
  callbackMode: 'callback_mode',
  webhookUrl: 'webhook_url',
  timeoutSeconds: 'timeout_seconds',
  attempt: 'attempt',
  leaseId: 'lease_id',
  leaseSeconds: 'lease_seconds',
  leaseExpiresAt: 'lease_expires_at',
  workerId: 'worker_id',
  progress: 'progress',
  inputRequest: 'input_request',
  result: 'result',
  error: 'error',
  estimatedStart: 'estimated_start',
  createdAt: 'created_at',
  updatedAt: 'updated_at',
  startedAt: 'started_at',
  timeoutAt: 'timeout_at',
  completedAt: 'completed_at',
  failedAt: 'failed_at',
  cancelledAt: 'cancelled_at',
  seq: 'seq',
};

/** Record fields → column values (JSON as text, booleans as 1/0). */
function toColumns(fields: Partial<TaskRecord>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields) as Array<[keyof TaskRecord, unknown]>) {
    if (value === undefined) continue;
    const column = COLUMNS[key];
    if (key === 'ready') out[column] = value ? 1 : 0;
    else if (JSON_FIELDS.has(key)) out[column] = value === null ? null : toDbJson(value);
    else out[column] = value;
  }
  return out;
}

export function toRecord(row: Selectable<TasksTable>): TaskRecord {
  const json = <T>(v: unknown) => (v === null ? null : fromDbJson<T>(v));
  return {
    uuid: row.uuid,
    agentUuid: row.agent_uuid,
    userUuid: row.user_uuid,
    status: row.status as TaskStatus,
    ready: Boolean(row.ready),
    priority: row.priority,
    message: row.message,
    messages: fromDbJson(row.messages),
    metadata: fromDbJson(row.metadata),
    callbackMode: row.callback_mode as TaskRecord['callbackMode'],
    webhookUrl: row.webhook_url,
    timeoutSeconds: row.timeout_seconds,
    attempt: row.attempt,
    leaseId: row.lease_id,
    leaseSeconds: row.lease_seconds,
    leaseExpiresAt: row.lease_expires_at,
    workerId: row.worker_id,
    progress: json(row.progress),
    inputRequest: json(row.input_request),
    result: json(row.result),
    error: json(row.error),
    estimatedStart: row.estimated_start,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    startedAt: row.started_at,
    timeoutAt: row.timeout_at,
    completedAt: row.completed_at,
    failedAt: row.failed_at,
    cancelledAt: row.cancelled_at,
    seq: row.seq,
  };
}

const TASK_COLUMNS = Object.values(COLUMNS);

// Queries on the path of every submit, poll and report, built once (see prepareQuery).
const insertTaskRow = prepareQuery(TASK_COLUMNS.length, (ex, ...values: unknown[]) =>
  ex.insertInto('tasks').values(Object.fromEntries(TASK_COLUMNS.map((c, i) => [c, values[i]])) as never),
);
const ownTaskQuery = (ex: Executor, taskUuid: string, agentUuid: string, userUuid: string) =>
  ex
    .selectFrom('tasks')
    .selectAll()
    .where('uuid', '=', taskUuid)
    .where('agent_uuid', '=', agentUuid)
    .where('user_uuid', '=', userUuid);
const ownTask = prepareQuery(3, ownTaskQuery);
const ownTaskLocked = prepareQuery(3, (ex, t: string, a: string, u: string) => ownTaskQuery(ex, t, a, u).forUpdate());

/** The only code that touches the task tables (claiming lives in tasks-claim-repo.ts). */
export const tasksRepo = {
  insertTask(ex: Executor, task: TaskRecord) {
    const columns = toColumns(task);
    return guard(insertTaskRow(ex, ...TASK_COLUMNS.map((c) => columns[c] ?? null)));
  },

  /** Writes the changed fields; `lock` takes a row lock first on PostgreSQL (SQLite has one writer). */
  updateTask(ex: Executor, uuid: string, changes: Partial<TaskRecord>) {
    return guard(
      ex
        .updateTable('tasks')
        .set(toColumns(changes) as never)
        .where('uuid', '=', uuid)
        .execute(),
    );
  },

  /** The task when it belongs to this agent of this user (row-locked on PostgreSQL when `lock`). */
  async findTask(
    ex: Executor,
    where: { userUuid: string; agentUuid: string; taskUuid: string },
    lock = false,
  ): Promise<TaskRecord | undefined> {
    const [row] = await guard((lock ? ownTaskLocked : ownTask)(ex, where.taskUuid, where.agentUuid, where.userUuid));
    return row && toRecord(row);
  },

  async findByUuid(ex: Executor, uuid: string, lock = false): Promise<TaskRecord | undefined> {
    const row = await guard(
      ex
        .selectFrom('tasks')
        .selectAll()
        .where('uuid', '=', uuid)
        .$if(lock, (qb) => qb.forUpdate())
        .executeTakeFirst(),
    );
    return row && toRecord(row);
  },

  insertEvent(ex: Executor, event: { taskUuid: string; seq: number; data: unknown; createdAt: string }) {
    return guard(
      ex
        .insertInto('task_events')
        .values({ task_uuid: event.taskUuid, seq: event.seq, data: toDbJson(event.data), created_at: event.createdAt })
        .execute(),
    );
  },

  async eventsAfter(ex: Executor, taskUuid: string, afterSeq: number) {
    const rows = await guard(
      ex
        .selectFrom('task_events')
        .select(['seq', 'data'])
        .where('task_uuid', '=', taskUuid)
        .where('seq', '>', afterSeq)
        .orderBy('seq')
        .execute(),
    );
    return rows.map((r) => ({ seq: r.seq, data: fromDbJson<unknown>(r.data) }));
  },

  async listTasks(
    ex: Executor,
    filter: { agentUuid: string; userUuid: string; status?: TaskStatus | undefined },
    offset: number,
    limit: number,
  ) {
    const base = ex
      .selectFrom('tasks')
      .where('agent_uuid', '=', filter.agentUuid)
      .where('user_uuid', '=', filter.userUuid)
      .$if(filter.status !== undefined, (qb) => qb.where('status', '=', filter.status as string));
    const [rows, count] = await Promise.all([
      guard(
        base.selectAll().orderBy('created_at', 'desc').orderBy('uuid', 'desc').offset(offset).limit(limit).execute(),
      ),
      guard(base.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()),
    ]);
    return { tasks: rows.map(toRecord), total: Number(count.n) };
  },

  /** Open tasks of an agent (for cancellation when it is deleted). */
  async openTaskUuids(ex: Executor, agentUuid: string): Promise<string[]> {
    const rows = await guard(
      ex
        .selectFrom('tasks')
        .select('uuid')
        .where('agent_uuid', '=', agentUuid)
        .where('status', 'in', ['queued', 'running', 'awaiting_input'])
        .execute(),
    );
    return rows.map((r) => r.uuid);
  },

  /**
   * Claimable tasks of an agent in claim order (priority, then age). On PostgreSQL the rows are
   * locked and rows locked by a concurrent claim are skipped; SQLite has a single writer.
   */
  async selectClaimable(ex: Executor, agentUuid: string, limit: number, lock: boolean): Promise<TaskRecord[]> {
    const rows = await guard(
      ex
        .selectFrom('tasks')
        .selectAll()
        .where('agent_uuid', '=', agentUuid)
        // A literal, so both planners can use the partial index (`where ready = true`).
        .where(sql<boolean>`ready = true`)
        .orderBy('priority', 'desc')
        .orderBy('created_at')
        .orderBy('uuid')
        .limit(limit)
        .$if(lock, (qb) => qb.forUpdate().skipLocked())
        .execute(),
    );
    return rows.map(toRecord);
  },

  /** How many tasks of the agent a worker holds now. */
  async countHeld(ex: Executor, agentUuid: string): Promise<number> {
    const row = await guard(
      ex
        .selectFrom('tasks')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('agent_uuid', '=', agentUuid)
        .where('lease_expires_at', 'is not', null)
        .executeTakeFirstOrThrow(),
    );
    return Number(row.n);
  },

  /** Ready tasks that a new task of this priority would wait behind, counted up to `cap`. */
  async countAhead(ex: Executor, agentUuid: string, priority: number, cap: number): Promise<number> {
    const row = await guard(
      sql<{ n: number | string }>`select count(*) as n from (select 1 from tasks
        where agent_uuid = ${agentUuid} and ready = true and priority >= ${priority} limit ${cap}) as ahead`.execute(
        ex,
      ),
    );
    return Number(row.rows[0]?.n ?? 0);
  },

  /** Run times (ms) of the agent's most recently completed tasks. */
  async recentRunTimes(ex: Executor, agentUuid: string, count: number): Promise<number[]> {
    const rows = await guard(
      ex
        .selectFrom('tasks')
        .select(['started_at', 'completed_at'])
        .where('agent_uuid', '=', agentUuid)
        .where('completed_at', 'is not', null)
        .orderBy('completed_at', 'desc')
        .limit(count)
        .execute(),
    );
    return rows
      .filter((r) => r.started_at && r.completed_at)
      .map((r) => Date.parse(r.completed_at as string) - Date.parse(r.started_at as string));
  },

  /** Tasks whose lease ran out before `now`. */
  async expiredLeases(ex: Executor, now: string, limit: number): Promise<string[]> {
    const rows = await guard(
      ex.selectFrom('tasks').select('uuid').where('lease_expires_at', '<', now).limit(limit).execute(),
    );
    return rows.map((r) => r.uuid);
  },

  /** Running tasks past their timeout. */
  async timedOut(ex: Executor, now: string, limit: number): Promise<string[]> {
    const rows = await guard(
      ex
        .selectFrom('tasks')
        .select('uuid')
        .where(sql<boolean>`status = 'running'`)
        .where('timeout_at', '<', now)
        .limit(limit)
        .execute(),
    );
    return rows.map((r) => r.uuid);
  },
};

export type TasksRepo = typeof tasksRepo;
