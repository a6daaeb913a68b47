import type { Generated } from 'kysely';
import type { ScheduleRunsTable, SchedulesTable } from './schedule-tables.js';
import type { AuditLogTable, InvitationsTable, WorkspaceMembersTable, WorkspacesTable } from './workspace-tables.js';

/**
 * Table types shared by both dialects. Portable choices: ids made by the app, timestamps as
 * ISO 8601 text, booleans written as 1/0 (integer on SQLite, boolean on PostgreSQL: read them
 * with `Boolean(x)`), JSON as text on SQLite and jsonb on PostgreSQL (see json.ts).
 */
export type DbBool = number | boolean;
/**
 * A JSON column as the driver returns it: text from SQLite, already parsed from PostgreSQL's jsonb.
 * Unknown until `fromDbJson` reads it; written as text (`toDbJson`).
 */
export type DbJson = unknown;

export interface UsersTable {
  uuid: string;
  email: string;
  password_hash: string;
  email_verified: DbBool;
  agents_enabled: DbBool;
  token_version: number;
  created_at: string;
  updated_at: string;
  /** Set while the account is disabled (`taskhook user disable`). */
  disabled_at: string | null;
}

export interface EmailVerificationsTable {
  token_hash: string;
  user_uuid: string;
  expires_at: string;
  created_at: string;
}

export interface PlatformKeysTable {
  uuid: string;
  /** The workspace that owns the row (a personal workspace has its user's uuid). */
  workspace_uuid: string;
  name: string;
  key_hash: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  /** The user who made it; its role bounds the key's (null never, once migrated). */
  created_by: string | null;
  /** `admin`, `member` or `viewer`. */
  role: Generated<string>;
}

export interface IngestTokensTable {
  uuid: string;
  /** The workspace that owns the row (a personal workspace has its user's uuid). */
  workspace_uuid: string;
  token_hash: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  /** The user who made it. */
  created_by: string | null;
}

export interface SigningSecretsTable {
  uuid: string;
  /** The workspace that owns the row (a personal workspace has its user's uuid). */
  workspace_uuid: string;
  secret_sealed: string;
  created_at: string;
  expires_at: string | null;
}

export interface AgentsTable {
  uuid: string;
  /** The workspace that owns the row (a personal workspace has its user's uuid). */
  workspace_uuid: string;
  name: string;
  description: string | null;
  status: string;
  runtime: DbJson;
  concurrency: number;
  default_timeout_seconds: number;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
  /** At most this many tasks of one concurrency key held at once; null: no per-key cap. */
  concurrency_per_key: number | null;
}

export interface SettingsTable {
  key: string;
  value: string;
}

export interface RateLimitsTable {
  scope: string;
  window_start: number;
  count: Generated<number>;
}

export interface TasksTable {
  uuid: string;
  agent_uuid: string;
  /** The workspace that owns the row (a personal workspace has its user's uuid). */
  workspace_uuid: string;
  status: string;
  ready: DbBool;
  priority: number;
  message: string;
  messages: DbJson;
  metadata: DbJson;
  callback_mode: string;
  webhook_url: string | null;
  timeout_seconds: number;
  attempt: number;
  lease_id: string | null;
  lease_seconds: number | null;
  lease_expires_at: string | null;
  worker_id: string | null;
  progress: DbJson | null;
  input_request: DbJson | null;
  result: DbJson | null;
  error: DbJson | null;
  estimated_start: string;
  created_at: string;
  updated_at: string;
  started_at: string | null;
  timeout_at: string | null;
  completed_at: string | null;
  failed_at: string | null;
  cancelled_at: string | null;
  seq: number;
  trace_id: string | null;
  trace_parent_span_id: string | null;
  claimed_at: string | null;
  concurrency_key: string | null;
}

/** When each group of an agent's tasks (by concurrency key; '' keyless) was last handed a task. */
export interface ConcurrencyGroupsTable {
  agent_uuid: string;
  group_key: string;
  /** Orders the groups' last hand-outs (higher: more recent); null: never served. */
  served_seq: number | null;
}

