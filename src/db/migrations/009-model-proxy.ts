import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../connect.js';
import { columnTypes, type DialectMigration } from './types.js';

/** Provider credentials (keys sealed at rest) and one record per model call made through the proxy. */
export const migration009: DialectMigration = {
  async up(db: Kysely<unknown>, dialect: Dialect) {
    const t = columnTypes(dialect);
    await db.schema
      .createTable('provider_credentials')
      .addColumn('uuid', 'text', (c) => c.primaryKey().notNull())
      .addColumn('user_uuid', 'text', (c) => c.notNull().references('users.uuid').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('provider', 'text', (c) => c.notNull())
      .addColumn('base_url', 'text', (c) => c.notNull())
      .addColumn('api_key_sealed', 'text', (c) => c.notNull())
      .addColumn('api_key_hint', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .addColumn('last_used_at', 'text')
      .execute();
    await sql`create unique index provider_credentials_name_idx on provider_credentials (user_uuid, name)`.execute(db);

    await db.schema
      .createTable('spotlight_calls')
      .addColumn('uuid', 'text', (c) => c.primaryKey().notNull())
      .addColumn('user_uuid', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('source', 'text', (c) => c.notNull())
      .addColumn('model', 'text', (c) => c.notNull())
      .addColumn('upstream_model', 'text', (c) => c.notNull())
      .addColumn('response_model', 'text')
      // No foreign key: records outlive their credential (its name then reads as null).
      .addColumn('provider_credential_uuid', 'text', (c) => c.notNull())
      .addColumn('stream', t.bool, (c) => c.notNull())
      .addColumn('status_code', 'integer', (c) => c.notNull())
      .addColumn('error', t.json)
      .addColumn('latency_ms', 'integer', (c) => c.notNull())
      .addColumn('time_to_first_token_ms', 'integer')
      .addColumn('input_tokens', 'bigint')
      .addColumn('output_tokens', 'bigint')
      // Billionths of a US dollar, so sums are exact; null when the model has no known price.
      .addColumn('cost_nanos', 'bigint')
      .addColumn('agent_uuid', 'text')
      .addColumn('task_uuid', 'text')
      .execute();
    await sql`create index spotlight_calls_user_idx on spotlight_calls (user_uuid, created_at desc, uuid desc)`.execute(
      db,
    );
    await sql`create index spotlight_calls_created_idx on spotlight_calls (created_at)`.execute(db);
  },
};
