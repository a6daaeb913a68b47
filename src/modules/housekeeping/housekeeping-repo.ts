import { sql } from 'kysely';
import type { Executor } from '../../db/connect.js';

/**
 * Housekeeping's own statement: its turn-taking lock. The deletes it paces are each room's own
 * (`deleteExpired…`, `…Purge`), so the SQL on a room's tables stays in that room.
 */
export function createHousekeepingRepo() {
  return {
    /** PostgreSQL: true when this transaction holds the housekeeping lock (another instance may). */
    async tryLock(ex: Executor, key: number): Promise<boolean> {
      const row = await sql<{ locked: boolean }>`select pg_try_advisory_xact_lock(${key}) as locked`.execute(ex);
      return row.rows[0]?.locked === true;
    },
  };
}
