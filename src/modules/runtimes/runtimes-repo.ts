import type { Executor } from '../../db/connect.js';
import { withDbErrors } from '../../db/errors.js';
import { fromDbJson, toDbJson } from '../../db/json.js';

/** What a push runtime keeps about a task between runs. */
export interface PushRunRow {
  state: Record<string, unknown> | null;
  acceptedLeaseId: string | null;
}

/**
 * The push runs table (state kept between runs, the lease an http agent accepted). What the
 * dispatcher reads of tasks it asks the tasks room (`queue-repo.ts`), of agents the agents room.
 */
export const runtimesRepo = {
  /** The push run row of a task, or null. */
  async findRun(ex: Executor, taskUuid: string): Promise<PushRunRow | null> {
    const row = await withDbErrors(
      ex
        .selectFrom('push_runs')
        .select(['state', 'accepted_lease_id'])
        .where('task_uuid', '=', taskUuid)
        .executeTakeFirst(),
    );
    if (!row) return null;
    const state = row.state === null ? null : fromDbJson<Record<string, unknown> | null>(row.state);
    return { state, acceptedLeaseId: row.accepted_lease_id };
  },

  /** Stores a runtime's state for the task (creating its row). */
  saveState(ex: Executor, taskUuid: string, state: Record<string, unknown> | null, now: string) {
    const value = state === null ? null : toDbJson(state);
    return withDbErrors(
      ex
        .insertInto('push_runs')
        .values({ task_uuid: taskUuid, state: value, accepted_lease_id: null, updated_at: now })
        .onConflict((oc) => oc.column('task_uuid').doUpdateSet({ state: value, updated_at: now }))
        .execute(),
    );
  },

  /** Records that the agent accepted the task under `leaseId` (http 202). */
  markAccepted(ex: Executor, taskUuid: string, leaseId: string, now: string) {
    return withDbErrors(
      ex
        .insertInto('push_runs')
        .values({ task_uuid: taskUuid, state: null, accepted_lease_id: leaseId, updated_at: now })
        .onConflict((oc) => oc.column('task_uuid').doUpdateSet({ accepted_lease_id: leaseId, updated_at: now }))
        .execute(),
    );
  },

  /** Deletes the task's push run row; the row as it was, or null. */
  async takeRun(ex: Executor, taskUuid: string): Promise<PushRunRow | null> {
    const row = await runtimesRepo.findRun(ex, taskUuid);
    if (row) await withDbErrors(ex.deleteFrom('push_runs').where('task_uuid', '=', taskUuid).execute());
    return row;
  },
};
