import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../connect.js';
import { columnTypes, type DialectMigration } from './types.js';

/**
 * What a model call record learns from fallback routes and the response cache: the route it went
 * through (uuid, and its name as at the call), every upstream exchange it made, and whether the
 * cache answered it. Older records keep `attempts` null; they are read back as the one exchange
 * the record itself describes (docs/model-proxy.md).
 */
export const migration023: DialectMigration = {
  async up(db: Kysely<unknown>, dialect: Dialect) {
    const t = columnTypes(dialect);
    await db.schema.alterTable('spotlight_calls').addColumn('route_uuid', 'text').execute();
    await db.schema.alterTable('spotlight_calls').addColumn('route_name', 'text').execute();
    await db.schema.alterTable('spotlight_calls').addColumn('attempts', t.json).execute();
    await db.schema
      .alterTable('spotlight_calls')
      .addColumn('cache_hit', t.bool, (c) => c.notNull().defaultTo(dialect === 'postgres' ? sql`false` : sql`0`))
      .execute();
    // GET /spotlight/calls?route_uuid=… lists newest first within one workspace.
    await sql`create index spotlight_calls_route_idx on spotlight_calls (workspace_uuid, route_uuid, created_at)`.execute(
      db,
    );
  },
};
