import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../connect.js';
import { columnTypes, type DialectMigration } from './types.js';

/** The outbox of task callbacks: one row per announced change, written with the change itself. */
export const migration004: DialectMigration = {
  async up(db: Kysely<unknown>, dialect: Dialect) {
    const t = columnTypes(dialect);
    await db.schema
      .createTable('callbacks')
      .addColumn('uuid', 'text', (c) => c.primaryKey().notNull())
      .addColumn('task_uuid', 'text', (c) => c.notNull().references('tasks.uuid').onDelete('cascade'))
      .addColumn('user_uuid', 'text', (c) => c.notNull())
      .addColumn('url', 'text', (c) => c.notNull())
      .addColumn('event_type', 'text', (c) => c.notNull())
      .addColumn('payload', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('attempts', t.json, (c) => c.notNull())
      .addColumn('next_attempt_at', 'text')
      .addColumn('lease_until', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await sql`create index callbacks_due_idx on callbacks (next_attempt_at) where status = 'pending'`.execute(db);
    await sql`create index callbacks_task_idx on callbacks (task_uuid, created_at, uuid)`.execute(db);
  },
};
