import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../connect.js';
import { columnTypes, type DialectMigration } from './types.js';

/** Accounts, credentials, agents, settings and rate-limit counters. */
export const migration001: DialectMigration = {
  async up(db: Kysely<unknown>, dialect: Dialect) {
    const t = columnTypes(dialect);

    await db.schema
      .createTable('users')
      .addColumn('uuid', 'text', (c) => c.primaryKey().notNull())
      .addColumn('email', 'text', (c) => c.notNull().unique())
      .addColumn('password_hash', 'text', (c) => c.notNull())
      .addColumn('email_verified', t.bool, (c) => c.notNull())
      .addColumn('agents_enabled', t.bool, (c) => c.notNull())
      .addColumn('token_version', 'integer', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();

    await db.schema
      .createTable('email_verifications')
      .addColumn('token_hash', 'text', (c) => c.primaryKey().notNull())
      .addColumn('user_uuid', 'text', (c) => c.notNull().references('users.uuid').onDelete('cascade'))
      .addColumn('expires_at', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();

    for (const table of ['platform_keys', 'ingest_tokens'] as const) {
      const secretColumn = table === 'platform_keys' ? 'key_hash' : 'token_hash';
      let builder = db.schema
        .createTable(table)
        .addColumn('uuid', 'text', (c) => c.primaryKey().notNull())
        .addColumn('user_uuid', 'text', (c) => c.notNull().references('users.uuid').onDelete('cascade'));
      if (table === 'platform_keys') builder = builder.addColumn('name', 'text', (c) => c.notNull());
      await builder
        .addColumn(secretColumn, 'text', (c) => c.notNull().unique())
        .addColumn('prefix', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('last_used_at', 'text')
        .addColumn('revoked_at', 'text')
        .execute();
      await db.schema.createIndex(`${table}_user_idx`).on(table).columns(['user_uuid', 'created_at']).execute();
    }

    await db.schema
      .createTable('signing_secrets')
      .addColumn('uuid', 'text', (c) => c.primaryKey().notNull())
      .addColumn('user_uuid', 'text', (c) => c.notNull().references('users.uuid').onDelete('cascade'))
      .addColumn('secret_sealed', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'text')
      .execute();
    await db.schema
      .createIndex('signing_secrets_user_idx')
      .on('signing_secrets')
      .columns(['user_uuid', 'created_at'])
      .execute();

    await db.schema
      .createTable('agents')
      .addColumn('uuid', 'text', (c) => c.primaryKey().notNull())
      .addColumn('user_uuid', 'text', (c) => c.notNull().references('users.uuid').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('description', 'text')
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('runtime', t.json, (c) => c.notNull())
      .addColumn('concurrency', 'integer', (c) => c.notNull())
      .addColumn('default_timeout_seconds', 'integer', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .addColumn('deleted_at', 'text')
      .execute();
    await db.schema.createIndex('agents_user_idx').on('agents').columns(['user_uuid', 'created_at']).execute();

    await db.schema
      .createTable('settings')
      .addColumn('key', 'text', (c) => c.primaryKey().notNull())
      .addColumn('value', 'text', (c) => c.notNull())
      .execute();

    // Counters are not worth a WAL write on PostgreSQL: UNLOGGED survives instance restarts
    // and clean server restarts; a server crash resets the current minute, which is harmless.
    await db.schema
      .createTable('rate_limits')
      .$call((b) => (dialect === 'postgres' ? b.modifyFront(sql`unlogged`) : b))
      .addColumn('scope', 'text', (c) => c.notNull())
      .addColumn('window_start', 'integer', (c) => c.notNull())
      .addColumn('count', 'integer', (c) => c.notNull().defaultTo(0))
      .addPrimaryKeyConstraint('rate_limits_pk', ['scope', 'window_start'])
      .execute();
  },
};
