import type { Kysely } from 'kysely';
import type { DialectMigration } from './types.js';

/**
 * Budgets of the model proxy (docs/model-proxy.md): the limits a workspace sets, the spend of each
 * scope and window kept as a running total (so checking a call reads one row per scope, never the
 * month's records), and the platform key that authenticated each call.
 */
export const migration021: DialectMigration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('spotlight_calls').addColumn('platform_key_uuid', 'text').execute();

    // One row per scope that has (or had) a limit; `scope_id` is the workspace's uuid for `account`.
    await db.schema
      .createTable('spotlight_budgets')
      .addColumn('workspace_uuid', 'text', (c) => c.notNull())
      .addColumn('scope', 'text', (c) => c.notNull())
      .addColumn('scope_id', 'text', (c) => c.notNull())
      // Limits in billionths of a US dollar; null is no limit.
      .addColumn('monthly_nanos', 'bigint')
      .addColumn('daily_nanos', 'bigint')
      .addColumn('per_task_nanos', 'bigint')
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('spotlight_budgets_pk', ['workspace_uuid', 'scope', 'scope_id'])
      .execute();

    // Spend per (scope, window): incremented in the transaction that writes each call record.
    // `window_start` is the ISO start of the month or day; '' for a task (its whole life).
    await db.schema
      .createTable('spotlight_spend')
      .addColumn('workspace_uuid', 'text', (c) => c.notNull())
      .addColumn('scope', 'text', (c) => c.notNull())
      .addColumn('scope_id', 'text', (c) => c.notNull())
      .addColumn('window_start', 'text', (c) => c.notNull())
      .addColumn('nanos', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('spotlight_spend_pk', ['workspace_uuid', 'scope', 'scope_id', 'window_start'])
      .execute();
  },
};
