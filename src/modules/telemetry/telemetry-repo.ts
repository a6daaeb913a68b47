import { type Expression, type SqlBool, sql } from 'kysely';
import { insertRows } from '../../db/batches.js';
import type { Executor } from '../../db/connect.js';
import { withDbErrors } from '../../db/errors.js';
import { SPAN_COLUMNS, type SpanOrigin, spanFromRow, spanValues, UPSERT_SUFFIX } from './span-rows.js';
import type { SpanRow } from './telemetry-fns.js';
import { telemetryLogsRepo } from './telemetry-logs-repo.js';
import { byStart } from './telemetry-query-fns.js';

export type { SpanOrigin } from './span-rows.js';
export type { LogFilter, StoredLog } from './telemetry-logs-repo.js';

/** Filters of the trace list; every time bound is a zero-padded nanosecond key. */
export interface TraceFilter {
  cutoff: string;
  fromKey?: string | undefined;
  toKey?: string | undefined;
  service?: string | undefined;
  agentId?: string | undefined;
  taskId?: string | undefined;
  status?: 'ok' | 'error' | undefined;
  after?: { key: string; traceId: string } | undefined;
  limit: number;
}

export interface TraceAggregate {
  trace_id: string;
  start_key: string;
  end_key: string;
  span_count: number;
  error_count: number;
}

export interface UsageFilter {
  cutoff: string;
  fromKey?: string | undefined;
  toKey?: string | undefined;
  service?: string | undefined;
}

interface UsageRow {
  day: string | null;
  model: string | null;
  agent_id: string | null;
  input_tokens: number | string;
  output_tokens: number | string;
  span_count: number | string;
}

