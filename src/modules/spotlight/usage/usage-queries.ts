import type { Db } from '../../../db/connect.js';
import { invalid, notFound } from '../../../http/errors.js';
import type { Clock } from '../../../lib/time.js';
import type { CallFilter, CallsRepo } from './calls-repo.js';
import type { ApiKind, NamedCallRow } from './calls-rows.js';
import type { CallView, UsageView } from './usage-schemas.js';

const DAY_MS = 86_400_000;
const MAX_RANGE_DAYS = 366;

const usd = (nanos: number | null) => (nanos === null ? null : nanos / 1e9);

function view(c: NamedCallRow): CallView {
  return {
    id: c.uuid,
    created_at: c.createdAt,
    source: c.source,
    api: c.api,
    model: c.model,
    upstream_model: c.upstreamModel,
    response_model: c.responseModel,
    provider_credential_uuid: c.providerCredentialUuid,
    provider_credential_name: c.providerCredentialName,
    stream: c.stream,
    status_code: c.statusCode,
    error: c.error,
    latency_ms: c.latencyMs,
    time_to_first_token_ms: c.timeToFirstTokenMs,
    input_tokens: c.inputTokens,
    output_tokens: c.outputTokens,
    cache_read_tokens: c.cacheReadTokens,
    cache_write_tokens: c.cacheWriteTokens,
    cost_usd: usd(c.costNanos),
    agent_uuid: c.agentUuid,
    task_id: c.taskUuid,
    platform_key_uuid: c.platformKeyUuid,
    route: c.route,
    attempts: c.attempts.map((a) => ({
      provider_credential_uuid: a.providerCredentialUuid,
      upstream_model: a.upstreamModel,
      status_code: a.statusCode,
      error: a.error,
      latency_ms: a.latencyMs,
    })),
    cache_hit: c.cacheHit,
    usage_estimated: c.usageEstimated,
  };
}

/** Milliseconds of a real calendar date written YYYY-MM-DD (UTC midnight). */
function dayMs(field: string, value: string): number {
  const ms = Date.parse(`${value}T00:00:00.000Z`);
  if (Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== value) throw invalid(field, 'is not a real date');
  return ms;
}

/** Reading the call records: one record, a filtered page, totals per day. */
export function createUsageQueries(deps: { db: Db; repo: CallsRepo; clock: Clock }) {
  const { db, repo } = deps;
  return {
    async list(workspaceUuid: string, filter: CallFilter, page: number, limit: number) {
      const { calls, total } = await repo.list(db.kysely, workspaceUuid, filter, (page - 1) * limit, limit);
      return { calls: calls.map(view), total };
    },

    async get(workspaceUuid: string, id: string): Promise<CallView> {
      const found = await repo.find(db.kysely, workspaceUuid, id);
      if (!found) throw notFound('Model call');
      return view(found);
    },

    /**
     * Totals per UTC day, credential and upstream model, `from`..`to` inclusive (default: the 30
     * days up to today).
     * @throws AppError INVALID_REQUEST for a date that does not exist, from after to, or over 366 days.
     */
    async usage(
      workspaceUuid: string,
      query: { from?: string | undefined; to?: string | undefined; api?: ApiKind | undefined },
    ): Promise<UsageView> {
      const toMs =
        query.to === undefined
          ? dayMs('to', new Date(deps.clock.now()).toISOString().slice(0, 10))
          : dayMs('to', query.to);
      const fromMs = query.from === undefined ? toMs - 29 * DAY_MS : dayMs('from', query.from);
      if (fromMs > toMs) throw invalid('from', 'is after to');
      if ((toMs - fromMs) / DAY_MS + 1 > MAX_RANGE_DAYS)
        throw invalid('from', `the range is over ${MAX_RANGE_DAYS} days`);
      const rows = await repo.usage(
        db.kysely,
        workspaceUuid,
        new Date(fromMs).toISOString(),
        new Date(toMs + DAY_MS).toISOString(),
        query.api,
      );
      const usage = rows
        .map((r) => ({
          date: r.date,
          provider_credential_uuid: r.credentialUuid,
          provider_credential_name: r.credentialName,
          model: r.model,
          api: r.api,
          calls: r.calls,
          errors: r.errors,
          input_tokens: r.inputTokens,
          output_tokens: r.outputTokens,
          cost_usd: r.costNanos / 1e9,
          cache_hits: r.cacheHits,
          cache_read_tokens: r.cacheReadTokens,
          cache_write_tokens: r.cacheWriteTokens,
          nanos: r.costNanos,
        }))
        .sort(
          (a, b) =>
            a.date.localeCompare(b.date) ||
            a.model.localeCompare(b.model) ||
            (a.provider_credential_name ?? '\uffff').localeCompare(b.provider_credential_name ?? '\uffff') ||
            a.provider_credential_uuid.localeCompare(b.provider_credential_uuid) ||
            a.api.localeCompare(b.api),
        );
      const sum = (
        key:
          | 'calls'
          | 'errors'
          | 'input_tokens'
          | 'output_tokens'
          | 'cache_hits'
          | 'cache_read_tokens'
          | 'cache_write_tokens'
          | 'nanos',
      ) => usage.reduce((n, r) => n + r[key], 0);
      return {
        from: new Date(fromMs).toISOString().slice(0, 10),
        to: new Date(toMs).toISOString().slice(0, 10),
        usage: usage.map(({ nanos: _nanos, ...row }) => row),
        totals: {
          calls: sum('calls'),
          errors: sum('errors'),
          input_tokens: sum('input_tokens'),
          output_tokens: sum('output_tokens'),
          cost_usd: sum('nanos') / 1e9,
          cache_hits: sum('cache_hits'),
          cache_read_tokens: sum('cache_read_tokens'),
          cache_write_tokens: sum('cache_write_tokens'),
        },
      };
    },
  };
}

export type UsageQueries = ReturnType<typeof createUsageQueries>;
