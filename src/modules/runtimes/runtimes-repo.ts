import { sql } from 'kysely';
import type { Executor } from '../../db/connect.js';
import { withDbErrors as guard } from '../../db/errors.js';
import { fromDbJson } from '../../db/json.js';
import { lockRows } from '../../db/transactions.js';
import type { Runtime } from '../agents/agents-schemas.js';
import { type TaskRecord, toRecord } from '../tasks/tasks-repo.js';

/** An active agent with tasks waiting, as the dispatcher needs it. */
export interface WaitingAgent {
  uuid: string;
  userUuid: string;
  runtime: Runtime;
}

/** The dispatcher's reads: which agents have work, and the tasks it may hand out now. */
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
};
