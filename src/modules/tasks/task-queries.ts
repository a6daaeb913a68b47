import { sql } from 'kysely';
import type { Executor } from '../../db/connect.js';
import { withDbErrors } from '../../db/errors.js';
import { FINAL_STATUSES, type TaskStatus } from './tasks-fns.js';
import { type TaskRecord, toRecord } from './tasks-record.js';

/**
 * What other rooms may ask of the task tables, read-only or retention: every statement on
 * `tasks` lives in the tasks room, so a plan or index change is made (and tested) in one place.
 * Changes of a task never go through here: they go through the lifecycle (`lifecycle.ts`).
 */
export const taskQueries = {
  /**
   * Housekeeping: deletes up to `limit` tasks that finished before `before` (through the
   * `tasks_finished_idx` partial index); their events, callbacks and push runs go with them
   * (foreign keys cascade). @returns how many went.
   */
  async deleteFinished(ex: Executor, before: string, limit: number): Promise<number> {
    const result = await ex
      .deleteFrom('tasks')
      .where('uuid', 'in', (q) =>
        q
          .selectFrom('tasks')
          .select('uuid')
          // The statuses as literals, as the index's condition writes them: SQLite uses a partial
          // index only when the query's own text implies its condition, which bound values never do.
          .where(sql<boolean>`status in (${sql.join([...FINAL_STATUSES].map((s) => sql.lit(s)))})`)
          .where('updated_at', '<', before)
          .limit(limit),
      )
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  },

  /** Metrics: tasks per status, and how many are claimable now (the queue depth). */
  async counts(ex: Executor): Promise<{ byStatus: Array<{ status: string; count: number }>; ready: number }> {
    const byStatus = await ex
      .selectFrom('tasks')
      .select(['status', sql<number>`count(*)`.as('count')])
      .groupBy('status')
      .execute();
    const queued = await ex
      .selectFrom('tasks')
      .select(sql<number>`count(*)`.as('count'))
      .where(sql<boolean>`ready = true`)
      .executeTakeFirstOrThrow();
    return {
      byStatus: byStatus.map((r) => ({ status: r.status, count: Number(r.count) })),
      ready: Number(queued.count),
    };
  },

  /**
   * The task's id, agent and creation time when it is the workspace's: the model proxy's
   * attribution, and the window of a task's budget.
   */
  ownedBy(ex: Executor, workspaceUuid: string, taskUuid: string) {
    return withDbErrors(
      ex
        .selectFrom('tasks')
        .select(['uuid', 'agent_uuid', 'created_at'])
        .where('uuid', '=', taskUuid)
        .where('workspace_uuid', '=', workspaceUuid)
        .executeTakeFirst(),
    );
  },

  /**
   * The schedules' overlap rule: true when the agent's task (of this workspace) exists and has not
   * finished yet.
   */
  async isOpen(ex: Executor, key: { workspaceUuid: string; agentUuid: string; taskUuid: string }): Promise<boolean> {
    const row = await withDbErrors(
      ex
        .selectFrom('tasks')
        .select('status')
        .where('uuid', '=', key.taskUuid)
        .where('agent_uuid', '=', key.agentUuid)
        .where('workspace_uuid', '=', key.workspaceUuid)
        .executeTakeFirst(),
    );
    return row !== undefined && !FINAL_STATUSES.has(row.status as TaskStatus);
  },

  /** Which of these task uuids still exist (the model proxy forgets the spend of the others). */
  async existing(ex: Executor, taskUuids: readonly string[]): Promise<Set<string>> {
    if (taskUuids.length === 0) return new Set();
    const rows = await withDbErrors(ex.selectFrom('tasks').select('uuid').where('uuid', 'in', taskUuids).execute());
    return new Set(rows.map((r) => r.uuid));
  },

  /**
   * The A2A server's list: the agent's tasks newest first, optionally of one status and one A2A
   * context (a task without a context row is its own context).
   */
  /**
   * The agent's tasks newest first, optionally of one status, one A2A context, and changed after
   * `changedAfter` (an ISO timestamp; every change of a task moves its `updated_at`). `page` null:
   * every task that matches.
   */
  async listInContext(
    ex: Executor,
    filter: {
      agentUuid: string;
      workspaceUuid: string;
      status?: TaskStatus | undefined;
      contextId?: string | undefined;
      changedAfter?: string | undefined;
    },
    page: { offset: number; limit: number } | null,
  ): Promise<{ tasks: TaskRecord[]; total: number }> {
    const { contextId, status, changedAfter } = filter;
    const base = ex
      .selectFrom('tasks')
      .leftJoin('a2a_task_contexts as c', 'c.task_uuid', 'tasks.uuid')
      .where('tasks.agent_uuid', '=', filter.agentUuid)
      .where('tasks.workspace_uuid', '=', filter.workspaceUuid)
      .$if(status !== undefined, (qb) => qb.where('tasks.status', '=', status as string))
      .$if(changedAfter !== undefined, (qb) => qb.where('tasks.updated_at', '>', changedAfter as string))
      .$if(contextId !== undefined, (qb) =>
        qb.where((eb) =>
          eb.or([
            eb('c.context_id', '=', contextId as string),
            eb.and([eb('c.task_uuid', 'is', null), eb('tasks.uuid', '=', contextId as string)]),
          ]),
        ),
      );
    const [rows, count] = await Promise.all([
      withDbErrors(
        base
          .selectAll('tasks')
          .orderBy('tasks.created_at', 'desc')
          .orderBy('tasks.uuid', 'desc')
          .$if(page !== null, (qb) => qb.offset(page?.offset ?? 0).limit(page?.limit ?? 0))
          .execute(),
      ),
      withDbErrors(base.select(sql<number | string>`count(*)`.as('n')).executeTakeFirstOrThrow()),
    ]);
    return { tasks: rows.map(toRecord), total: Number(count.n) };
  },
};

export type TaskQueries = typeof taskQueries;
