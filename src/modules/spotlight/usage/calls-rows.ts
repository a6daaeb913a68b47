import type { Selectable } from 'kysely';
import type { SpotlightCallsTable } from '../../../db/database.js';
import { fromDbJson } from '../../../db/json.js';

/** Rows of spotlight_calls to records and back: the dialects' bigints and booleans, JSON columns. */

export interface CallError {
  code:
    | 'upstream_error'
    | 'upstream_unreachable'
    | 'upstream_timeout'
    | 'client_closed'
    | 'budget_exceeded'
    | 'model_not_priced';
  message: string;
}

/** The endpoint kind of a call: which protocol the caller spoke (and the upstream was asked). */
export type ApiKind = 'chat.completions' | 'responses' | 'anthropic.messages';
export const API_KINDS: readonly ApiKind[] = ['chat.completions', 'responses', 'anthropic.messages'];

/** One upstream exchange of a call: a plain call has one, a route call one per target tried. */
export interface CallAttempt {
  providerCredentialUuid: string;
  upstreamModel: string;
  /** The upstream's HTTP status; null when none came (timeout, unreachable). */
  statusCode: number | null;
  error: CallError | null;
  latencyMs: number;
}

/** One model call, as recorded. */
export interface CallRow {
  uuid: string;
  workspaceUuid: string;
  createdAt: string;
  source: 'api' | 'runtime';
  api: ApiKind;
  model: string;
  upstreamModel: string;
  responseModel: string | null;
  providerCredentialUuid: string;
  stream: boolean;
  statusCode: number;
  error: CallError | null;
  latencyMs: number;
  timeToFirstTokenMs: number | null;
  inputTokens: number | null;
  outputTokens: number | null;
  /** Input tokens served from the provider's prompt cache (part of inputTokens); null when not reported. */
  cacheReadTokens: number | null;
  /** Input tokens written to the provider's prompt cache (part of inputTokens); null when not reported. */
  cacheWriteTokens: number | null;
  costNanos: number | null;
  agentUuid: string | null;
  taskUuid: string | null;
  /** The platform key that authenticated the call; null for a session JWT and the openai runtime. */
  platformKeyUuid: string | null;
  /** The route the call went through, its name as at the call; null for a plain call. */
  route: { uuid: string; name: string } | null;
  /** Every upstream exchange in order; [] when nothing went upstream (budget refusal, cache hit). */
  attempts: CallAttempt[];
  /** Answered from the response cache. */
  cacheHit: boolean;
  /** The token counts are the proxy's estimate: the upstream answered 2xx without usage. */
  usageEstimated: boolean;
}

/** A record with the name its credential has now (null once deleted). */
export type NamedCallRow = CallRow & { providerCredentialName: string | null };

const num = (v: number | string | null) => (v === null ? null : Number(v));

/** A stored record with its credential's current name. */
export function toNamedCall(r: Record<string, unknown>): NamedCallRow {
  const row = r as Selectable<SpotlightCallsTable> & { credential_name: string | null };
  const error = row.error === null ? null : fromDbJson<CallError>(row.error);
  return {
    uuid: row.uuid,
    workspaceUuid: row.workspace_uuid,
    createdAt: row.created_at,
    source: row.source as CallRow['source'],
    api: (row.api ?? 'chat.completions') as ApiKind,
    model: row.model,
    upstreamModel: row.upstream_model,
    responseModel: row.response_model,
    providerCredentialUuid: row.provider_credential_uuid,
    providerCredentialName: row.credential_name ?? null,
    stream: Boolean(row.stream),
    statusCode: row.status_code,
    error,
    latencyMs: Number(row.latency_ms),
    timeToFirstTokenMs: num(row.time_to_first_token_ms),
    inputTokens: num(row.input_tokens),
    outputTokens: num(row.output_tokens),
    cacheReadTokens: num(row.cache_read_tokens ?? null),
    cacheWriteTokens: num(row.cache_write_tokens ?? null),
    costNanos: num(row.cost_nanos),
    agentUuid: row.agent_uuid,
    taskUuid: row.task_uuid,
    platformKeyUuid: row.platform_key_uuid ?? null,
    route: row.route_uuid === null ? null : { uuid: row.route_uuid, name: row.route_name ?? '' },
    attempts:
      row.attempts === null || row.attempts === undefined
        ? olderAttempts(row, error)
        : fromDbJson<AttemptDb[]>(row.attempts).map(attemptFromDb),
    cacheHit: Boolean(row.cache_hit),
    usageEstimated: Boolean(row.usage_estimated),
  };
}

/** An attempt as stored (snake case, as in the API). */
interface AttemptDb {
  provider_credential_uuid: string;
  upstream_model: string;
  status_code: number | null;
  error: CallError | null;
  latency_ms: number;
}

export const attemptToDb = (a: CallAttempt): AttemptDb => ({
  provider_credential_uuid: a.providerCredentialUuid,
  upstream_model: a.upstreamModel,
  status_code: a.statusCode,
  error: a.error,
  latency_ms: a.latencyMs,
});

const attemptFromDb = (a: AttemptDb): CallAttempt => ({
  providerCredentialUuid: a.provider_credential_uuid,
  upstreamModel: a.upstream_model,
  statusCode: a.status_code,
  error: a.error,
  latencyMs: a.latency_ms,
});

/**
 * A record written before attempts were kept: a budget refusal made none; any other call made the
 * one exchange the record describes (no status when it timed out or could not connect).
 */
function olderAttempts(
  row: { provider_credential_uuid: string; upstream_model: string; status_code: number; latency_ms: number },
  error: CallError | null,
): CallAttempt[] {
  if (error?.code === 'budget_exceeded') return [];
  // The record's status is what the caller got; the upstream's is unknown when no answer came, when
  // the caller left first (499), or when the proxy refused an answer too large (its own 502).
  const proxyOwn =
    error?.code === 'client_closed' || (row.status_code === 502 && error?.message.includes('larger than') === true);
  const noAnswer = error?.code === 'upstream_timeout' || error?.code === 'upstream_unreachable' || proxyOwn;
  return [
    {
      providerCredentialUuid: row.provider_credential_uuid,
      upstreamModel: row.upstream_model,
      statusCode: noAnswer ? null : row.status_code,
      error,
      latencyMs: Number(row.latency_ms),
    },
  ];
}