/** The only code that touches the telemetry tables (spans here, logs in telemetry-logs-repo.ts). */
export const telemetryRepo = {
  ...telemetryLogsRepo,
  /**
   * Inserts spans, replacing ingested ones with the same ids; the service's own spans are only
   * ever replaced by the service. Returns the ids actually written.
   */
  async upsertSpans(ex: Executor, workspaceUuid: string, origin: SpanOrigin, receivedAt: string, spans: SpanRow[]) {
    if (spans.length === 0) return [];
    const values: unknown[] = [];
    for (const span of spans) spanValues(values, workspaceUuid, origin, receivedAt, span);
    return withDbErrors(
      insertRows<{ trace_id: string; span_id: string }>(
        ex,
        'telemetry_spans',
        SPAN_COLUMNS,
        values,
        UPSERT_SUFFIX[origin],
      ),
    );
  },

  /** One page of trace aggregates, newest first by earliest span start. */
  async listTraces(ex: Executor, workspaceUuid: string, f: TraceFilter): Promise<TraceAggregate[]> {
    const has = (col: 'service_name' | 'agent_id' | 'task_id', value: string) =>
      sql<number>`sum(case when ${sql.ref(col)} = ${value} then 1 else 0 end)`;
    const errors = sql<number>`sum(case when status_code = 'error' then 1 else 0 end)`;
    let q = ex
      .selectFrom('telemetry_spans')
      .where('workspace_uuid', '=', workspaceUuid)
      .where('end_time', '>=', f.cutoff)
      .groupBy('trace_id')
      .select((eb) => [
        'trace_id',
        eb.fn.min('start_key').as('start_key'),
        eb.fn.max('end_key').as('end_key'),
        eb.fn.countAll().as('span_count'),
        errors.as('error_count'),
      ]);
    const conds: Expression<SqlBool>[] = [];
    if (f.fromKey) conds.push(sql<SqlBool>`min(start_key) >= ${f.fromKey}`);
    if (f.toKey) conds.push(sql<SqlBool>`min(start_key) < ${f.toKey}`);
    if (f.service !== undefined) conds.push(sql<SqlBool>`${has('service_name', f.service)} > 0`);
    if (f.agentId !== undefined) conds.push(sql<SqlBool>`${has('agent_id', f.agentId)} > 0`);
    if (f.taskId !== undefined) conds.push(sql<SqlBool>`${has('task_id', f.taskId)} > 0`);
    if (f.status === 'error') conds.push(sql<SqlBool>`${errors} > 0`);
    if (f.status === 'ok') conds.push(sql<SqlBool>`${errors} = 0`);
    if (f.after) {
      const { key, traceId } = f.after;
      conds.push(sql<SqlBool>`(min(start_key) < ${key} or (min(start_key) = ${key} and trace_id < ${traceId}))`);
    }
    for (const c of conds) q = q.having(c);
    const rows = await withDbErrors(
      q.orderBy(sql`min(start_key)`, 'desc').orderBy('trace_id', 'desc').limit(f.limit).execute(),
    );
    return rows.map((r) => ({
      trace_id: r.trace_id,
      start_key: String(r.start_key),
      end_key: String(r.end_key),
      span_count: Number(r.span_count),
      error_count: Number(r.error_count),
    }));
  },

  /**
   * Every live span of the given traces, in start order. Sorted here, not by the query: asked for
   * that order, SQLite's planner walks every span of the user in the start index instead of
   * looking the traces up by key, so fetching one trace grew with the workspace's whole history.
   */
  async spansOfTraces(ex: Executor, workspaceUuid: string, traceIds: string[], cutoff: string): Promise<SpanRow[]> {
    if (traceIds.length === 0) return [];
    const rows = await withDbErrors(
      ex
        .selectFrom('telemetry_spans')
        .selectAll()
        .where('workspace_uuid', '=', workspaceUuid)
        .where('trace_id', 'in', traceIds)
        .where('end_time', '>=', cutoff)
        .execute(),
    );
    return rows.map(spanFromRow).sort(byStart);
  },

  /**
   * The first `limit` live spans of one trace by start, then span id. The sort key is written
   * `start_key || ''` so that SQLite still finds the trace by its key (see spansOfTraces) and
   * sorts only that trace's spans.
   */
  /**
   * Up to `limit` live spans of the trace by start, then span id, after the span `after` (its
   * start key and id) when given: the trace is read a page at a time, so no one read holds the
   * event loop (SQLite) or a connection for long.
   */
  async spanPageOfTrace(
    ex: Executor,
    workspaceUuid: string,
    traceId: string,
    cutoff: string,
    after: { startKey: string; spanId: string } | null,
    limit: number,
  ) {
    let q = ex
      .selectFrom('telemetry_spans')
      .selectAll()
      .where('workspace_uuid', '=', workspaceUuid)
      .where('trace_id', '=', traceId)
      .where('end_time', '>=', cutoff);
    if (after) {
      q = q.where((eb) =>
        eb.or([
          eb('start_key', '>', after.startKey),
          eb.and([eb('start_key', '=', after.startKey), eb('span_id', '>', after.spanId)]),
        ]),
      );
    }
    const rows = await withDbErrors(q.orderBy(sql`start_key || ''`).orderBy('span_id').limit(limit).execute());
    return rows.map(spanFromRow);
  },

  /** The workspace's live spans plus log records, counting no further than `upTo` of each. */
  async countLiveRecords(ex: Executor, workspaceUuid: string, cutoff: string, upTo: number): Promise<number> {
    const spans = ex
      .selectFrom('telemetry_spans')
      .select(sql<number>`1`.as('one'))
      .where('workspace_uuid', '=', workspaceUuid)
      .where('end_time', '>=', cutoff)
      .limit(upTo);
    const logs = ex
      .selectFrom('telemetry_logs')
      .select(sql<number>`1`.as('one'))
      .where('workspace_uuid', '=', workspaceUuid)
      .where('time', '>=', cutoff)
      .limit(upTo);
    const [a, b] = await Promise.all(
      [spans, logs].map((q) =>
        withDbErrors(
          ex
            .selectFrom(q.as('live'))
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow(),
        ),
      ),
    );
    return Number(a?.n ?? 0) + Number(b?.n ?? 0);
  },

  /**
   * Usage summed by the database, one row per group of `keys`, by the rules of fetch_usage:
   * spans carrying usage within the bounds; an agent span only when no other live span of its
   * trace carries usage; `agent` is the span's agent, else its trace's (that of the earliest live
   * span that names one). Nothing but the groups leaves the database.
   */
  async usageGroups(ex: Executor, workspaceUuid: string, f: UsageFilter, keys: ReadonlySet<'model' | 'agent' | 'day'>) {
    const traceAgent = sql`(select t.agent_id from telemetry_spans t
      where t.workspace_uuid = s.workspace_uuid and t.trace_id = s.trace_id and t.end_time >= ${f.cutoff}
        and t.agent_id is not null
      order by t.start_key, t.span_id limit 1)`;
    const columns = [
      keys.has('day') ? sql`substr(s.start_time, 1, 10)` : sql`null`,
      keys.has('model') ? sql`coalesce(s.response_model, s.request_model)` : sql`null`,
      keys.has('agent') ? sql`coalesce(s.agent_id, ${traceAgent})` : sql`null`,
    ];
    const conds = [
      sql`s.workspace_uuid = ${workspaceUuid}`,
      sql`s.end_time >= ${f.cutoff}`,
      sql`(s.input_tokens is not null or s.output_tokens is not null)`,
      sql`(coalesce(s.operation_name, '') not in ('invoke_agent', 'create_agent') or not exists (
        select 1 from telemetry_spans o
        where o.workspace_uuid = s.workspace_uuid and o.trace_id = s.trace_id and o.span_id <> s.span_id
          and o.end_time >= ${f.cutoff} and (o.input_tokens is not null or o.output_tokens is not null)))`,
    ];
    if (f.fromKey) conds.push(sql`s.start_key >= ${f.fromKey}`);
    if (f.toKey) conds.push(sql`s.start_key < ${f.toKey}`);
    if (f.service !== undefined) conds.push(sql`s.service_name = ${f.service}`);
    const { rows } = await withDbErrors(
      sql<UsageRow>`select ${columns[0]} as day, ${columns[1]} as model, ${columns[2]} as agent_id,
          sum(coalesce(s.input_tokens, 0)) as input_tokens, sum(coalesce(s.output_tokens, 0)) as output_tokens,
          count(*) as span_count
        from telemetry_spans s where ${sql.join(conds, sql` and `)}
        group by 1, 2, 3`.execute(ex),
    );
    return rows.map((r) => ({
      day: r.day,
      model: r.model,
      agent_id: r.agent_id,
      input_tokens: Number(r.input_tokens),
      output_tokens: Number(r.output_tokens),
      span_count: Number(r.span_count),
    }));
  },

  /** Deletes at most `batch` spans that ended before `cutoff`; returns how many. */
  async deleteExpiredSpans(ex: Executor, cutoff: string, batch: number): Promise<number> {
    const doomed = ex
      .selectFrom('telemetry_spans')
      .select(['workspace_uuid', 'trace_id', 'span_id'])
      .where('end_time', '<', cutoff)
      .limit(batch);
    const res = await withDbErrors(
      ex
        .deleteFrom('telemetry_spans')
        .where((eb) =>
          eb(
            eb.refTuple('workspace_uuid', 'trace_id', 'span_id'),
            'in',
            doomed.$asTuple('workspace_uuid', 'trace_id', 'span_id'),
          ),
        )
        .executeTakeFirst(),
    );
    return Number(res.numDeletedRows);
  },
};

export type TelemetryRepo = typeof telemetryRepo;
