import type { Kysely } from 'kysely';
import type { Dialect } from '../connect.js';
import { columnTypes, type DialectMigration } from './types.js';

/**
 * What a push runtime keeps about a task between runs (e.g. a remote A2A task's id), and the
 * lease under which an http agent accepted the task (202): a cancel of that lease tells the agent.
 * One row per task at most; it goes with the task (cascade) and is deleted when the task finishes.
 */
export const migration012: DialectMigration = {
  async up(db: Kysely<unknown>, dialect: Dialect) {
    const t = columnTypes(dialect);
    await db.schema
      .createTable('push_runs')
      .addColumn('task_uuid', 'text', (c) => c.primaryKey().notNull().references('tasks.uuid').onDelete('cascade'))
      .addColumn('state', t.json)
      .addColumn('accepted_lease_id', 'text')
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
  },
};
