import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../connect.js';
import { columnTypes, type DialectMigration } from './types.js';

/** Webhook triggers and the log of every delivery to them. */
export const migration003: DialectMigration = {
  async up(db: Kysely<unknown>, dialect: Dialect) {
    const t = columnTypes(dialect);

    await db.schema
      .createTable('triggers')
      .addColumn('uuid', 'text', (c) => c.primaryKey().notNull())
      .addColumn('agent_uuid', 'text', (c) => c.notNull().references('agents.uuid').onDelete('cascade'))
      .addColumn('user_uuid', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('message_template', 'text', (c) => c.notNull())
      .addColumn('enabled', t.bool, (c) => c.notNull())
      .addColumn('secret_sealed', 'text', (c) => c.notNull())
      .addColumn('previous_secret_sealed', 'text')
      .addColumn('previous_secret_expires_at', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await sql`create index triggers_agent_idx on triggers (agent_uuid, created_at desc, uuid desc)`.execute(db);

    await db.schema
      .createTable('trigger_deliveries')
      .addColumn('uuid', 'text', (c) => c.primaryKey().notNull())
      .addColumn('trigger_uuid', 'text', (c) => c.notNull().references('triggers.uuid').onDelete('cascade'))
      .addColumn('delivery_id', 'text', (c) => c.notNull())
      // Set on the delivery that created a task while its id still deduplicates (24 h).
      .addColumn('dedup_key', 'text')
      .addColumn('received_at', 'text', (c) => c.notNull())
      .addColumn('status_code', 'integer', (c) => c.notNull())
      .addColumn('task_uuid', 'text')
      .addColumn('error', 'text')
      .addColumn('response', t.json)
      .execute();
    await sql`create unique index trigger_deliveries_dedup_idx on trigger_deliveries (trigger_uuid, dedup_key) where dedup_key is not null`.execute(
      db,
    );
    await sql`create index trigger_deliveries_list_idx on trigger_deliveries (trigger_uuid, received_at desc, uuid desc)`.execute(
      db,
    );
  },
};
