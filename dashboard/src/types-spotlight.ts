/** The model proxy's shapes as the dashboard reads them: budgets, routes, usage. */

/** One window of a model budget (amounts in USD). */
export interface BudgetWindow {
  start: string;
  end: string | null;
  limit_usd: number | null;
  spent_usd: number;
  remaining_usd: number | null;
  exceeded: boolean;
}

/** A spending limit of the model proxy on one scope (GET /spotlight/budgets). */
export interface Budget {
  scope: 'account' | 'platform_key' | 'agent' | 'task';
  id: string | null;
  limits: { monthly_usd?: number | null; daily_usd?: number | null; per_task_usd?: number | null };
  windows: { month?: BudgetWindow; day?: BudgetWindow; task?: BudgetWindow };
}

/** Requests- and tokens-per-minute limits of a platform key or an agent (GET /spotlight/rate_limits). */
export interface RateLimit {
  scope: 'platform_key' | 'agent';
  id: string;
  limits: { rpm: number | null; tpm: number | null };
  window: {
    start: string;
    end: string;
    requests: number;
    tokens: number;
    remaining_requests: number | null;
    remaining_tokens: number | null;
  };
}

/** A failure that lets a route fall back to its next target. */
export type RetryOn = '429' | '5xx' | 'timeout' | 'connection';
export const RETRY_ON: RetryOn[] = ['429', '5xx', 'timeout', 'connection'];

/** One target of a route: a provider credential and the upstream model sent unchanged. */
export interface RouteTarget {
  provider_credential_uuid: string;
  model: string;
}

/** A fallback route of the model proxy (GET /spotlight/routes), called as model `route:<name>`. */
export interface ModelRoute {
  uuid: string;
  name: string;
  targets: RouteTarget[];
  retry_on: RetryOn[];
  cache_ttl_seconds: number | null;
  created_at: string;
  updated_at: string;
}

/** What creating or changing a route sends (PATCH replaces the targets whole). */
export interface RouteInput {
  name: string;
  targets: RouteTarget[];
  retry_on: RetryOn[];
  cache_ttl_seconds: number | null;
}

/** The counters of model usage, per row and in total. */
export interface ModelUsageTotals {
  calls: number;
  errors: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  /** Calls answered from the response cache (counted in calls too). */
  cache_hits: number;
}

/** Usage of one UTC day, credential and upstream model (GET /spotlight/usage). */
export interface ModelUsageRow extends ModelUsageTotals {
  date: string;
  provider_credential_uuid: string;
  /** Null once the credential is deleted. */
  provider_credential_name: string | null;
  model: string;
}

/** The answer of GET /spotlight/usage. */
export interface ModelUsage {
  from: string;
  to: string;
  usage: ModelUsageRow[];
  totals: ModelUsageTotals;
}
