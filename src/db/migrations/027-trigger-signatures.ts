import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../connect.js';
import { columnTypes, type DialectMigration } from './types.js';

/**
 * Replay protection of signed deliveries (docs/api.md, "Signature schemes"): the signature of each accepted
 * delivery of a `github`, `standard_webhooks`, `stripe` or `slack` trigger, kept until its
 * scheme's replay window ends, with the 202 body every copy is answered.
 */
export const migration027: DialectMigration = {
  async up(db: Kysely<unknown>, dialect: Dialect) {
    const t = columnTypes(dialect);
    await db.schema
      .createTable('trigger_signatures')
      .addColumn('trigger_uuid', 'text', (c) => c.notNull().references('triggers.uuid').onDelete('cascade'))
      .addColumn('signature', 'text', (c) => c.notNull())
      .addColumn('workspace_uuid', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'text', (c) => c.notNull())
      .addColumn('response', t.json, (c) => c.notNull())
      .addPrimaryKeyConstraint('trigger_signatures_pk', ['trigger_uuid', 'signature'])
      .execute();
    // Housekeeping deletes the expired ones; a deleted workspace's go by workspace.
    await sql`create index trigger_signatures_expiry_idx on trigger_signatures (expires_at)`.execute(db);
    await sql`create index trigger_signatures_workspace_idx on trigger_signatures (workspace_uuid)`.execute(db);
  },
};