export interface TaskEventsTable {
  task_uuid: string;
  seq: number;
  data: DbJson;
  created_at: string;
}

export interface IdempotencyKeysTable {
  /** The workspace that owns the row (a personal workspace has its user's uuid). */
  workspace_uuid: string;
  key: string;
  request_hash: string;
  task_uuid: string;
  response: DbJson;
  created_at: string;
  expires_at: string;
}

export interface A2aTaskContextsTable {
  task_uuid: string;
  agent_uuid: string;
  context_id: string;
}

export interface A2aHistoryIdsTable {
  task_uuid: string;
  position: number;
  message_id: string;
}

export interface A2aMessageIdsTable {
  agent_uuid: string;
  message_id: string;
  task_uuid: string;
  expires_at: string;
}

export interface McpTasksTable {
  task_uuid: string;
  workspace_uuid: string;
  agent_uuid: string;
  created_at: string;
}

export interface McpDeclinedQuestionsTable {
  task_uuid: string;
  position: number;
}

export interface TriggersTable {
  uuid: string;
  agent_uuid: string;
  /** The workspace that owns the row (a personal workspace has its user's uuid). */
  workspace_uuid: string;
  name: string;
  message_template: string;
  /** Template of the concurrency key of the tasks it creates; null: none. */
  concurrency_key: string | null;
  enabled: DbBool;
  secret_sealed: string;
  previous_secret_sealed: string | null;
  previous_secret_expires_at: string | null;
  /** The signature scheme deliveries are verified with: secret, github, standard_webhooks, stripe, slack. */
  verification_type: Generated<string>;
  /** Timestamp tolerance of the timestamped schemes; null for secret and github. */
  tolerance_seconds: number | null;
  /** The owner supplied the secret (it is replaced by PATCH, never rotated). */
  secret_supplied: Generated<DbBool>;
  created_at: string;
  updated_at: string;
}

export interface TriggerDeliveriesTable {
  uuid: string;
  trigger_uuid: string;
  delivery_id: string;
  dedup_key: string | null;
  received_at: string;
  status_code: number;
  task_uuid: string | null;
  error: string | null;
  response: DbJson | null;
}

export interface CallbacksTable {
  uuid: string;
  task_uuid: string;
  /** The workspace that owns the row (a personal workspace has its user's uuid). */
  workspace_uuid: string;
  url: string;
  event_type: string;
  /** The exact JSON text that is signed and sent, identical on every attempt. */
  payload: string;
  status: string;
  attempts: DbJson;
  next_attempt_at: string | null;
  lease_until: string | null;
  created_at: string;
  updated_at: string;
}

/** What a push runtime keeps about a task between runs (deleted when the task finishes). */
export interface PushRunsTable {
  task_uuid: string;
  state: DbJson | null;
  /** The lease under which an http agent accepted the task (202); null otherwise. */
  accepted_lease_id: string | null;
  updated_at: string;
}

export interface OAuthAttemptsTable {
  state_hash: string;
  provider: string;
  redirect_uri: string;
  code_verifier: string;
  nonce: string | null;
  expires_at: string;
  created_at: string;
}

export interface OAuthIdentitiesTable {
  provider: string;
  subject: string;
  user_uuid: string;
  email: string | null;
  created_at: string;
  last_login_at: string;
}

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

export interface ProviderCredentialsTable {
  uuid: string;
  /** The workspace that owns the row (a personal workspace has its user's uuid). */
  workspace_uuid: string;
  name: string;
  provider: string;
  base_url: string;
  api_key_sealed: string;
  api_key_hint: string;
  created_at: string;
  updated_at: string;
  last_used_at: string | null;
}

