import { type Kysely, sql } from 'kysely';
import type { DialectMigration } from './types.js';

/**
 * The MCP server: the tasks created through `/mcp` (MCP's `tasks/list` lists them, newest first)
 * and the questions a client declined (an open elicitation ends and is not asked again). Both go
 * with their task.
 */
export const migration018: DialectMigration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('mcp_tasks')
      .addColumn('task_uuid', 'text', (c) => c.primaryKey().notNull().references('tasks.uuid').onDelete('cascade'))
      .addColumn('workspace_uuid', 'text', (c) => c.notNull())
      .addColumn('agent_uuid', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute();
    await sql`create index mcp_tasks_list_idx on mcp_tasks (workspace_uuid, created_at, task_uuid)`.execute(db);

    await db.schema
      .createTable('mcp_declined_questions')
      .addColumn('task_uuid', 'text', (c) => c.notNull().references('tasks.uuid').onDelete('cascade'))
      .addColumn('position', 'integer', (c) => c.notNull())
      .addPrimaryKeyConstraint('mcp_declined_questions_pk', ['task_uuid', 'position'])
      .execute();
  },
};
