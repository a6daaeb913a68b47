import { sql } from 'kysely';
import type { Executor } from '../../../db/connect.js';
import { withDbErrors } from '../../../db/errors.js';
import { fromDbJson } from '../../../db/json.js';
import { prepareQuery } from '../../../db/prepared.js';
import { lockRows } from '../../../db/transactions.js';
import type { Runtime } from '../../agents/runtime-schemas.js';
import { OPEN_STATUSES } from '../tasks-fns.js';
import { type TaskRecord, toRecord } from '../tasks-record.js';

/** An active agent with tasks waiting, as the push dispatcher needs it. */
export interface WaitingAgent {
  uuid: string;
  workspaceUuid: string;
  runtime: Runtime;
}

// On the path of every claim (and so of every dispatch), built once. Claims of one agent take
// turns on its row; its submits' foreign key checks do not wait (FOR NO KEY UPDATE).
const agentForClaim = prepareQuery(1, (ex, uuid: string) =>
  lockRows(
    ex,
    ex
      .selectFrom('agents')
      .select(['status', 'concurrency', 'runtime', 'concurrency_per_key'])
      .select((eb) =>
        eb
          .or([
            eb.exists(
              eb
                .selectFrom('concurrency_groups as g')
                .select(sql<number>`1`.as('one'))
                .whereRef('g.agent_uuid', '=', 'agents.uuid'),
            ),
            eb.exists(
              eb
                .selectFrom('tasks as t')
                .select(sql<number>`1`.as('one'))
                .whereRef('t.agent_uuid', '=', 'agents.uuid')
                // Literals, so both planners use the partial index tasks_keyed_ready_idx.
                .where(sql<boolean>`t.ready = true`)
                .where('t.concurrency_key', 'is not', null),
            ),
          ])
          .as('keyed'),
      )
      .where('uuid', '=', uuid)
      .where('deleted_at', 'is', null),
    { noKeyUpdate: true },
  ),
);

/** A live agent as a claim needs it, its row locked for the claim's transaction. */
export interface AgentForClaim {
  status: string;
  concurrency: number;
  runtime: Runtime;
  /** Per-key cap of held tasks; null: none. */
  concurrencyPerKey: number | null;
  /** Fair claiming applies: the agent has a claimable keyed task, or remembers when groups were served. */
  keyed: boolean;
}

/**
 * The hot statements of the queue: the agent row a claim locks, claiming (the lifecycle's `claim`), what a claim and an
 * estimate count, the push dispatcher's look for work, and what the sweeper and agent deletion
 * lock. Kept apart from `tasksRepo` as graphile-worker keeps one file per hot statement.
 */