/** A fallback route of the model proxy (migration 022). */
export interface SpotlightRoutesTable {
  uuid: string;
  /** The workspace that owns the row (a personal workspace has its user's uuid). */
  workspace_uuid: string;
  name: string;
  /** `[{provider_credential_uuid, model}]`, 1–8 entries, in the order they are tried. */
  targets: DbJson;
  /** Distinct values of "429", "5xx", "timeout", "connection", in that order. */
  retry_on: DbJson;
  cache_ttl_seconds: number | null;
  created_at: string;
  updated_at: string;
}

export interface SpotlightCallsTable {
  uuid: string;
  /** The workspace that owns the row (a personal workspace has its user's uuid). */
  workspace_uuid: string;
  created_at: string;
  source: string;
  model: string;
  upstream_model: string;
  response_model: string | null;
  provider_credential_uuid: string;
  stream: DbBool;
  status_code: number;
  error: DbJson | null;
  latency_ms: number;
  time_to_first_token_ms: number | null;
  /** bigint: PostgreSQL returns these as strings; read them with Number(). */
  input_tokens: number | string | null;
  output_tokens: number | string | null;
  cost_nanos: number | string | null;
  agent_uuid: string | null;
  task_uuid: string | null;
  /** The platform key that authenticated the call; null for a session and the openai runtime. */
  platform_key_uuid: string | null;
  /** The fallback route the call went through, and its name at the time; null for a plain call. */
  route_uuid: string | null;
  route_name: string | null;
  /** The upstream exchanges in order; null on records written before routes existed. */
  attempts: DbJson | null;
  cache_hit: DbBool;
}

/** A scope's spending limits in nano-dollars (null: none); `scope_id` is the workspace's uuid for `account`. */
export interface SpotlightBudgetsTable {
  workspace_uuid: string;
  /** `account`, `platform_key` or `agent`. */
  scope: string;
  scope_id: string;
  monthly_nanos: number | string | null;
  daily_nanos: number | string | null;
  per_task_nanos: number | string | null;
  updated_at: string;
}

/** Running spend of one scope in one window (bigint nanos; PostgreSQL returns a string). */
export interface SpotlightSpendTable {
  workspace_uuid: string;
  /** `account`, `platform_key`, `agent` or `task`. */
  scope: string;
  scope_id: string;
  /** ISO start of the month or day; '' for a task. */
  window_start: string;
  nanos: number | string;
}

export interface Database {
  users: UsersTable;
  email_verifications: EmailVerificationsTable;
  password_resets: EmailVerificationsTable;
  platform_keys: PlatformKeysTable;
  ingest_tokens: IngestTokensTable;
  signing_secrets: SigningSecretsTable;
  agents: AgentsTable;
  settings: SettingsTable;
  rate_limits: RateLimitsTable;
  tasks: TasksTable;
  task_events: TaskEventsTable;
  idempotency_keys: IdempotencyKeysTable;
  triggers: TriggersTable;
  trigger_deliveries: TriggerDeliveriesTable;
  callbacks: CallbacksTable;
  push_runs: PushRunsTable;
  oauth_attempts: OAuthAttemptsTable;
  oauth_identities: OAuthIdentitiesTable;
  telemetry_spans: TelemetrySpansTable;
  telemetry_logs: TelemetryLogsTable;
  provider_credentials: ProviderCredentialsTable;
  spotlight_calls: SpotlightCallsTable;
  spotlight_budgets: SpotlightBudgetsTable;
  spotlight_spend: SpotlightSpendTable;
  a2a_task_contexts: A2aTaskContextsTable;
  a2a_history_ids: A2aHistoryIdsTable;
  a2a_message_ids: A2aMessageIdsTable;
  mcp_tasks: McpTasksTable;
  spotlight_routes: SpotlightRoutesTable;
  mcp_declined_questions: McpDeclinedQuestionsTable;
  workspaces: WorkspacesTable;
  workspace_members: WorkspaceMembersTable;
  invitations: InvitationsTable;
  audit_log: AuditLogTable;
  schedules: SchedulesTable;
  schedule_runs: ScheduleRunsTable;
  concurrency_groups: ConcurrencyGroupsTable;
}
