/** The shapes of the public API the dashboard reads (see /openapi.json). */

export type TaskStatus = 'queued' | 'running' | 'awaiting_input' | 'completed' | 'failed' | 'cancelled';
export const TASK_STATUSES: TaskStatus[] = ['queued', 'running', 'awaiting_input', 'completed', 'failed', 'cancelled'];
export const FINAL: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled']);

export interface Page {
  page: number;
  limit: number;
  total: number;
  total_pages: number;
}

export interface Agent {
  uuid: string;
  name: string;
  description: string | null;
  status: 'active' | 'paused' | 'stopped' | 'error';
  runtime: { type: string } & Record<string, unknown>;
  concurrency: number;
  default_timeout_seconds: number;
  created_at: string;
  updated_at: string;
}

export interface AgentInput {
  name: string;
  description?: string;
  concurrency?: number;
  default_timeout_seconds?: number;
}

export interface Finding {
  file: string;
  line: number;
  severity: string;
  message: string;
}

export interface Task {
  task_id: string;
  status: TaskStatus;
  created_at: string;
  agent_uuid: string;
  message: string;
  messages: { role: 'user' | 'agent'; content: string; created_at: string }[];
  priority: number;
  metadata: Record<string, unknown> | null;
  estimated_start?: string;
  started_at?: string;
  progress?: { current_step: string; steps_completed: number; total_steps: number };
  input_request?: { message: string; requested_at: string };
  completed_at?: string;
  result?: { summary?: string; findings?: Finding[] } & Record<string, unknown>;
  failed_at?: string;
  error?: { code: string; message: string };
  cancelled_at?: string;
  /** The task this one reruns (absent from servers older than reruns). */
  rerun_of?: string | null;
}

/** How a trigger's deliveries prove they come from the sender (never with its secret). */
export type VerificationType = 'secret' | 'github' | 'standard_webhooks' | 'stripe' | 'slack';

export interface Trigger {
  uuid: string;
  agent_uuid: string;
  name: string;
  message_template: string;
  enabled: boolean;
  /** Absent from servers older than signature schemes. */
  verification?: { type: VerificationType; tolerance_seconds?: number };
  webhook_url: string;
  webhook_secret?: string;
  created_at: string;
  updated_at: string;
}

/** A schedule: one task on its agent at each occurrence of a cron pattern in a time zone. */
export interface Schedule {
  uuid: string;
  agent_uuid: string;
  name: string;
  cron: string;
  timezone: string;
  message: string;
  metadata: Record<string, unknown>;
  priority: number;
  enabled: boolean;
  overlap: string;
  catch_up_seconds: number;
  next_run_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface ScheduleInput {
  name: string;
  cron: string;
  timezone?: string;
  message: string;
  metadata?: Record<string, unknown>;
}

/** One occurrence of a schedule: the task it created, or why it was skipped. */
export interface ScheduleRun {
  run_id: string;
  scheduled_for: string;
  fired_at: string;
  manual: boolean;
  task_id: string | null;
  skipped_reason: 'overlap' | 'agent_unavailable' | 'missed' | null;
}

export interface Occurrence {
  scheduled_for: string;
  local: string;
}

export interface TriggerDelivery {
  delivery_id: string;
  received_at: string;
  status_code: number;
  task_id: string | null;
  error: string | null;
}

export interface CallbackDelivery {
  delivery_id: string;
  event_type: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: { at: string; status_code: number | null; duration_ms: number; error: string | null }[];
  next_attempt_at: string | null;
}

export interface PlatformKey {
  uuid: string;
  name: string;
  prefix: string;
  /** With workspaces: the most the key may do (it never exceeds its creator's role). */
  role?: Role;
  created_by?: { uuid: string; email: string } | null;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  /** The models the key may call through the model proxy; null: all models. */
  models?: string[] | null;
}

export interface IngestToken {
  uuid: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export interface ProviderCredential {
  uuid: string;
  name: string;
  provider: string;
  base_url: string;
  api_key_hint: string;
  created_at: string;
  updated_at: string;
  last_used_at: string | null;
}

export interface TraceSummary {
  trace_id: string;
  root_span_id: string | null;
  name: string | null;
  service_name: string | null;
  start_time: string;
  end_time: string;
  duration_ms: number;
  span_count: number;
  error_count: number;
  status: 'ok' | 'error';
  agent_id: string | null;
  agent_name: string | null;
  task_id: string | null;
  input_tokens: number;
  output_tokens: number;
}

export interface Span {
  trace_id: string;
  span_id: string;
  parent_span_id: string | null;
  name: string;
  kind: string;
  start_time: string;
  end_time: string;
  start_time_unix_nano: string;
  duration_ms: number;
  status_code: 'unset' | 'ok' | 'error';
  status_message: string | null;
  service_name: string | null;
  request_model: string | null;
  response_model: string | null;
  input_tokens: number | null;
  output_tokens: number | null;
  attributes: Record<string, unknown>;
}

export interface UsageGroup {
  day?: string | null;
  model?: string | null;
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  span_count: number;
}

export type Role = 'viewer' | 'member' | 'admin' | 'owner';
export const ROLES: Role[] = ['viewer', 'member', 'admin', 'owner'];

export interface Workspace {
  uuid: string;
  name: string;
  personal: boolean;
  /** The caller's role in it. */
  role: Role;
  created_at: string;
  updated_at: string;
}

export interface Member {
  user_uuid: string;
  email: string;
  role: Role;
  joined_at: string;
}

export interface Invitation {
  uuid: string;
  email: string;
  role: Role;
  invited_by: { uuid: string; email: string } | null;
  created_at: string;
  expires_at: string;
}

export interface AuditEntry {
  id: string;
  at: string;
  actor: { type: 'user'; uuid: string; email: string } | { type: 'key'; uuid: string; name: string };
  action: string;
  target: { type: string; uuid: string };
  details: Record<string, unknown>;
  ip: string | null;
  request_id: string | null;
  client_request_id: string | null;
}

export * from './types-spotlight';

/** A client as the MCP authorization server shows it. */
export interface McpClient {
  client_id: string;
  client_name: string | null;
  client_uri: string | null;
  logo_uri?: string | null;
  registration: 'metadata_document' | 'dynamic';
}

/** A pending authorization request of an MCP client, waiting for the user's consent. */
export interface AuthorizationRequest {
  request_id: string;
  client: McpClient;
  redirect_uri: string;
  scope: string;
  resource: string;
  expires_at: string;
}

/** A user's consent for an MCP client in one workspace with one role. */
export interface McpGrant {
  uuid: string;
  client: McpClient;
  workspace: { uuid: string; name: string | null };
  role: 'viewer' | 'member';
  scope: string;
  resource: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}
