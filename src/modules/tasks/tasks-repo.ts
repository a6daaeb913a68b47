import { SqliteAdapter } from 'kysely';
import { chunks, insertRows, MAX_PARAMETERS, updateFromValues } from '../../db/batches.js';
import type { Executor } from '../../db/connect.js';
import { withDbErrors } from '../../db/errors.js';
import { fromDbJson } from '../../db/json.js';
import { prepareQuery } from '../../db/prepared.js';
import { lockRows } from '../../db/transactions.js';
import { agentEventsRepo } from './events/agent-events-repo.js';
import type { StoredTaskEvent } from './events/task-events-fns.js';
import type { TaskStatus } from './tasks-fns.js';
import { COLUMNS, PG_TYPES, type TaskRecord, toColumns, toRecord } from './tasks-record.js';
import type { ConversationMessage, TaskView } from './tasks-schemas.js';

const TASK_COLUMNS = Object.values(COLUMNS);

// Queries on the path of every submit, poll and report, built once (see prepareQuery).
const insertTaskRow = prepareQuery(TASK_COLUMNS.length, (ex, ...values: unknown[]) =>
  ex.insertInto('tasks').values(Object.fromEntries(TASK_COLUMNS.map((c, i) => [c, values[i]])) as never),
);
const ownTaskQuery = (ex: Executor, taskUuid: string, agentUuid: string, workspaceUuid: string) =>
  ex
    .selectFrom('tasks')
    .selectAll()
    .where('uuid', '=', taskUuid)
    .where('agent_uuid', '=', agentUuid)
    .where('workspace_uuid', '=', workspaceUuid);
const ownTask = prepareQuery(3, ownTaskQuery);
const ownTaskLocked = prepareQuery(3, (ex, t: string, a: string, u: string) => lockRows(ex, ownTaskQuery(ex, t, a, u)));

/**
 * The task rows and their events: insert, update, read, lock by id. The queue's hot statements
 * (claiming, counting, the sweeper's looks) are in `queue/queue-repo.ts`, fair claiming's in
 * `queue/fair-queue-repo.ts`, what other rooms ask in `task-queries.ts`. Reads named `lock…`
 * take a row lock (PostgreSQL) for the transaction they run in: the caller is about to change the row.
 */
