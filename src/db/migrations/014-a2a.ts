import { type Kysely, sql } from 'kysely';
import type { DialectMigration } from './types.js';

/**
 * Agents served over A2A: the A2A `contextId` of each task created over A2A (other tasks use their
 * task id), the senders' `messageId`s of the conversation messages that came over A2A (history
 * gives them back), and the `messageId`s seen per agent in the last 24 hours (a repeat returns the
 * task it went to). The first two go with their task; the last is deleted by housekeeping.
 */
export const migration014: DialectMigration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('a2a_task_contexts')
      .addColumn('task_uuid', 'text', (c) => c.primaryKey().notNull().references('tasks.uuid').onDelete('cascade'))
      .addColumn('agent_uuid', 'text', (c) => c.notNull())
      .addColumn('context_id', 'text', (c) => c.notNull())
      .execute();
    await sql`create index a2a_task_contexts_context_idx on a2a_task_contexts (agent_uuid, context_id)`.execute(db);

    await db.schema
      .createTable('a2a_history_ids')
      .addColumn('task_uuid', 'text', (c) => c.notNull().references('tasks.uuid').onDelete('cascade'))
      .addColumn('position', 'integer', (c) => c.notNull())
      .addColumn('message_id', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('a2a_history_ids_pk', ['task_uuid', 'position'])
      .execute();

    await db.schema
      .createTable('a2a_message_ids')
      .addColumn('agent_uuid', 'text', (c) => c.notNull().references('agents.uuid').onDelete('cascade'))
      .addColumn('message_id', 'text', (c) => c.notNull())
      .addColumn('task_uuid', 'text', (c) => c.notNull().references('tasks.uuid').onDelete('cascade'))
      .addColumn('expires_at', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('a2a_message_ids_pk', ['agent_uuid', 'message_id'])
      .execute();
    await sql`create index a2a_message_ids_expiry_idx on a2a_message_ids (expires_at)`.execute(db);
  },
};
