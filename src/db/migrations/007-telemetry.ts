import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../connect.js';
import { columnTypes, type DialectMigration } from './types.js';

/**
 * Telemetry: one row per span and per log record, per user. Times are kept three ways: the
 * decimal nanoseconds as received, a zero-padded key that sorts as text in numeric order, and
 * ISO text (milliseconds) for date filters and retention.
 */
export const migration007: DialectMigration = {
  async up(db: Kysely<unknown>, dialect: Dialect) {
    const t = columnTypes(dialect);

    await db.schema
      .createTable('telemetry_spans')
      .addColumn('user_uuid', 'text', (c) => c.notNull())
      .addColumn('trace_id', 'text', (c) => c.notNull())
      .addColumn('span_id', 'text', (c) => c.notNull())
      .addColumn('parent_span_id', 'text')
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('start_time_unix_nano', 'text', (c) => c.notNull())
      .addColumn('end_time_unix_nano', 'text', (c) => c.notNull())
      .addColumn('start_key', 'text', (c) => c.notNull())
      .addColumn('end_key', 'text', (c) => c.notNull())
      .addColumn('start_time', 'text', (c) => c.notNull())
      .addColumn('end_time', 'text', (c) => c.notNull())
      .addColumn('status_code', 'text', (c) => c.notNull())
      .addColumn('status_message', 'text')
      .addColumn('service_name', 'text')
      .addColumn('scope_name', 'text')
      .addColumn('scope_version', 'text')
      .addColumn('attributes', t.json, (c) => c.notNull())
      .addColumn('resource_attributes', t.json, (c) => c.notNull())
      .addColumn('events', t.json, (c) => c.notNull())
      .addColumn('operation_name', 'text')
      .addColumn('provider_name', 'text')
      .addColumn('request_model', 'text')
      .addColumn('response_model', 'text')
      .addColumn('input_tokens', 'bigint')
      .addColumn('output_tokens', 'bigint')
      .addColumn('agent_id', 'text')
      .addColumn('agent_name', 'text')
      .addColumn('conversation_id', 'text')
      .addColumn('task_id', 'text')
      // 'ingest' or 'service': the service's own spans are never replaced through ingest.
      .addColumn('origin', 'text', (c) => c.notNull())
      .addColumn('received_at', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('telemetry_spans_pk', ['user_uuid', 'trace_id', 'span_id'])
      .execute();
    await sql`create index telemetry_spans_start_idx on telemetry_spans (user_uuid, start_key desc)`.execute(db);
    await sql`create index telemetry_spans_task_idx on telemetry_spans (user_uuid, task_id) where task_id is not null`.execute(
      db,
    );
    await sql`create index telemetry_spans_agent_idx on telemetry_spans (user_uuid, agent_id) where agent_id is not null`.execute(
      db,
    );
    await sql`create index telemetry_spans_end_idx on telemetry_spans (end_time)`.execute(db);

    await db.schema
      .createTable('telemetry_logs')
      .addColumn('uuid', 'text', (c) => c.primaryKey().notNull())
      .addColumn('user_uuid', 'text', (c) => c.notNull())
      .addColumn('time_unix_nano', 'text', (c) => c.notNull())
      .addColumn('time_key', 'text', (c) => c.notNull())
      .addColumn('time', 'text', (c) => c.notNull())
      .addColumn('observed_time_unix_nano', 'text')
      .addColumn('severity_number', 'integer', (c) => c.notNull())
      .addColumn('severity_text', 'text')
      // JSON text on both databases: a body may be a bare string, which jsonb would hand back unquoted.
      .addColumn('body', 'text', (c) => c.notNull())
      .addColumn('event_name', 'text')
      .addColumn('trace_id', 'text')
      .addColumn('span_id', 'text')
      .addColumn('service_name', 'text')
      .addColumn('scope_name', 'text')
      .addColumn('attributes', t.json, (c) => c.notNull())
      .addColumn('resource_attributes', t.json, (c) => c.notNull())
      .addColumn('task_id', 'text')
      .addColumn('received_at', 'text', (c) => c.notNull())
      .execute();
    await sql`create index telemetry_logs_time_idx on telemetry_logs (user_uuid, time_key desc, uuid desc)`.execute(db);
    await sql`create index telemetry_logs_trace_idx on telemetry_logs (user_uuid, trace_id) where trace_id is not null`.execute(
      db,
    );
    await sql`create index telemetry_logs_retention_idx on telemetry_logs (time)`.execute(db);
  },
};
