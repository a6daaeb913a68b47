import { sql } from 'kysely';
import type { Executor } from '../../db/connect.js';

/**
 * The deletes of housekeeping. They cross module tables on purpose: retention is one rule over
 * everything the service stores, and each statement removes at most `limit` rows through an index.
 * Finished tasks are deleted by the tasks room (`taskQueries.deleteFinished`).
 */
export function createHousekeepingRepo() {
  return {
    /** Deletes up to `limit` trigger deliveries received before `before`. */
    async deleteTriggerDeliveries(ex: Executor, before: string, limit: number): Promise<number> {
      const result = await ex
        .deleteFrom('trigger_deliveries')
        .where('uuid', 'in', (q) =>
          q.selectFrom('trigger_deliveries').select('uuid').where('received_at', '<', before).limit(limit),
        )
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    },

    /** Deletes up to `limit` remembered delivery signatures whose replay window ended before `now`. */
    async deleteExpiredTriggerSignatures(ex: Executor, now: string, limit: number): Promise<number> {
      const result = await ex
        .deleteFrom('trigger_signatures')
        .where(({ eb, refTuple, selectFrom }) =>
          eb(
            refTuple('trigger_uuid', 'signature'),
            'in',
            selectFrom('trigger_signatures')
              .select(['trigger_uuid', 'signature'])
              .where('expires_at', '<', now)
              .limit(limit)
              .$asTuple('trigger_uuid', 'signature'),
          ),
        )
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    },

    /** Deletes up to `limit` A2A messageIds whose 24 hours ended before `now`. */
    async deleteExpiredA2aMessageIds(ex: Executor, now: string, limit: number): Promise<number> {
      const result = await ex
        .deleteFrom('a2a_message_ids')
        .where(({ eb, refTuple, selectFrom }) =>
          eb(
            refTuple('agent_uuid', 'message_id'),
            'in',
            selectFrom('a2a_message_ids')
              .select(['agent_uuid', 'message_id'])
              .where('expires_at', '<', now)
              .limit(limit)
              .$asTuple('agent_uuid', 'message_id'),
          ),
        )
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    },

    /** PostgreSQL: true when this transaction holds the housekeeping lock (another instance may). */
    async tryLock(ex: Executor, key: number): Promise<boolean> {
      const row = await sql<{ locked: boolean }>`select pg_try_advisory_xact_lock(${key}) as locked`.execute(ex);
      return row.rows[0]?.locked === true;
    },
  };
}
