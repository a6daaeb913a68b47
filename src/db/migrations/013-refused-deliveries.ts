import { type Kysely, sql } from 'kysely';
import type { DialectMigration } from './types.js';

/**
 * Deliveries refused for their secret or signature (401), by trigger and time: the delivery log
 * keeps at most 100 of them per trigger per hour, and counts the last hour's before writing one.
 */
export const migration013: DialectMigration = {
  async up(db: Kysely<unknown>) {
    await sql`create index trigger_deliveries_refused_idx on trigger_deliveries (trigger_uuid, received_at) where status_code = 401`.execute(
      db,
    );
  },
};
