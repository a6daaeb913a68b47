import type { DbBool, DbJson } from './column-types.js';

// The model proxy: provider credentials, fallback routes, call records, budgets and spend.
// Re-exported by database.ts, which holds the `Database` interface.

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
  /** The token counts are the proxy's estimate (a 2xx answer without usage). */
  usage_estimated: DbBool;
  /** The endpoint kind: `chat.completions` (older records), `responses` or `anthropic.messages`. */
  api: string;
  /** Input tokens read from / written to the provider's prompt cache (bigint); null when not reported. */
  cache_read_tokens: number | string | null;
  cache_write_tokens: number | string | null;
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

/** Requests- and tokens-per-minute limits of a platform key or an agent; null is no limit. */
export interface SpotlightRateLimitsTable {
  workspace_uuid: string;
  /** `platform_key` or `agent`. */
  scope: string;
  scope_id: string;
  rpm: number | null;
  /** bigint: PostgreSQL returns a string. */
  tpm: number | string | null;
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
