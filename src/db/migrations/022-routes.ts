import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../connect.js';
import { columnTypes, type DialectMigration } from './types.js';

/**
 * Fallback routes of the model proxy: a workspace's named, ordered lists of targets. Targets are
 * kept as one JSON array (at most 8, always read and replaced whole); the credentials they name
 * are checked by the service, which refuses to delete a credential a route still names.
 */
export const migration022: DialectMigration = {
  async up(db: Kysely<unknown>, dialect: Dialect) {
    const t = columnTypes(dialect);
    await db.schema
      .createTable('spotlight_routes')
      .addColumn('uuid', 'text', (c) => c.primaryKey().notNull())
      .addColumn('workspace_uuid', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('targets', t.json, (c) => c.notNull())
      .addColumn('retry_on', t.json, (c) => c.notNull())
      .addColumn('cache_ttl_seconds', 'integer')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .addUniqueConstraint('spotlight_routes_name_key', ['workspace_uuid', 'name'])
      .execute();
    await sql`create index spotlight_routes_list_idx on spotlight_routes (workspace_uuid, created_at, uuid)`.execute(
      db,
    );
  },
};
