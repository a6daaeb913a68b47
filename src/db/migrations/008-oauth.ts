import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../connect.js';
import type { DialectMigration } from './types.js';

/**
 * OAuth login: the pending login attempts (step 1 to step 2, any instance may finish one) and the
 * provider identities linked to users. Accounts created by OAuth have no password: their
 * `password_hash` is the empty string, which no password ever matches.
 */
export const migration008: DialectMigration = {
  async up(db: Kysely<unknown>, _dialect: Dialect) {
    await db.schema
      .createTable('oauth_attempts')
      // SHA-256 of the state: a copy of the database does not hand out live login attempts.
      .addColumn('state_hash', 'text', (c) => c.primaryKey().notNull())
      .addColumn('provider', 'text', (c) => c.notNull())
      .addColumn('redirect_uri', 'text', (c) => c.notNull())
      .addColumn('code_verifier', 'text', (c) => c.notNull())
      .addColumn('nonce', 'text')
      .addColumn('expires_at', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    await sql`create index oauth_attempts_expires_idx on oauth_attempts (expires_at)`.execute(db);

    await db.schema
      .createTable('oauth_identities')
      .addColumn('provider', 'text', (c) => c.notNull())
      .addColumn('subject', 'text', (c) => c.notNull())
      .addColumn('user_uuid', 'text', (c) => c.notNull().references('users.uuid').onDelete('cascade'))
      .addColumn('email', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('last_login_at', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('oauth_identities_pk', ['provider', 'subject'])
      .execute();
    await sql`create index oauth_identities_user_idx on oauth_identities (user_uuid)`.execute(db);
  },
};
