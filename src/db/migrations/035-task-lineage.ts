import { type Kysely, sql } from 'kysely';
import type { DialectMigration } from './types.js';

/**
 * A task's lineage (docs/api.md §5.1): `rerun_of`, the task a rerun was made from, and
 * `parent_task_id`, the parent of a child task. Both are null for every task until set, and
 * neither references `tasks` (a source task may be removed by housekeeping long before its
 * reruns). Child tasks are not built yet: the column and its partial index come now, while the
 * index is empty, so that feature needs no further migration on the busiest table.
 */
export const migration035: DialectMigration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('tasks').addColumn('rerun_of', 'text').execute();
    await db.schema.alterTable('tasks').addColumn('parent_task_id', 'text').execute();
    // A parent's children, oldest first; only tasks that have a parent are in it.
    await sql`create index tasks_parent_idx on tasks (parent_task_id, created_at, uuid)
      where parent_task_id is not null`.execute(db);
  },
};
