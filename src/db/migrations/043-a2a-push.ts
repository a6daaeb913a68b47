import { type Kysely, sql } from 'kysely';
import type { DialectMigration } from './types.js';

/**
 * A2A push notifications. `a2a_push_configs`: the push configs of a task (its own `config_id`
 * per task, `position` the order of first creation; token and credentials sealed), deleted with
 * the task. `callbacks` gains what a push delivery needs beside a callback's columns: the config
 * it goes to (`push_config_uuid`, `push_config_id`), its extra headers sealed (`secret_headers`),
 * and when its first attempt ended (`first_attempt_at`: the next notification of the config
 * waits for it). `push_ended_at` marks deliveries whose config was deleted (a retry is refused).
 */
export const migration043: DialectMigration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('a2a_push_configs')
      .addColumn('uuid', 'text', (c) => c.primaryKey().notNull())
      .addColumn('task_uuid', 'text', (c) => c.notNull().references('tasks.uuid').onDelete('cascade'))
      .addColumn('workspace_uuid', 'text', (c) => c.notNull())
      .addColumn('config_id', 'text', (c) => c.notNull())
      .addColumn('position', 'integer', (c) => c.notNull())
      .addColumn('url', 'text', (c) => c.notNull())
      .addColumn('token', 'text')
      .addColumn('auth_scheme', 'text')
      .addColumn('auth_credentials', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .execute();
    await sql`create unique index a2a_push_configs_task_idx on a2a_push_configs (task_uuid, config_id)`.execute(db);
    // Two creates racing for the same place: one fails and counts again (the limit of 10 holds).
    await sql`create unique index a2a_push_configs_position_idx on a2a_push_configs (task_uuid, position)`.execute(db);

    await db.schema.alterTable('callbacks').addColumn('push_config_uuid', 'text').execute();
    await db.schema.alterTable('callbacks').addColumn('push_config_id', 'text').execute();
    await db.schema.alterTable('callbacks').addColumn('secret_headers', 'text').execute();
    await db.schema.alterTable('callbacks').addColumn('first_attempt_at', 'text').execute();
    await db.schema.alterTable('callbacks').addColumn('push_ended_at', 'text').execute();
    await sql`create index callbacks_push_config_idx on callbacks (push_config_uuid, created_at) where push_config_uuid is not null`.execute(
      db,
    );
  },
};
