import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../connect.js';
import type { DialectMigration } from './types.js';

/**
 * A workspace sends one invitation e-mail per address per 10 minutes: creating an invitation looks
 * up when the workspace last invited that address, whatever became of that invitation since
 * (pending, accepted, revoked or replaced). Invitations stay as long as their workspace, so this
 * index over all of them, not only the pending ones, answers it.
 */
export const migration029: DialectMigration = {
  async up(db: Kysely<unknown>, _dialect: Dialect) {
    await sql`create index invitations_sent_idx on invitations (workspace_uuid, email_lower, created_at)`.execute(db);
  },
};
