import { type Kysely, sql } from 'kysely';
import type { DialectMigration } from './types.js';

/**
 * taskhook as the OAuth authorization server of `/mcp`: registered clients (Dynamic Client
 * Registration), pending authorization requests, grants (a user's consent for a client in one
 * workspace with one role) and the codes, access and refresh tokens issued from them (hashes only).
 */
export const migration036: DialectMigration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('mcp_oauth_clients')
      .addColumn('client_id', 'text', (c) => c.primaryKey().notNull())
      .addColumn('client_name', 'text')
      .addColumn('client_uri', 'text')
      .addColumn('logo_uri', 'text')
      .addColumn('application_type', 'text')
      .addColumn('redirect_uris', 'text', (c) => c.notNull())
      .addColumn('grant_types', 'text', (c) => c.notNull())
      .addColumn('auth_method', 'text', (c) => c.notNull())
      .addColumn('secret_hash', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    await sql`create index mcp_oauth_clients_created_idx on mcp_oauth_clients (created_at)`.execute(db);

    await db.schema
      .createTable('mcp_oauth_requests')
      .addColumn('id', 'text', (c) => c.primaryKey().notNull())
      .addColumn('client', 'text', (c) => c.notNull())
      .addColumn('redirect_uri', 'text', (c) => c.notNull())
      .addColumn('code_challenge', 'text', (c) => c.notNull())
      .addColumn('state', 'text')
      .addColumn('resource', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'text', (c) => c.notNull())
      .execute();
    await sql`create index mcp_oauth_requests_expires_idx on mcp_oauth_requests (expires_at)`.execute(db);

    await db.schema
      .createTable('mcp_oauth_grants')
      .addColumn('uuid', 'text', (c) => c.primaryKey().notNull())
      .addColumn('workspace_uuid', 'text', (c) => c.notNull())
      .addColumn('user_uuid', 'text', (c) => c.notNull().references('users.uuid').onDelete('cascade'))
      .addColumn('client_id', 'text', (c) => c.notNull())
      .addColumn('client_name', 'text')
      .addColumn('client_uri', 'text')
      .addColumn('registration', 'text', (c) => c.notNull())
      .addColumn('role', 'text', (c) => c.notNull())
      .addColumn('resource', 'text', (c) => c.notNull())
      .addColumn('approval', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('active', 'integer', (c) => c.notNull())
      .addColumn('last_used_at', 'text')
      .addColumn('revoked_at', 'text')
      .execute();
    await sql`create index mcp_oauth_grants_user_idx on mcp_oauth_grants (user_uuid, created_at)`.execute(db);
    await sql`create index mcp_oauth_grants_workspace_idx on mcp_oauth_grants (workspace_uuid, user_uuid)`.execute(db);
    await sql`create index mcp_oauth_grants_client_idx on mcp_oauth_grants (client_id)`.execute(db);

    await db.schema
      .createTable('mcp_oauth_tokens')
      .addColumn('hash', 'text', (c) => c.primaryKey().notNull())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('grant_uuid', 'text', (c) => c.notNull().references('mcp_oauth_grants.uuid').onDelete('cascade'))
      .addColumn('client_id', 'text', (c) => c.notNull())
      .addColumn('redirect_uri', 'text')
      .addColumn('code_challenge', 'text')
      .addColumn('expires_at', 'text', (c) => c.notNull())
      .addColumn('ended_at', 'text')
      .execute();
    await sql`create index mcp_oauth_tokens_grant_idx on mcp_oauth_tokens (grant_uuid)`.execute(db);
    await sql`create index mcp_oauth_tokens_expires_idx on mcp_oauth_tokens (expires_at)`.execute(db);
  },
};
