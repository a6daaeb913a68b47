import { sql } from 'kysely';
import type { Executor } from '../../../db/connect.js';
import { withDbErrors } from '../../../db/errors.js';
import { toDbJson } from '../../../db/json.js';
import { type ApiKind, attemptToDb, type CallRow, type NamedCallRow, toNamedCall } from './calls-rows.js';

export interface CallFilter {
  taskUuid?: string | undefined;
  agentUuid?: string | undefined;
  credentialUuid?: string | undefined;
  platformKeyUuid?: string | undefined;
  routeUuid?: string | undefined;
  api?: ApiKind | undefined;
}

export interface UsageRow {
  date: string;
  credentialUuid: string;
  credentialName: string | null;
  model: string;
  api: ApiKind;
  calls: number;
  errors: number;
  inputTokens: number;
  outputTokens: number;
  costNanos: number;
  cacheHits: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

function callsOf(ex: Executor, workspaceUuid: string) {
  return ex
    .selectFrom('spotlight_calls as s')
    .leftJoin('provider_credentials as p', 'p.uuid', 's.provider_credential_uuid')
    .where('s.workspace_uuid', '=', workspaceUuid);
}

/** The only code that touches the spotlight_calls table. */
export const callsRepo = {
  insert(ex: Executor, c: CallRow) {
    return withDbErrors(
      ex
        .insertInto('spotlight_calls')
        .values({
          uuid: c.uuid,
          workspace_uuid: c.workspaceUuid,
          created_at: c.createdAt,
          source: c.source,
          api: c.api,
          model: c.model,
          upstream_model: c.upstreamModel,
          response_model: c.responseModel,
          provider_credential_uuid: c.providerCredentialUuid,
          stream: c.stream ? 1 : 0,
          status_code: c.statusCode,
          error: c.error === null ? null : toDbJson(c.error),
          latency_ms: c.latencyMs,
          time_to_first_token_ms: c.timeToFirstTokenMs,
          input_tokens: c.inputTokens,
          output_tokens: c.outputTokens,
          cache_read_tokens: c.cacheReadTokens,
          cache_write_tokens: c.cacheWriteTokens,
          cost_nanos: c.costNanos,
          agent_uuid: c.agentUuid,
          task_uuid: c.taskUuid,
          platform_key_uuid: c.platformKeyUuid,
          route_uuid: c.route?.uuid ?? null,
          route_name: c.route?.name ?? null,
          attempts: toDbJson(c.attempts.map(attemptToDb)),
          cache_hit: c.cacheHit ? 1 : 0,
          usage_estimated: c.usageEstimated ? 1 : 0,
        })
        .execute(),
    );
  },

  async list(ex: Executor, workspaceUuid: string, filter: CallFilter, offset: number, limit: number) {
    const base = callsOf(ex, workspaceUuid)
      .$if(filter.taskUuid !== undefined, (q) => q.where('s.task_uuid', '=', filter.taskUuid as string))
      .$if(filter.agentUuid !== undefined, (q) => q.where('s.agent_uuid', '=', filter.agentUuid as string))
      .$if(filter.credentialUuid !== undefined, (q) =>
        q.where('s.provider_credential_uuid', '=', filter.credentialUuid as string),
      )
      .$if(filter.platformKeyUuid !== undefined, (q) =>
        q.where('s.platform_key_uuid', '=', filter.platformKeyUuid as string),
      )
      .$if(filter.routeUuid !== undefined, (q) => q.where('s.route_uuid', '=', filter.routeUuid as string))
      .$if(filter.api !== undefined, (q) => q.where('s.api', '=', filter.api as ApiKind));
    const [rows, total] = await Promise.all([
      withDbErrors(
        base
          .selectAll('s')
          .select('p.name as credential_name')
          .orderBy('s.created_at', 'desc')
          .orderBy('s.uuid', 'desc')
          .offset(offset)
          .limit(limit)
          .execute(),
      ),
      withDbErrors(base.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()),
    ]);
    return { calls: rows.map(toNamedCall), total: Number(total.n) };
  },

  async find(ex: Executor, workspaceUuid: string, uuid: string): Promise<NamedCallRow | undefined> {
    const row = await withDbErrors(
      callsOf(ex, workspaceUuid)
        .selectAll('s')
        .select('p.name as credential_name')
        .where('s.uuid', '=', uuid)
        .executeTakeFirst(),
    );
    return row && toNamedCall(row);
  },

  /** Totals per (UTC day, credential, upstream model, endpoint kind) of calls created in [from, before). */
  async usage(
    ex: Executor,
    workspaceUuid: string,
    from: string,
    before: string,
    api?: ApiKind | undefined,
  ): Promise<UsageRow[]> {
    const day = sql<string>`substr(s.created_at, 1, 10)`;
    const rows = await withDbErrors(
      callsOf(ex, workspaceUuid)
        .where('s.created_at', '>=', from)
        .where('s.created_at', '<', before)
        .$if(api !== undefined, (q) => q.where('s.api', '=', api as ApiKind))
        .select([
          day.as('date'),
          's.provider_credential_uuid as credential_uuid',
          'p.name as credential_name',
          's.upstream_model as model',
          's.api as api',
        ])
        .select((eb) => [
          eb.fn.countAll().as('calls'),
          eb.fn.count('s.error').as('errors'),
          eb.fn.coalesce(eb.fn.sum('s.input_tokens'), sql.lit(0)).as('input_tokens'),
          eb.fn.coalesce(eb.fn.sum('s.output_tokens'), sql.lit(0)).as('output_tokens'),
          eb.fn.coalesce(eb.fn.sum('s.cost_nanos'), sql.lit(0)).as('cost_nanos'),
          eb.fn.coalesce(eb.fn.sum(sql<number>`case when s.cache_hit then 1 else 0 end`), sql.lit(0)).as('cache_hits'),
          eb.fn.coalesce(eb.fn.sum('s.cache_read_tokens'), sql.lit(0)).as('cache_read_tokens'),
          eb.fn.coalesce(eb.fn.sum('s.cache_write_tokens'), sql.lit(0)).as('cache_write_tokens'),
        ])
        .groupBy([day, 's.provider_credential_uuid', 'p.name', 's.upstream_model', 's.api'])
        .execute(),
    );
    return rows.map((r) => ({
      date: r.date,
      credentialUuid: r.credential_uuid,
      credentialName: r.credential_name ?? null,
      model: r.model,
      api: r.api as ApiKind,
      calls: Number(r.calls),
      errors: Number(r.errors),
      inputTokens: Number(r.input_tokens),
      outputTokens: Number(r.output_tokens),
      costNanos: Number(r.cost_nanos),
      cacheHits: Number(r.cache_hits),
      cacheReadTokens: Number(r.cache_read_tokens),
      cacheWriteTokens: Number(r.cache_write_tokens),
    }));
  },

  /** Deletes up to `batch` records created before `before`; returns how many went. */
  async deleteExpiredCalls(ex: Executor, before: string, batch: number): Promise<number> {
    const old = ex.selectFrom('spotlight_calls').select('uuid').where('created_at', '<', before).limit(batch);
    const result = await withDbErrors(ex.deleteFrom('spotlight_calls').where('uuid', 'in', old).executeTakeFirst());
    return Number(result.numDeletedRows);
  },
};

export type CallsRepo = typeof callsRepo;
