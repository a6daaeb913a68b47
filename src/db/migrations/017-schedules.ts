import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../connect.js';
import { columnTypes, type DialectMigration } from './types.js';

/** Cron schedules of agents and the log of their decided occurrences (docs/schedules.md). */
export const migration017: DialectMigration = {
  async up(db: Kysely<unknown>, dialect: Dialect) {
    const t = columnTypes(dialect);
    await db.schema
      .createTable('schedules')
      .addColumn('uuid', 'text', (c) => c.primaryKey().notNull())
      .addColumn('agent_uuid', 'text', (c) => c.notNull().references('agents.uuid').onDelete('cascade'))
      .addColumn('workspace_uuid', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('cron', 'text', (c) => c.notNull())
      .addColumn('timezone', 'text', (c) => c.notNull())
      .addColumn('message', 'text', (c) => c.notNull())
      .addColumn('metadata', t.json, (c) => c.notNull())
      .addColumn('priority', 'integer', (c) => c.notNull())
      .addColumn('concurrency_key', 'text')
      .addColumn('enabled', t.bool, (c) => c.notNull())
      .addColumn('overlap', 'text', (c) => c.notNull())
      .addColumn('catch_up_seconds', 'integer', (c) => c.notNull())
      .addColumn('next_run_at', 'text')
      .addColumn('last_task_uuid', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await sql`create index schedules_agent_idx on schedules (agent_uuid, created_at desc, uuid desc)`.execute(db);
    // The scheduler's one query: what is due.
    await sql`create index schedules_due_idx on schedules (next_run_at) where next_run_at is not null`.execute(db);

    await db.schema
      .createTable('schedule_runs')
      .addColumn('run_id', 'text', (c) => c.primaryKey().notNull())
      .addColumn('schedule_uuid', 'text', (c) => c.notNull().references('schedules.uuid').onDelete('cascade'))
      .addColumn('scheduled_for', 'text', (c) => c.notNull())
      .addColumn('fired_at', 'text', (c) => c.notNull())
      .addColumn('manual', t.bool, (c) => c.notNull())
      .addColumn('occurrence_key', 'text')
      .addColumn('task_uuid', 'text')
      .addColumn('skipped_reason', 'text')
      .execute();
    await sql`create index schedule_runs_schedule_idx on schedule_runs (schedule_uuid, fired_at desc, run_id desc)`.execute(
      db,
    );
    // One decision per schedule and occurrence, whatever else goes wrong.
    await sql`create unique index schedule_runs_occurrence_idx on schedule_runs (schedule_uuid, occurrence_key)`.execute(
      db,
    );
  },
};
