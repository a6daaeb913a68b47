import type { DbJson } from './column-types.js';

// The telemetry store: OTLP spans and log records.
// Re-exported by database.ts, which holds the `Database` interface.

export interface TelemetrySpansTable {
  /** The workspace that owns the row (a personal workspace has its user's uuid). */
  workspace_uuid: string;
  trace_id: string;
  span_id: string;
  parent_span_id: string | null;
  name: string;
  kind: string;
  start_time_unix_nano: string;
  end_time_unix_nano: string;
  start_key: string;
  end_key: string;
  start_time: string;
  end_time: string;
  status_code: string;
  status_message: string | null;
  service_name: string | null;
  scope_name: string | null;
  scope_version: string | null;
  attributes: DbJson;
  resource_attributes: DbJson;
  events: DbJson;
  operation_name: string | null;
  provider_name: string | null;
  request_model: string | null;
  response_model: string | null;
  /** bigint: PostgreSQL returns it as a string, read it with Number(). */
  input_tokens: number | string | null;
  output_tokens: number | string | null;
  agent_id: string | null;
  agent_name: string | null;
  conversation_id: string | null;
  task_id: string | null;
  origin: 'ingest' | 'service';
  received_at: string;
}

export interface TelemetryLogsTable {
  uuid: string;
  /** The workspace that owns the row (a personal workspace has its user's uuid). */
  workspace_uuid: string;
  time_unix_nano: string;
  time_key: string;
  time: string;
  observed_time_unix_nano: string | null;
  severity_number: number;
  severity_text: string | null;
  /** JSON text on both databases. */
  body: string;
  event_name: string | null;
  trace_id: string | null;
  span_id: string | null;
  service_name: string | null;
  scope_name: string | null;
  attributes: DbJson;
  resource_attributes: DbJson;
  task_id: string | null;
  received_at: string;
}
