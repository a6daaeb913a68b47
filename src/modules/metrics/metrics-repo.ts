import { sql } from 'kysely';
import type { Executor } from '../../db/connect.js';
import { taskQueries } from '../tasks/task-queries.js';

export interface StorageSnapshot {
  tasksByStatus: Array<{ status: string; count: number }>;
  queueDepth: number;
  pendingCallbacks: number;
  oldestCallbackAt: string | null;
}

/** The queries behind the storage gauges of /metrics. */
export function createMetricsRepo() {
  return {
    /** Counts for the gauges; every query is an aggregate over an index or a table (the tasks' from the tasks room). */
    async snapshot(ex: Executor): Promise<StorageSnapshot> {
      const tasks = await taskQueries.counts(ex);
      const callbacks = await ex
        .selectFrom('callbacks')
        .select([sql<number>`count(*)`.as('count'), sql<string | null>`min(created_at)`.as('oldest')])
        .where('status', '=', 'pending')
        .executeTakeFirstOrThrow();
      return {
        tasksByStatus: tasks.byStatus,
        queueDepth: tasks.ready,
        pendingCallbacks: Number(callbacks.count),
        oldestCallbackAt: callbacks.oldest,
      };
    },
  };
}
