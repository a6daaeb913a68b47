import { sql } from 'kysely';
import type { Executor } from '../../../db/connect.js';
import { withDbErrors } from '../../../db/errors.js';
import { type TaskRecord, toRecord } from '../tasks-record.js';
import type { BulkSelection } from './operations-fns.js';

/** A task a bulk action selected, with how many reruns of it existed then (a bulk rerun's check). */
export interface Selected {
  task: TaskRecord;
  reruns: number;
}

/**
 * The statements of bulk actions on tasks (docs/api.md §5.10): the selection, oldest first, read
 * page by page after a (created_at, uuid) position, and the count of a task's reruns.
 */
export const bulkRepo = {
  /**
   * Up to `limit` tasks of the agent after `after` (oldest first) meeting the selection's
   * states, instants and ids; metadata is judged by the caller. With `withReruns`, each row's
   * count of reruns.
   */
  async page(
    ex: Executor,
    owner: { workspaceUuid: string; agentUuid: string },
    selection: BulkSelection,
    after: { createdAt: string; uuid: string } | null,
    limit: number,
    withReruns: boolean,
  ): Promise<Selected[]> {
    let query = ex
      .selectFrom('tasks')
      .selectAll('tasks')
      .where('agent_uuid', '=', owner.agentUuid)
      .where('workspace_uuid', '=', owner.workspaceUuid)
      .where('status', 'in', selection.statuses);
    if (selection.createdAfter) query = query.where('created_at', '>=', selection.createdAfter);
    if (selection.createdBefore) query = query.where('created_at', '<', selection.createdBefore);
    if (selection.taskIds) query = query.where('uuid', 'in', selection.taskIds);
    if (after) {
      query = query.where((eb) =>
        eb.or([
          eb('created_at', '>', after.createdAt),
          eb.and([eb('created_at', '=', after.createdAt), eb('uuid', '>', after.uuid)]),
        ]),
      );
    }
    const rerunCount = sql<number>`(select count(*) from tasks as r where r.rerun_of = tasks.uuid)`;
    const rows = await withDbErrors(
      query
        .select(withReruns ? rerunCount.as('reruns') : sql<number>`0`.as('reruns'))
        .orderBy('created_at')
        .orderBy('uuid')
        .limit(limit)
        .execute(),
    );
    return rows.map((row) => ({ task: toRecord(row), reruns: Number(row.reruns) }));
  },

  /** How many reruns of the task exist (read after locking it: a concurrent bulk rerun's shows). */
  async rerunCount(ex: Executor, taskUuid: string): Promise<number> {
    const row = await withDbErrors(
      ex
        .selectFrom('tasks')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('rerun_of', '=', taskUuid)
        .executeTakeFirst(),
    );
    return Number(row?.n ?? 0);
  },
};
