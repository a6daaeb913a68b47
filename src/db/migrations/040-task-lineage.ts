import { type Kysely, sql } from 'kysely';
import type { DialectMigration } from './types.js';

/**
 * A task's lineage (docs/api.md §5.1): `rerun_of`, the task a rerun was made from, and
 * `parent_task_id`, the parent of a child task. Both are null for every task until set, and
 * neither references `tasks` (a source task may be removed by housekeeping long before its
 * reruns). Each has a partial index holding only the tasks that set it. Child tasks are not
 * built yet: their column and index come now, while the index is empty, so that feature needs no
 * further migration on the busiest table.
 */
export const migration040: DialectMigration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('tasks').addColumn('rerun_of', 'text').execute();
    await db.schema.alterTable('tasks').addColumn('parent_task_id', 'text').execute();
    // A task's reruns (a bulk rerun counts them under the source's lock); only reruns are in it.
    await sql`create index tasks_rerun_idx on tasks (rerun_of) where rerun_of is not null`.execute(db);
    // A parent's children, oldest first; only tasks that have a parent are in it.
    await sql`create index tasks_parent_idx on tasks (parent_task_id, created_at, uuid)
      where parent_task_id is not null`.execute(db);
  },
};