export const tasksRepo = {
  insertTask(ex: Executor, task: TaskRecord) {
    const columns = toColumns(task);
    return withDbErrors(insertTaskRow(ex, ...TASK_COLUMNS.map((c) => columns[c] ?? null)));
  },

  /** Inserts new tasks in one statement (one row: the prepared insert). */
  async insertTasks(ex: Executor, tasks: TaskRecord[]): Promise<void> {
    if (tasks.length === 1) {
      await tasksRepo.insertTask(ex, tasks[0] as TaskRecord);
      return;
    }
    const values: unknown[] = [];
    for (const task of tasks) {
      const columns = toColumns(task);
      for (const c of TASK_COLUMNS) values.push(columns[c] ?? null);
    }
    await withDbErrors(insertRows(ex, 'tasks', TASK_COLUMNS, values));
  },

  /** Writes the changed fields. */
  updateTask(ex: Executor, uuid: string, changes: Partial<TaskRecord>) {
    return withDbErrors(
      ex
        .updateTable('tasks')
        .set(toColumns(changes) as never)
        .where('uuid', '=', uuid)
        .execute(),
    );
  },

  /**
   * Writes the changed fields of many tasks (each listed once) in a constant number of
   * statements: one per set of changed columns. One task: `updateTask`.
   */
  async updateTasks(ex: Executor, items: Array<{ uuid: string; changes: Partial<TaskRecord> }>): Promise<void> {
    const [only] = items;
    if (items.length === 1 && only) {
      await tasksRepo.updateTask(ex, only.uuid, only.changes);
      return;
    }
    const groups = new Map<string, { columns: string[]; rows: unknown[][] }>();
    for (const { uuid, changes } of items) {
      const values = toColumns(changes);
      const columns = Object.keys(values).sort();
      const key = columns.join();
      const group = groups.get(key) ?? { columns, rows: [] };
      groups.set(key, group);
      group.rows.push([uuid, ...columns.map((c) => values[c])]);
    }
    const target = { table: 'tasks', key: 'uuid', pgTypes: PG_TYPES };
    for (const { columns, rows } of groups.values()) await withDbErrors(updateFromValues(ex, target, columns, rows));
  },

  /** The task when it belongs to this agent of this user. */
  async findTask(ex: Executor, where: TaskKey): Promise<TaskRecord | undefined> {
    const [row] = await withDbErrors(ownTask(ex, where.taskUuid, where.agentUuid, where.workspaceUuid));
    return row && toRecord(row);
  },

  /** Where a task's trace hangs (see `TaskRecord.traceId`), by task id alone; for telemetry. */
  async traceFields(ex: Executor, uuid: string) {
    const row = await withDbErrors(
      ex
        .selectFrom('tasks')
        .select(['uuid', 'trace_id', 'trace_parent_span_id'])
        .where('uuid', '=', uuid)
        .executeTakeFirst(),
    );
    return row && { uuid: row.uuid, traceId: row.trace_id, traceParentSpanId: row.trace_parent_span_id };
  },

  /** `findTask`, row-locked for the transaction `trx`. */
  async lockTask(trx: Executor, where: TaskKey): Promise<TaskRecord | undefined> {
    const [row] = await withDbErrors(ownTaskLocked(trx, where.taskUuid, where.agentUuid, where.workspaceUuid));
    return row && toRecord(row);
  },

  /**
   * The listed tasks that belong to this agent of this user, row-locked for the transaction `trx`
   * in id order (so two transactions locking overlapping sets never wait on each other in a cycle).
   */
  async lockTasks(trx: Executor, where: Omit<TaskKey, 'taskUuid'>, taskUuids: string[]): Promise<TaskRecord[]> {
    const out: TaskRecord[] = [];
    // SQLite, without statistics, would rather walk the agent's index (every task the agent ever
    // had) than make one primary-key lookup per id; there the owner is checked on the rows found.
    // SQLite has no row locks to take (its write transaction excludes the others).
    const byKeyOnly = trx.getExecutor().adapter instanceof SqliteAdapter;
    for (const part of chunks([...taskUuids].sort(), MAX_PARAMETERS)) {
      let query = trx.selectFrom('tasks').selectAll().where('uuid', 'in', part).orderBy('uuid');
      if (!byKeyOnly)
        query = query.where('agent_uuid', '=', where.agentUuid).where('workspace_uuid', '=', where.workspaceUuid);
      for (const row of await withDbErrors(lockRows(trx, query).execute())) {
        if (row.agent_uuid === where.agentUuid && row.workspace_uuid === where.workspaceUuid) out.push(toRecord(row));
      }
    }
    return out;
  },

  /** Any task by id, row-locked for the transaction `trx` (the sweeper). */
  async lockByUuid(trx: Executor, uuid: string): Promise<TaskRecord | undefined> {
    const row = await withDbErrors(
      lockRows(trx, trx.selectFrom('tasks').selectAll().where('uuid', '=', uuid)).executeTakeFirst(),
    );
    return row && toRecord(row);
  },

  /**
   * Writes task events (each change's `toStoredEvent`, in the order of the changes), numbered in
   * their agents' streams; the writer calls it once per transaction, just before the commit.
   */
  appendEvents: agentEventsRepo.append,

  /** Up to `limit` stored events of a task after `afterSeq`, oldest first (see task-events-fns.ts). */
  async eventsAfter(ex: Executor, taskUuid: string, afterSeq: number, limit: number) {
    const rows = await withDbErrors(
      ex
        .selectFrom('task_events')
        .select(['seq', 'data'])
        .where('task_uuid', '=', taskUuid)
        .where('seq', '>', afterSeq)
        .orderBy('seq')
        .limit(limit)
        .execute(),
    );
    return rows.map((r) => ({ seq: r.seq, data: fromDbJson<StoredTaskEvent | TaskView>(r.data) }));
  },

  /** A task's original message and conversation, by task id alone (events are joined with it). */
  async conversation(ex: Executor, uuid: string) {
    const row = await withDbErrors(
      ex.selectFrom('tasks').select(['message', 'messages']).where('uuid', '=', uuid).executeTakeFirst(),
    );
    return row && { message: row.message, messages: fromDbJson<ConversationMessage[]>(row.messages) };
  },

  async listTasks(
    ex: Executor,
    filter: { agentUuid: string; workspaceUuid: string; status?: TaskStatus | undefined },
    offset: number,
    limit: number,
  ) {
    const base = ex
      .selectFrom('tasks')
      .where('agent_uuid', '=', filter.agentUuid)
      .where('workspace_uuid', '=', filter.workspaceUuid)
      .$if(filter.status !== undefined, (qb) => qb.where('status', '=', filter.status as string));
    const [rows, count] = await Promise.all([
      withDbErrors(
        base.selectAll().orderBy('created_at', 'desc').orderBy('uuid', 'desc').offset(offset).limit(limit).execute(),
      ),
      withDbErrors(base.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()),
    ]);
    return { tasks: rows.map(toRecord), total: Number(count.n) };
  },
};

export type TasksRepo = typeof tasksRepo;
export interface TaskKey {
  workspaceUuid: string;
  agentUuid: string;
  taskUuid: string;
}
