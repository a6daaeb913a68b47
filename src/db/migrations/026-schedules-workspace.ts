import { type Kysely, sql } from 'kysely';
import type { DialectMigration } from './types.js';

/**
 * Schedules counted per workspace: the cap on what a workspace holds is counted in the
 * transaction that inserts (docs/schedules.md), through this index rather than a scan.
 */
export const migration026: DialectMigration = {
  async up(db: Kysely<unknown>) {
    await sql`create index schedules_workspace_idx on schedules (workspace_uuid)`.execute(db);
  },
};
