import type { Kysely } from 'kysely';
import type { Dialect } from '../connect.js';
import { columnTypes, type DialectMigration } from './types.js';

/**
 * Model allowlists on platform keys (`models`, a JSON array of patterns; null allows every model)
 * and the requests-per-minute and tokens-per-minute limits of the model proxy, one row per key or
 * agent that has (or had) a limit. The counters themselves live with the request rate limit's
 * (`rate_limits`, Redis or memory), never here.
 */
export const migration039: DialectMigration = {
  async up(db: Kysely<unknown>, dialect: Dialect) {
    const t = columnTypes(dialect);
    await db.schema.alterTable('platform_keys').addColumn('models', t.json).execute();
    await db.schema
      .createTable('spotlight_rate_limits')
      .addColumn('workspace_uuid', 'text', (c) => c.notNull())
      .addColumn('scope', 'text', (c) => c.notNull())
      .addColumn('scope_id', 'text', (c) => c.notNull())
      .addColumn('rpm', 'integer')
      .addColumn('tpm', 'bigint')
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('spotlight_rate_limits_pk', ['workspace_uuid', 'scope', 'scope_id'])
      .execute();
  },
};
