import { sql } from 'kysely';
import type { Executor } from '../../db/connect.js';

export interface StorageSnapshot {
  tasksByStatus: Array<{ status: string; count: number }>;
  queueDepth: number;
  pendingCallbacks: number;
  oldestCallbackAt: string | null;
}

/** The queries behind the storage gauges of /metrics. */
export function createMetricsRepo() {
  return {
    /** Counts for the gauges; every query is an aggregate over an index or the task table. */
    async snapshot(ex: Executor): Promise<StorageSnapshot> {
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
      const callbacks = await ex
        .selectFrom('callbacks')
        .select([sql<number>`count(*)`.as('count'), sql<string | null>`min(created_at)`.as('oldest')])
        .where('status', '=', 'pending')
        .executeTakeFirstOrThrow();
      return {
        tasksByStatus: byStatus.map((r) => ({ status: r.status, count: Number(r.count) })),
        queueDepth: Number(queued.count),
        pendingCallbacks: Number(callbacks.count),
        oldestCallbackAt: callbacks.oldest,
      };
    },
  };
}
