import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../connect.js';
import { columnTypes, type DialectMigration } from './types.js';

/** Every table whose rows belonged to a user and now belong to a workspace. */
export const WORKSPACE_OWNED_TABLES = [
  'platform_keys',
  'ingest_tokens',
  'signing_secrets',
  'agents',
  'tasks',
  'idempotency_keys',
  'triggers',
  'callbacks',
  'telemetry_spans',
  'telemetry_logs',
  'provider_credentials',
  'spotlight_calls',
] as const;

/** The tables among them whose owner column had a foreign key to `users` (now to `workspaces`). */
const WITH_FOREIGN_KEY = ['platform_keys', 'ingest_tokens', 'signing_secrets', 'agents', 'provider_credentials'];

/**
 * Workspaces (CONTRACT-level decisions in docs/workspaces.md): a workspace owns what a user owned.
 *
 * Every existing user gets a personal workspace whose uuid is the user's uuid, so every row that
 * named its user now names its workspace without being rewritten: the owner column is renamed
 * (`user_uuid` → `workspace_uuid`), not updated, and a table of millions of spans migrates in the
 * time of a schema change. Platform keys become `admin` keys created by that user; ingest tokens
 * likewise record their creator. Runs once (the migrator records it), in one transaction.
 */
export const migration016: DialectMigration = {
  async up(db: Kysely<unknown>, dialect: Dialect) {
    const t = columnTypes(dialect);
    await db.schema
      .createTable('workspaces')
      .addColumn('uuid', 'text', (c) => c.primaryKey().notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('personal', t.bool, (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      // Set by DELETE /workspaces/:id; its rows are then deleted in the background.
      .addColumn('deleted_at', 'text')
      .execute();
    await sql`create index workspaces_deleted_idx on workspaces (deleted_at) where deleted_at is not null`.execute(db);

    await db.schema
      .createTable('workspace_members')
      .addColumn('workspace_uuid', 'text', (c) => c.notNull().references('workspaces.uuid').onDelete('cascade'))
      .addColumn('user_uuid', 'text', (c) => c.notNull().references('users.uuid').onDelete('cascade'))
      .addColumn('role', 'text', (c) => c.notNull())
      .addColumn('joined_at', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('workspace_members_pk', ['workspace_uuid', 'user_uuid'])
      .execute();
    await sql`create index workspace_members_user_idx on workspace_members (user_uuid, joined_at)`.execute(db);
    await sql`create index workspace_members_joined_idx on workspace_members (workspace_uuid, joined_at)`.execute(db);

    await db.schema
      .createTable('invitations')
      .addColumn('uuid', 'text', (c) => c.primaryKey().notNull())
      .addColumn('workspace_uuid', 'text', (c) => c.notNull().references('workspaces.uuid').onDelete('cascade'))
      .addColumn('email', 'text', (c) => c.notNull())
      .addColumn('email_lower', 'text', (c) => c.notNull())
      .addColumn('role', 'text', (c) => c.notNull())
      .addColumn('token_hash', 'text', (c) => c.notNull().unique())
      .addColumn('invited_by', 'text', (c) => c.notNull().references('users.uuid').onDelete('cascade'))
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'text', (c) => c.notNull())
      // Set once the invitation is no longer pending: accepted, revoked or replaced.
      .addColumn('ended_at', 'text')
      .addColumn('ended_as', 'text')
      .execute();
    await sql`create index invitations_pending_idx on invitations (workspace_uuid, created_at desc) where ended_at is null`.execute(
      db,
    );
    await sql`create unique index invitations_one_pending_idx on invitations (workspace_uuid, email_lower) where ended_at is null`.execute(
      db,
    );

    await db.schema
      .createTable('audit_log')
      .addColumn('id', 'text', (c) => c.primaryKey().notNull())
      // No foreign key: a deleted workspace's log is deleted in the background with its other rows.
      .addColumn('workspace_uuid', 'text', (c) => c.notNull())
      .addColumn('at', 'text', (c) => c.notNull())
      .addColumn('actor_type', 'text', (c) => c.notNull())
      .addColumn('actor_uuid', 'text', (c) => c.notNull())
      .addColumn('actor_name', 'text', (c) => c.notNull())
      .addColumn('action', 'text', (c) => c.notNull())
      .addColumn('target_type', 'text', (c) => c.notNull())
      .addColumn('target_uuid', 'text', (c) => c.notNull())
      .addColumn('details', t.json, (c) => c.notNull())
      .addColumn('ip', 'text')
      .addColumn('request_id', 'text')
      .execute();
    await sql`create index audit_log_list_idx on audit_log (workspace_uuid, at desc, id desc)`.execute(db);
    await sql`create index audit_log_at_idx on audit_log (at)`.execute(db);

    // A personal workspace for every user, with the user's uuid, and the user as its owner.
    await sql`insert into workspaces (uuid, name, personal, created_at, updated_at, deleted_at)
      select uuid, 'Personal', ${sql.lit(dialect === 'postgres' ? true : 1)}, created_at, created_at, null from users`.execute(
      db,
    );
    await sql`insert into workspace_members (workspace_uuid, user_uuid, role, joined_at)
      select uuid, uuid, 'owner', created_at from users`.execute(db);

    for (const table of WORKSPACE_OWNED_TABLES) {
      await sql`alter table ${sql.table(table)} rename column user_uuid to workspace_uuid`.execute(db);
    }
    await repointForeignKeys(db, dialect);

    // Who made a key or token (its creator's role bounds a key's), and a key's own role.
    for (const table of ['platform_keys', 'ingest_tokens']) {
      await db.schema
        .alterTable(table)
        .addColumn('created_by', 'text', (c) => c.references('users.uuid').onDelete('cascade'))
        .execute();
      await sql`update ${sql.table(table)} set created_by = workspace_uuid`.execute(db);
      await sql`create index ${sql.raw(`${table}_creator_idx`)} on ${sql.table(table)} (workspace_uuid, created_by)`.execute(
        db,
      );
    }
    await db.schema
      .alterTable('platform_keys')
      .addColumn('role', 'text', (c) => c.notNull().defaultTo('admin'))
      .execute();
  },
};

/**
 * The owner columns that referenced `users` now reference `workspaces` (same values: a personal
 * workspace has its user's uuid). PostgreSQL swaps the constraint. SQLite cannot alter a
 * constraint; rebuilding `agents` would cascade-delete every task (foreign keys cannot be switched
 * off inside the migration's transaction), so the stored table definition is edited in place, the
 * procedure SQLite documents for changing a foreign key, which leaves the file format unchanged.
 */
async function repointForeignKeys(db: Kysely<unknown>, dialect: Dialect) {
  if (dialect === 'postgres') {
    for (const table of WITH_FOREIGN_KEY) {
      await sql`alter table ${sql.table(table)} drop constraint ${sql.raw(`${table}_user_uuid_fkey`)}`.execute(db);
      await sql`alter table ${sql.table(table)} add constraint ${sql.raw(`${table}_workspace_uuid_fkey`)}
        foreign key (workspace_uuid) references workspaces (uuid) on delete cascade`.execute(db);
    }
    return;
  }
  const { rows } = await sql<{ schema_version: number }>`pragma schema_version`.execute(db);
  const version = rows[0]?.schema_version ?? 0;
  await sql`pragma writable_schema = on`.execute(db);
  for (const table of WITH_FOREIGN_KEY) {
    const { rows: found } = await sql<{
      sql: string;
    }>`select sql from sqlite_master where type = 'table' and name = ${table}`.execute(db);
    const before = found[0]?.sql ?? '';
    const after = before.replace(/references\s+"?users"?\s*\(\s*"?uuid"?\s*\)/i, 'references "workspaces" ("uuid")');
    if (after === before) throw new Error(`the foreign key of ${table} was not found`);
    await sql`update sqlite_master set sql = ${after} where type = 'table' and name = ${table}`.execute(db);
  }
  await sql`${sql.raw(`pragma schema_version = ${version + 1}`)}`.execute(db);
  await sql`pragma writable_schema = off`.execute(db);
}
