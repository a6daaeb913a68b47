import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../connect.js';
import type { DialectMigration } from './types.js';

/**
 * The endpoint kind of a model call record (`chat.completions`, `responses`, `anthropic.messages`)
 * and the provider's prompt-cache token counts. Older records read `chat.completions` with both
 * cache counts null (not reported). Usage groups by the kind, so it joins the day index's columns.
 */
export const migration038: DialectMigration = {
  async up(db: Kysely<unknown>, _dialect: Dialect) {
    await db.schema
      .alterTable('spotlight_calls')
      .addColumn('api', 'text', (c) => c.notNull().defaultTo(sql`'chat.completions'`))
      .execute();
    await db.schema.alterTable('spotlight_calls').addColumn('cache_read_tokens', 'bigint').execute();
    await db.schema.alterTable('spotlight_calls').addColumn('cache_write_tokens', 'bigint').execute();
  },
};
