import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../connect.js';
import { columnTypes, type DialectMigration } from './types.js';

/**
 * Retry policies and delayed start (docs/api.md §5.1 and §6.4): an agent's `retry` (null: the
 * default policy), and on every task the policy it was created with (`max_attempts`, `backoff`,
 * null: the default backoff), the error of its last failed attempt, and `available_at`, the
 * instant before which no claim may hand it out. The claim indexes gain `available_at` as their
 * last column, so a claim skips tasks that are not yet available inside the index, without
 * reading their rows.
 */
export const migration034: DialectMigration = {
  async up(db: Kysely<unknown>, dialect: Dialect) {
    const t = columnTypes(dialect);
    await db.schema.alterTable('agents').addColumn('retry', t.json).execute();
    await db.schema
      .alterTable('tasks')
      .addColumn('max_attempts', 'integer', (c) => c.notNull().defaultTo(3))
      .execute();
    await db.schema.alterTable('tasks').addColumn('backoff', t.json).execute();
    await db.schema.alterTable('tasks').addColumn('last_error', t.json).execute();
    // A constant default (no table rewrite on PostgreSQL): an older task is available at once.
    await db.schema
      .alterTable('tasks')
      .addColumn('available_at', 'text', (c) => c.notNull().defaultTo('1970-01-01T00:00:00.000Z'))
      .execute();
    // Tasks waiting for a worker now: a push runtime's retry kept its earliest start in estimated_start.
    await sql`update tasks set available_at = case when attempt > 1 then estimated_start else created_at end
      where ready = true`.execute(db);
    await sql`drop index tasks_claim_idx`.execute(db);
    await sql`create index tasks_claim_idx on tasks (agent_uuid, priority desc, created_at, uuid, available_at)
      where ready = true`.execute(db);
    await sql`drop index tasks_keyed_ready_idx`.execute(db);
    await sql`create index tasks_keyed_ready_idx on tasks
      (agent_uuid, concurrency_key, priority desc, created_at, uuid, available_at)
      where ready = true and concurrency_key is not null`.execute(db);
  },
};
