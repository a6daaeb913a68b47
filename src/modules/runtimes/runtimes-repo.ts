import { sql } from 'kysely';
import type { Executor } from '../../db/connect.js';
import { withDbErrors as guard } from '../../db/errors.js';
import { fromDbJson, toDbJson } from '../../db/json.js';
import { lockRows } from '../../db/transactions.js';
import type { Runtime } from '../agents/agents-schemas.js';
import { type TaskRecord, toRecord } from '../tasks/tasks-repo.js';

/** An active agent with tasks waiting, as the dispatcher needs it. */
export interface WaitingAgent {
  uuid: string;
  userUuid: string;
  runtime: Runtime;
}

/** What a push runtime keeps about a task between runs. */
export interface PushRunRow {
  state: Record<string, unknown> | null;
  acceptedLeaseId: string | null;
}

/**
 * The dispatcher's reads (which agents have work, the tasks it may hand out now) and the push
 * runs table (state kept between runs, the lease an http agent accepted).
 */
export const runtimesRepo = {
  /** Active push-runtime agents with at least one claimable task (found through the tasks' `ready` index). */
  async agentsWithWork(ex: Executor, dialect: 'sqlite' | 'postgres', limit: number): Promise<WaitingAgent[]> {
    // Worker agents are left out in SQL: there may be many of them with work, and the limit must not hide ours.
    const type = dialect === 'sqlite' ? sql<string>`json_extract(runtime, '$.type')` : sql<string>`runtime->>'type'`;
    const rows = await guard(
      ex
        .selectFrom('agents')
        .select(['uuid', 'user_uuid', 'runtime'])
        .where('deleted_at', 'is', null)
        .where('status', '=', 'active')
        .where(type, '<>', 'worker')
        .where((eb) =>
          eb.exists(
            eb
              .selectFrom('tasks')
              .select(sql<number>`1`.as('one'))
              .whereRef('tasks.agent_uuid', '=', 'agents.uuid')
              .where(sql<boolean>`ready = true`),
          ),
        )
        .limit(limit)
        .execute(),
    );
    return rows.map((r) => ({ uuid: r.uuid, userUuid: r.user_uuid, runtime: fromDbJson<Runtime>(r.runtime) }));
  },

  /**
   * Claimable tasks of the agent by priority then age, row-locked (others' locks skipped), leaving
   * out retries whose backoff has not run out (a retry's `estimated_start` is its earliest start).
   */
  async lockDispatchable(trx: Executor, agentUuid: string, limit: number, now: string): Promise<TaskRecord[]> {
    const query = trx
      .selectFrom('tasks')
      .selectAll()
      .where('agent_uuid', '=', agentUuid)
      .where(sql<boolean>`ready = true`)
      .where((eb) => eb.or([eb('attempt', '=', 1), eb('estimated_start', '<=', now)]))
      .orderBy('priority', 'desc')
      .orderBy('created_at')
      .orderBy('uuid')
      .limit(limit);
    const rows = await guard(lockRows(trx, query, { skipLocked: true }).execute());
    return rows.map(toRecord);
  },

  /** The push run row of a task, or null. */
  async findRun(ex: Executor, taskUuid: string): Promise<PushRunRow | null> {
    const row = await guard(
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
    return guard(
      ex
        .insertInto('push_runs')
        .values({ task_uuid: taskUuid, state: value, accepted_lease_id: null, updated_at: now })
        .onConflict((oc) => oc.column('task_uuid').doUpdateSet({ state: value, updated_at: now }))
        .execute(),
    );
  },

  /** Records that the agent accepted the task under `leaseId` (http 202). */
  markAccepted(ex: Executor, taskUuid: string, leaseId: string, now: string) {
    return guard(
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
    if (row) await guard(ex.deleteFrom('push_runs').where('task_uuid', '=', taskUuid).execute());
    return row;
  },

  /** A task's status and lease id, or undefined when it is gone (a cheap look for the dispatcher). */
  statusOf(ex: Executor, taskUuid: string) {
    return guard(ex.selectFrom('tasks').select(['status', 'lease_id']).where('uuid', '=', taskUuid).executeTakeFirst());
  },

  /** An agent's runtime as stored (deleted agents included), or undefined. */
  /** The runtime type of each of these agents (deleted ones included). */
  async runtimeTypes(ex: Executor, agentUuids: string[]): Promise<Array<{ uuid: string; type: Runtime['type'] }>> {
    if (agentUuids.length === 0) return [];
    const rows = await guard(ex.selectFrom('agents').select(['uuid', 'runtime']).where('uuid', 'in', agentUuids).execute());
    return rows.map((r) => ({ uuid: r.uuid, type: fromDbJson<Runtime>(r.runtime).type }));
  },

  async runtimeOf(ex: Executor, agentUuid: string): Promise<Runtime | undefined> {
    const row = await guard(ex.selectFrom('agents').select('runtime').where('uuid', '=', agentUuid).executeTakeFirst());
    return row && fromDbJson<Runtime>(row.runtime);
  },
};
