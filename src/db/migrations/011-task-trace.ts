import type { Kysely } from 'kysely';
import type { DialectMigration } from './types.js';

/**
 * Where a task's trace hangs: the caller's trace and span (from a submit's `traceparent`, or the
 * webhook delivery that created it), null for a task that starts its own trace; and when its
 * current run was claimed, the start of that run's span.
 */
export const migration011: DialectMigration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('tasks').addColumn('trace_id', 'text').execute();
    await db.schema.alterTable('tasks').addColumn('trace_parent_span_id', 'text').execute();
    await db.schema.alterTable('tasks').addColumn('claimed_at', 'text').execute();
  },
};
