import type { Generated } from 'kysely';
import type {
  EmailVerificationsTable,
  IngestTokensTable,
  OAuthAttemptsTable,
  OAuthIdentitiesTable,
  PlatformKeysTable,
  SigningSecretsTable,
  UsersTable,
} from './account-tables.js';
import type {
  A2aHistoryIdsTable,
  A2aMessageIdsTable,
  A2aPushConfigsTable,
  A2aTaskContextsTable,
  McpDeclinedQuestionsTable,
  McpOAuthClientsTable,
  McpOAuthGrantsTable,
  McpOAuthRequestsTable,
  McpOAuthTokensTable,
  McpTasksTable,
} from './protocol-tables.js';
import type { ScheduleRunsTable, SchedulesTable } from './schedule-tables.js';
import type {
  ProviderCredentialsTable,
  SpotlightBudgetsTable,
  SpotlightCallsTable,
  SpotlightRateLimitsTable,
  SpotlightRoutesTable,
  SpotlightSpendTable,
} from './spotlight-tables.js';
import type {
  AgentEventSeqsTable,
  AgentsTable,
  CallbacksTable,
  ConcurrencyGroupsTable,
  IdempotencyKeysTable,
  PushRunsTable,
  TaskEventsTable,
  TasksTable,
} from './task-tables.js';
import type { TelemetryLogsTable, TelemetrySpansTable } from './telemetry-tables.js';
import type { TriggerDeliveriesTable, TriggerSignaturesTable, TriggersTable } from './trigger-tables.js';
import type { AuditLogTable, InvitationsTable, WorkspaceMembersTable, WorkspacesTable } from './workspace-tables.js';

// The tables of each room live beside this file; these re-exports keep `database.js` the one import.
export type * from './account-tables.js';
export type * from './protocol-tables.js';
export type * from './spotlight-tables.js';
export type * from './task-tables.js';
export type * from './telemetry-tables.js';
export type * from './trigger-tables.js';

export interface SettingsTable {
  key: string;
  value: string;
}

export interface RateLimitsTable {
  scope: string;
  window_start: number;
  count: Generated<number>;
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
  trigger_signatures: TriggerSignaturesTable;
  callbacks: CallbacksTable;
  push_runs: PushRunsTable;
  oauth_attempts: OAuthAttemptsTable;
  oauth_identities: OAuthIdentitiesTable;
  telemetry_spans: TelemetrySpansTable;
  telemetry_logs: TelemetryLogsTable;
  provider_credentials: ProviderCredentialsTable;
  spotlight_calls: SpotlightCallsTable;
  spotlight_budgets: SpotlightBudgetsTable;
  spotlight_rate_limits: SpotlightRateLimitsTable;
  spotlight_spend: SpotlightSpendTable;
  a2a_task_contexts: A2aTaskContextsTable;
  a2a_history_ids: A2aHistoryIdsTable;
  a2a_message_ids: A2aMessageIdsTable;
  a2a_push_configs: A2aPushConfigsTable;
  mcp_tasks: McpTasksTable;
  spotlight_routes: SpotlightRoutesTable;
  mcp_declined_questions: McpDeclinedQuestionsTable;
  mcp_oauth_clients: McpOAuthClientsTable;
  mcp_oauth_requests: McpOAuthRequestsTable;
  mcp_oauth_grants: McpOAuthGrantsTable;
  mcp_oauth_tokens: McpOAuthTokensTable;
  workspaces: WorkspacesTable;
  workspace_members: WorkspaceMembersTable;
  invitations: InvitationsTable;
  audit_log: AuditLogTable;
  schedules: SchedulesTable;
  schedule_runs: ScheduleRunsTable;
  concurrency_groups: ConcurrencyGroupsTable;
  agent_event_seqs: AgentEventSeqsTable;
}
