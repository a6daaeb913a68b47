import { type Kysely, sql } from 'kysely';
import type { DialectMigration } from './types.js';

/**
 * Account recovery: a user can be disabled (`disabled_at`), password reset links (stored as hashes,
 * single use), and an index for finding unverified registrations past their time.
 */
export const migration015: DialectMigration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('users').addColumn('disabled_at', 'text').execute();
    await db.schema
      .createTable('password_resets')
      .addColumn('token_hash', 'text', (c) => c.primaryKey().notNull())
      .addColumn('user_uuid', 'text', (c) => c.notNull().references('users.uuid').onDelete('cascade'))
      .addColumn('expires_at', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    await sql`create index password_resets_user_idx on password_resets (user_uuid, created_at)`.execute(db);
    await sql`create index email_verifications_user_idx on email_verifications (user_uuid, created_at)`.execute(db);
    await sql`create index users_unverified_idx on users (updated_at) where email_verified = ${sql.lit(false)}`.execute(
      db,
    );
  },
};
