import { sql } from 'kysely';
import type { Executor } from '../../db/connect.js';
import { withDbErrors } from '../../db/errors.js';
import { fromDbJson, toDbJson } from '../../db/json.js';
import { taskQueries } from '../tasks/task-queries.js';

export interface CallError {
  code: 'upstream_error' | 'upstream_unreachable' | 'upstream_timeout' | 'client_closed' | 'budget_exceeded';
  message: string;
}

/** One model call, as recorded. */
export interface CallRow {
  uuid: string;
  workspaceUuid: string;
  createdAt: string;
  source: 'api' | 'runtime';
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
  costNanos: number | null;
  agentUuid: string | null;
  taskUuid: string | null;
  /** The platform key that authenticated the call; null for a session JWT and the openai runtime. */
  platformKeyUuid: string | null;
}

/** A record with the name its credential has now (null once deleted). */
export type NamedCallRow = CallRow & { providerCredentialName: string | null };

const num = (v: number | string | null) => (v === null ? null : Number(v));

export interface CallFilter {
  taskUuid?: string | undefined;
  agentUuid?: string | undefined;
  credentialUuid?: string | undefined;
  platformKeyUuid?: string | undefined;
}

export interface UsageRow {
  date: string;
  credentialUuid: string;
  credentialName: string | null;
  model: string;
  calls: number;
  errors: number;
  inputTokens: number;
  outputTokens: number;
  costNanos: number;
}

function callsOf(ex: Executor, workspaceUuid: string) {
  return ex
    .selectFrom('spotlight_calls as s')
    .leftJoin('provider_credentials as p', 'p.uuid', 's.provider_credential_uuid')
    .where('s.workspace_uuid', '=', workspaceUuid);
}

/** The only code that touches the spotlight_calls table. */
export const spotlightRepo = {
  insert(ex: Executor, c: CallRow) {
    return withDbErrors(
      ex
        .insertInto('spotlight_calls')
        .values({
          uuid: c.uuid,
          workspace_uuid: c.workspaceUuid,
          created_at: c.createdAt,
          source: c.source,
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
          cost_nanos: c.costNanos,
          agent_uuid: c.agentUuid,
          task_uuid: c.taskUuid,
          platform_key_uuid: c.platformKeyUuid,
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
      );
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

  /** Totals per (UTC day, credential, upstream model) of calls created in [from, before). */
  async usage(ex: Executor, workspaceUuid: string, from: string, before: string): Promise<UsageRow[]> {
    const day = sql<string>`substr(s.created_at, 1, 10)`;
    const rows = await withDbErrors(
      callsOf(ex, workspaceUuid)
        .where('s.created_at', '>=', from)
        .where('s.created_at', '<', before)
        .select([
          day.as('date'),
          's.provider_credential_uuid as credential_uuid',
          'p.name as credential_name',
          's.upstream_model as model',
        ])
        .select((eb) => [
          eb.fn.countAll().as('calls'),
          eb.fn.count('s.error').as('errors'),
          eb.fn.coalesce(eb.fn.sum('s.input_tokens'), sql.lit(0)).as('input_tokens'),
          eb.fn.coalesce(eb.fn.sum('s.output_tokens'), sql.lit(0)).as('output_tokens'),
          eb.fn.coalesce(eb.fn.sum('s.cost_nanos'), sql.lit(0)).as('cost_nanos'),
        ])
        .groupBy([day, 's.provider_credential_uuid', 'p.name', 's.upstream_model'])
        .execute(),
    );
    return rows.map((r) => ({
      date: r.date,
      credentialUuid: r.credential_uuid,
      credentialName: r.credential_name ?? null,
      model: r.model,
      calls: Number(r.calls),
      errors: Number(r.errors),
      inputTokens: Number(r.input_tokens),
      outputTokens: Number(r.output_tokens),
      costNanos: Number(r.cost_nanos),
    }));
  },

  /** The task when it is the user's, with its agent (the proxy's attribution header). */
  findTask(ex: Executor, workspaceUuid: string, taskUuid: string) {
    // Attribution needs only owner and agent; the tasks room answers it.
    return taskQueries.ownedBy(ex, workspaceUuid, taskUuid);
  },

  /** Deletes up to `batch` records created before `before`; returns how many went. */
  async deleteExpiredCalls(ex: Executor, before: string, batch: number): Promise<number> {
    const old = ex.selectFrom('spotlight_calls').select('uuid').where('created_at', '<', before).limit(batch);
    const result = await withDbErrors(ex.deleteFrom('spotlight_calls').where('uuid', 'in', old).executeTakeFirst());
    return Number(result.numDeletedRows);
  },
};

export type SpotlightRepo = typeof spotlightRepo;

function toNamedCall(r: Record<string, unknown>): NamedCallRow {
  const row = r as {
    uuid: string;
    workspace_uuid: string;
    created_at: string;
    source: string;
    model: string;
    upstream_model: string;
    response_model: string | null;
    provider_credential_uuid: string;
    stream: number | boolean;
    status_code: number;
    error: unknown;
    latency_ms: number;
    time_to_first_token_ms: number | null;
    input_tokens: number | string | null;
    output_tokens: number | string | null;
    cost_nanos: number | string | null;
    agent_uuid: string | null;
    task_uuid: string | null;
    platform_key_uuid: string | null;
    credential_name: string | null;
  };
  return {
    uuid: row.uuid,
    workspaceUuid: row.workspace_uuid,
    createdAt: row.created_at,
    source: row.source as CallRow['source'],
    model: row.model,
    upstreamModel: row.upstream_model,
    responseModel: row.response_model,
    providerCredentialUuid: row.provider_credential_uuid,
    providerCredentialName: row.credential_name ?? null,
    stream: Boolean(row.stream),
    statusCode: row.status_code,
    error: row.error === null ? null : fromDbJson<CallError>(row.error),
    latencyMs: Number(row.latency_ms),
    timeToFirstTokenMs: num(row.time_to_first_token_ms),
    inputTokens: num(row.input_tokens),
    outputTokens: num(row.output_tokens),
    costNanos: num(row.cost_nanos),
    agentUuid: row.agent_uuid,
    taskUuid: row.task_uuid,
    platformKeyUuid: row.platform_key_uuid ?? null,
  };
}
