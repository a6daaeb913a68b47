import { SqliteAdapter, sql } from 'kysely';
import type { Executor } from '../../../db/connect.js';
import { withDbErrors } from '../../../db/errors.js';
import { lockRows } from '../../../db/transactions.js';
import { type TaskRecord, toRecord } from '../tasks-record.js';
import { type Candidate, KEYLESS } from './fair-claim-fns.js';

interface CandidateRow {
  uuid: string;
  concurrency_key: string | null;
  priority: number;
  created_at: string;
}

const toCandidates = (rows: { rows: CandidateRow[] }): Candidate[] =>
  rows.rows.map((r) => ({
    uuid: r.uuid,
    key: r.concurrency_key,
    priority: Number(r.priority),
    createdAt: r.created_at,
  }));

/**
 * The walk over the agent's keys and every group's first tasks, in one statement of fixed text:
 * the keys by a skip scan of `tasks_keyed_ready_idx`, then each key's first `limit` tasks and the
 * keyless ones'. PostgreSQL reads a key's tasks with a lateral join; SQLite, which has none, with a
 * correlated `IN (… limit n)`. Both replaced unions of a hundred branches per statement, which
 * cost more to plan than to run: 200 ms (PostgreSQL) and 65 ms (SQLite) a claim at 1,000 keys
 * (npm run bench:keys), against a few ms and 20 ms for this.
 */
function candidatesAtOnce(agentUuid: string, limit: number, now: string, lateral: boolean) {
  const backoff = sql`and available_at <= ${now}`;
  const ofKey = sql`from tasks where agent_uuid = ${agentUuid} and ready = true and concurrency_key = walk.k
    ${backoff} order by priority desc, created_at, uuid limit ${limit}`;
  const keyed = lateral
    ? sql`cross join lateral (select uuid, concurrency_key, priority, created_at ${ofKey}) as t`
    : sql`join tasks t on t.uuid in (select uuid ${ofKey})`;
  return sql<CandidateRow>`with recursive walk(k) as (
      select (select min(concurrency_key) from tasks where agent_uuid = ${agentUuid} and ready = true
        and concurrency_key is not null)
      union all
      select (select min(concurrency_key) from tasks where agent_uuid = ${agentUuid} and ready = true
        and concurrency_key is not null and concurrency_key > walk.k) from walk where walk.k is not null
    )
    select t.uuid, t.concurrency_key, t.priority, t.created_at from walk ${keyed}
    where walk.k is not null
    union all
    select * from (select uuid, concurrency_key, priority, created_at from tasks
      where agent_uuid = ${agentUuid} and ready = true and concurrency_key is null ${backoff}
      order by priority desc, created_at, uuid limit ${limit}) as keyless`;
}

/**
 * The statements of fair claiming (concurrency keys), used only by a claim of an agent that has
 * keyed work or remembered groups; an agent without either claims through `lockClaimable` alone.
 * Every method runs under the claim's lock of the agent row.
 */
export const fairQueueRepo = {
  /**
   * Forgets the groups that have neither claimable nor held tasks, then the keyless group when it
   * is the only one left (its serving time matters only against keyed groups).
   * @returns what is remembered now, by group (`KEYLESS` for the keyless group).
   */
  async groupsAfterSweep(trx: Executor, agentUuid: string): Promise<Map<string, number | null>> {
    await withDbErrors(
      sql`delete from concurrency_groups where agent_uuid = ${agentUuid} and group_key <> ${KEYLESS}
        and not exists (select 1 from tasks t where t.agent_uuid = ${agentUuid} and t.ready = true
          and t.concurrency_key is not null and t.concurrency_key = concurrency_groups.group_key)
        and not exists (select 1 from tasks t where t.agent_uuid = ${agentUuid} and t.lease_expires_at is not null
          and t.concurrency_key = concurrency_groups.group_key)`.execute(trx),
    );
    await withDbErrors(
      sql`delete from concurrency_groups where agent_uuid = ${agentUuid} and group_key = ${KEYLESS}
        and not exists (select 1 from concurrency_groups g where g.agent_uuid = ${agentUuid} and g.group_key <> ${KEYLESS})`.execute(
        trx,
      ),
    );
    const rows = await withDbErrors(
      trx
        .selectFrom('concurrency_groups')
        .select(['group_key', 'served_seq'])
        .where('agent_uuid', '=', agentUuid)
        .execute(),
    );
    return new Map(rows.map((r) => [r.group_key, r.served_seq === null ? null : Number(r.served_seq)]));
  },

  /** Whether a keyless task of the agent was ever handed out (and is still stored). */
  async keylessServed(trx: Executor, agentUuid: string): Promise<boolean> {
    const row = await withDbErrors(
      trx
        .selectFrom('tasks')
        .select(sql<number>`1`.as('one'))
        .where('agent_uuid', '=', agentUuid)
        .where('concurrency_key', 'is', null)
        .where('claimed_at', 'is not', null)
        .limit(1)
        .executeTakeFirst(),
    );
    return row !== undefined;
  },

  /** How many tasks of each key of the agent are held now. */
  async heldPerKey(trx: Executor, agentUuid: string): Promise<Map<string, number>> {
    const rows = await withDbErrors(
      sql<{ k: string; n: number | string }>`select concurrency_key as k, count(*) as n from tasks
        where agent_uuid = ${agentUuid} and lease_expires_at is not null and concurrency_key is not null
        group by concurrency_key`.execute(trx),
    );
    return new Map(rows.rows.map((r) => [r.k, Number(r.n)]));
  },

  /**
   * The first `perGroup` claimable tasks of each group (by claim order), unlocked; tasks not
   * available by `now` are left out (as in `lockClaimable`). Reads index ranges
   * only: the agent's keys by a skip scan of `tasks_keyed_ready_idx`, then each key's first tasks
   * and the keyless ones' (`tasks_claim_idx`), so the cost follows the keys, not the backlog.
   */
  async candidates(trx: Executor, agentUuid: string, perGroup: number, now: string): Promise<Candidate[]> {
    const lateral = !(trx.getExecutor().adapter instanceof SqliteAdapter);
    return toCandidates(await withDbErrors(candidatesAtOnce(agentUuid, perGroup, now, lateral).execute(trx)));
  },

  /** The tasks of `uuids` still claimable, row-locked; rows a concurrent transaction holds are skipped. */
  async lockChosen(trx: Executor, uuids: string[]): Promise<TaskRecord[]> {
    if (uuids.length === 0) return [];
    const query = trx.selectFrom('tasks').selectAll().where('uuid', 'in', uuids).where(sql<boolean>`ready = true`);
    return (await withDbErrors(lockRows(trx, query, { skipLocked: true }).execute())).map(toRecord);
  },

  /** Records the groups' serving numbers (one statement). */
  async saveServed(trx: Executor, agentUuid: string, served: Array<[string, number | null]>): Promise<void> {
    if (served.length === 0) return;
    await withDbErrors(
      trx
        .insertInto('concurrency_groups')
        .values(served.map(([group, seq]) => ({ agent_uuid: agentUuid, group_key: group, served_seq: seq })))
        .onConflict((oc) =>
          oc.columns(['agent_uuid', 'group_key']).doUpdateSet((eb) => ({ served_seq: eb.ref('excluded.served_seq') })),
        )
        .execute(),
    );
  },
};

export type FairQueueRepo = typeof fairQueueRepo;
