import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../connect.js';
import { columnTypes, type DialectMigration } from './types.js';

/** Tasks (the rows are the queue, each with its conversation), their event log, and idempotency keys. */
export const migration002: DialectMigration = {
  async up(db: Kysely<unknown>, dialect: Dialect) {
    const t = columnTypes(dialect);

    await db.schema
      .createTable('tasks')
      .addColumn('uuid', 'text', (c) => c.primaryKey().notNull())
      .addColumn('agent_uuid', 'text', (c) => c.notNull().references('agents.uuid').onDelete('cascade'))
      .addColumn('user_uuid', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('ready', t.bool, (c) => c.notNull())
      .addColumn('priority', 'integer', (c) => c.notNull())
      .addColumn('message', 'text', (c) => c.notNull())
      // The conversation, oldest first: read with the task in one row, appended by rewriting.
      .addColumn('messages', t.json, (c) => c.notNull())
      .addColumn('metadata', t.json, (c) => c.notNull())
      .addColumn('callback_mode', 'text', (c) => c.notNull())
      .addColumn('webhook_url', 'text')
      .addColumn('timeout_seconds', 'integer', (c) => c.notNull())
      .addColumn('attempt', 'integer', (c) => c.notNull())
      .addColumn('lease_id', 'text')
      .addColumn('lease_seconds', 'integer')
      .addColumn('lease_expires_at', 'text')
      .addColumn('worker_id', 'text')
      .addColumn('progress', t.json)
      .addColumn('input_request', t.json)
      .addColumn('result', t.json)
      .addColumn('error', t.json)
      .addColumn('estimated_start', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .addColumn('started_at', 'text')
      .addColumn('timeout_at', 'text')
      .addColumn('completed_at', 'text')
      .addColumn('failed_at', 'text')
      .addColumn('cancelled_at', 'text')
      .addColumn('seq', 'integer', (c) => c.notNull())
      .execute();
    // Partial indexes: a row is in an index only while the index can need it, so a new task
    // touches four b-trees and finished tasks cost the claim and sweep queries nothing.
    // Claim order: ready work of one agent, most urgent first, then oldest.
    await sql`create index tasks_claim_idx on tasks (agent_uuid, priority desc, created_at, uuid) where ready = true`.execute(
      db,
    );
    await sql`create index tasks_list_idx on tasks (agent_uuid, created_at desc, uuid desc)`.execute(db);
    await sql`create index tasks_status_idx on tasks (agent_uuid, status, created_at desc, uuid desc)`.execute(db);
    await sql`create index tasks_held_idx on tasks (agent_uuid, lease_expires_at) where lease_expires_at is not null`.execute(
      db,
    );
    await sql`create index tasks_lease_idx on tasks (lease_expires_at) where lease_expires_at is not null`.execute(db);
    await sql`create index tasks_timeout_idx on tasks (timeout_at) where status = 'running'`.execute(db);
    await sql`create index tasks_done_idx on tasks (agent_uuid, completed_at) where completed_at is not null`.execute(
      db,
    );

    await db.schema
      .createTable('task_events')
      .addColumn('task_uuid', 'text', (c) => c.notNull().references('tasks.uuid').onDelete('cascade'))
      .addColumn('seq', 'integer', (c) => c.notNull())
      .addColumn('data', t.json, (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('task_events_pk', ['task_uuid', 'seq'])
      .execute();

    await db.schema
      .createTable('idempotency_keys')
      .addColumn('user_uuid', 'text', (c) => c.notNull())
      .addColumn('key', 'text', (c) => c.notNull())
      .addColumn('request_hash', 'text', (c) => c.notNull())
      .addColumn('task_uuid', 'text', (c) => c.notNull())
      .addColumn('response', t.json, (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('idempotency_keys_pk', ['user_uuid', 'key'])
      .execute();
    await sql`create index idempotency_keys_expiry_idx on idempotency_keys (expires_at)`.execute(db);
  },
};
