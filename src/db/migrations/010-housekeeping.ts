import { type Kysely, sql } from 'kysely';
import type { DialectMigration } from './types.js';

/** Indexes for housekeeping: old rows are found without scanning the tables they sit in. */
export const migration010: DialectMigration = {
  async up(db: Kysely<unknown>) {
    // A finished task is never updated again, so updated_at is the time it finished.
    await sql`create index tasks_finished_idx on tasks (updated_at) where status in ('completed', 'failed', 'cancelled')`.execute(
      db,
    );
    await sql`create index trigger_deliveries_received_idx on trigger_deliveries (received_at)`.execute(db);
  },
};