export const queueRepo = {
  /**
   * The claim's first statement: locks the agent row (claims of one agent take turns) and, in the
   * same statement, probes two tiny indexes for whether fair claiming applies, so a claim of an
   * agent without keyed work costs no extra round trip. Undefined for a deleted or unknown agent.
   */
  async lockAgentForClaim(trx: Executor, uuid: string): Promise<AgentForClaim | undefined> {
    const [row] = await withDbErrors(agentForClaim(trx, uuid));
    return (
      row && {
        status: row.status,
        concurrency: row.concurrency,
        runtime: fromDbJson<Runtime>(row.runtime),
        concurrencyPerKey: row.concurrency_per_key,
        keyed: Boolean(row.keyed),
      }
    );
  },

  /**
   * Claimable tasks of an agent in claim order (priority, then age), row-locked; rows a
   * concurrent claim holds are skipped, and so are tasks not available by `now` (a delayed start
   * or a retry's wait: `available_at`, the claim index's last column, so they are passed over
   * inside the index).
   */
  async lockClaimable(trx: Executor, agentUuid: string, limit: number, now: string): Promise<TaskRecord[]> {
    const query = trx
      .selectFrom('tasks')
      .selectAll()
      .where('agent_uuid', '=', agentUuid)
      // A literal, so both planners can use the partial index (`where ready = true`).
      .where(sql<boolean>`ready = true`)
      .where('available_at', '<=', now)
      .orderBy('priority', 'desc')
      .orderBy('created_at')
      .orderBy('uuid')
      .limit(limit);
    const rows = await withDbErrors(lockRows(trx, query, { skipLocked: true }).execute());
    return rows.map(toRecord);
  },

  /**
   * The earliest instant after `now` at which a task of the agent that waits for a worker becomes
   * available (a delayed start or a retry's wait), or null: how long an empty long-poll claim may
   * sleep before it looks again. Reads the claim index only.
   */
  async nextAvailable(ex: Executor, agentUuid: string, now: string): Promise<string | null> {
    const row = await withDbErrors(
      ex
        .selectFrom('tasks')
        .select((eb) => eb.fn.min('available_at').as('at'))
        .where('agent_uuid', '=', agentUuid)
        .where(sql<boolean>`ready = true`)
        .where('available_at', '>', now)
        .executeTakeFirst(),
    );
    return (row?.at as string | null | undefined) ?? null;
  },

  /** How many tasks of the agent a worker (or a push run) holds now. */
  async countHeld(ex: Executor, agentUuid: string): Promise<number> {
    const row = await withDbErrors(
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
    const row = await withDbErrors(
      sql<{ n: number | string }>`select count(*) as n from (select 1 from tasks
        where agent_uuid = ${agentUuid} and ready = true and priority >= ${priority} limit ${cap}) as ahead`.execute(
        ex,
      ),
    );
    return Number(row.rows[0]?.n ?? 0);
  },

  /** Run times (ms) of the agent's most recently completed tasks. */
  async recentRunTimes(ex: Executor, agentUuid: string, count: number): Promise<number[]> {
    const rows = await withDbErrors(
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

  /** Active push-runtime agents with at least one claimable task (found through the tasks' `ready` index). */
  async agentsWithWork(ex: Executor, dialect: 'sqlite' | 'postgres', limit: number): Promise<WaitingAgent[]> {
    // Worker agents are left out in SQL: there may be many of them with work, and the limit must not hide ours.
    const type = dialect === 'sqlite' ? sql<string>`json_extract(runtime, '$.type')` : sql<string>`runtime->>'type'`;
    const rows = await withDbErrors(
      ex
        .selectFrom('agents')
        .select(['uuid', 'workspace_uuid', 'runtime'])
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
    return rows.map((r) => ({
      uuid: r.uuid,
      workspaceUuid: r.workspace_uuid,
      runtime: fromDbJson<Runtime>(r.runtime),
    }));
  },

  /** A task's status and lease id, or undefined when it is gone (a cheap look, no lock). */
  statusOf(ex: Executor, taskUuid: string) {
    return withDbErrors(
      ex.selectFrom('tasks').select(['status', 'lease_id']).where('uuid', '=', taskUuid).executeTakeFirst(),
    );
  },

  /**
   * Up to `limit` open tasks of an agent, row-locked in id order (as `lockTasks` locks, so the two
   * never wait on each other in a cycle); for cancelling them when the agent is deleted.
   */
  async lockOpenOfAgent(trx: Executor, agentUuid: string, limit: number): Promise<TaskRecord[]> {
    const query = trx
      .selectFrom('tasks')
      .selectAll()
      .where('agent_uuid', '=', agentUuid)
      .where('status', 'in', [...OPEN_STATUSES])
      .orderBy('uuid')
      .limit(limit);
    return (await withDbErrors(lockRows(trx, query).execute())).map(toRecord);
  },

  /** Tasks whose lease ran out before `now`. */
  async expiredLeases(ex: Executor, now: string, limit: number): Promise<string[]> {
    const rows = await withDbErrors(
      ex.selectFrom('tasks').select('uuid').where('lease_expires_at', '<', now).limit(limit).execute(),
    );
    return rows.map((r) => r.uuid);
  },

  /** Running tasks past their timeout. */
  async timedOut(ex: Executor, now: string, limit: number): Promise<string[]> {
    const rows = await withDbErrors(
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

export type QueueRepo = typeof queueRepo;
