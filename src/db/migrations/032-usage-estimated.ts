import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../connect.js';
import { columnTypes, type DialectMigration } from './types.js';

/**
 * Whether a model call record's token counts are the proxy's estimate: true for a call whose
 * upstream answered 2xx without a usage object (a stream closed or broken before its usage chunk,
 * an answer without usage). Older records read false: their counts were the upstream's or null.
 */
export const migration032: DialectMigration = {
  async up(db: Kysely<unknown>, dialect: Dialect) {
    const t = columnTypes(dialect);
    await db.schema
      .alterTable('spotlight_calls')
      .addColumn('usage_estimated', t.bool, (c) => c.notNull().defaultTo(dialect === 'postgres' ? sql`false` : sql`0`))
      .execute();
  },
};
