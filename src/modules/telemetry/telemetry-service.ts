import { createHash } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { chunks } from '../../db/batches.js';
import type { Db } from '../../db/connect.js';
import { AppError } from '../../http/errors.js';
import { newId } from '../../lib/ids.js';
import { type Clock, iso } from '../../lib/time.js';
import { isoToNanos, msToNanos, timeKey } from './otlp-values-fns.js';
import { type ServiceSpan, serviceSpanRow } from './service-spans-fns.js';
import {
  logProblem,
  type OtlpBatch,
  type OtlpLogRecord,
  type OtlpSpan,
  type SpanRow,
  sortItems,
  spanProblem,
  toLogRow,
  toSpanRow,
} from './telemetry-fns.js';
import {
  decodeCursor,
  encodeCursor,
  inTreeOrder,
  summarise,
  type UsageKey,
  usageAnswer,
} from './telemetry-query-fns.js';
import { createRecordQuota } from './telemetry-quota.js';
import type { SpanOrigin, TelemetryRepo } from './telemetry-repo.js';

/**
 * Rows per INSERT and per transaction: small enough that task writes interleave with a large
 * export (on SQLite each insert runs on the event loop). Measured with `npm run bench` (submits
 * while 1,000-span exports arrive back to back, SQLite): 500 rows gave submit p50/p99 95/154 ms,
 * 100 gave 17/104 ms, 50 gives 11/64 ms, at about 6,500 spans/s stored meanwhile.
 */
const CHUNK = 50;
const DAY_MS = 86_400_000;
/** Most spans fetch_trace returns; a larger trace is cut there and flagged `truncated`. */
export const MAX_TRACE_SPANS = 10_000;
/**
 * Spans per read of a trace. Reading and mapping 10,000 spans in one go held the event loop for
 * 0.6-1.2 s on SQLite (two busy cores); a page of 500 holds it for a twentieth of that, and other
 * requests run between pages.
 */
export const TRACE_PAGE = 500;

export interface IngestOutcome {
  rejected: number;
  message: string | null;
}

export interface RangeQuery {
  from?: string | undefined;
  to?: string | undefined;
}

const invalid = (field: string, reason: string) =>
  new AppError('INVALID_REQUEST', `Invalid request (querystring): ${field} ${reason}`, { field, reason });

/** The from/to bounds as time keys. @throws AppError INVALID_REQUEST for a bad or inverted range. */
export function rangeKeys(q: RangeQuery): { fromKey?: string; toKey?: string } {
  const out: { fromKey?: string; toKey?: string } = {};
  const bounds: [keyof RangeQuery, 'fromKey' | 'toKey'][] = [
    ['from', 'fromKey'],
    ['to', 'toKey'],
  ];
  for (const [name, key] of bounds) {
    const raw = q[name];
    if (raw === undefined) continue;
    const nanos = isoToNanos(raw);
    if (nanos === null) throw invalid(name, 'must be an ISO 8601 timestamp with a time zone');
    out[key] = timeKey(nanos);
  }
  if (out.fromKey && out.toKey && out.fromKey > out.toKey) throw invalid('from', 'must not be after to');
  return out;
}

/** A UUID-shaped id (version 8) derived from the user, the request digest and a record's place. */
function derivedId(workspaceUuid: string, requestKey: string, index: number): string {
  const hex = createHash('sha256').update(`${workspaceUuid}\n${requestKey}\n${index}`).digest('hex');
  const variant = ((Number.parseInt(hex[16] ?? '0', 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

function cursorOf(endpoint: string, cursor: string | undefined) {
  if (cursor === undefined) return undefined;
  const pos = decodeCursor(endpoint, cursor);
  if (!pos) throw invalid('cursor', 'was not issued by this endpoint');
  return pos;
}

/** Ingest, fetch and retention of telemetry; the service's own spans are written through here too. */
export function createTelemetryService(deps: {
  db: Db;
  repo: TelemetryRepo;
  clock: Clock;
  retentionDays: number;
  /** Most spans and log records one account keeps (TASKHOOK_TELEMETRY_MAX_RECORDS). */
  maxRecords: number;
}) {
  const { db, repo, clock } = deps;
  const cutoff = () => iso(clock.now() - deps.retentionDays * DAY_MS);
  const quota = createRecordQuota({ db, repo, clock, max: deps.maxRecords, cutoff });

  async function writeSpans(workspaceUuid: string, origin: SpanOrigin, rows: SpanRow[]): Promise<number> {
    // One row per id: a repeated span in one request is the last one sent.
    const unique = [...new Map(rows.map((r) => [`${r.trace_id}:${r.span_id}`, r])).values()];
    const receivedAt = iso(clock.now());
    let written = 0;
    for (const part of chunks(unique, CHUNK)) {
      const ids = await db.transaction((trx) => repo.upsertSpans(trx, workspaceUuid, origin, receivedAt, part));
      written += ids.length;
    }
    return unique.length - written;
  }

  return {
    /** Stores the valid spans of a decoded export; counts the refused ones. */
    async ingestSpans(workspaceUuid: string, batches: OtlpBatch<OtlpSpan>[]): Promise<IngestOutcome> {
      const sorted = sortItems(batches, spanProblem, toSpanRow);
      const over = await quota.refusal(workspaceUuid, sorted.rows.length);
      if (over) return { rejected: sorted.rows.length + sorted.rejected, message: over };
      quota.added(workspaceUuid, sorted.rows.length);
      const owned = await writeSpans(workspaceUuid, 'ingest', sorted.rows);
      const rejected = sorted.rejected + owned;
      const reason = sorted.reason ?? (owned > 0 ? 'span ids belong to a span written by taskhook' : null);
      return { rejected, message: rejected > 0 ? `${rejected} span(s) rejected: ${reason}` : null };
    },

    /**
     * Stores the valid log records of a decoded export; counts the refused ones. With `requestKey`
     * (a digest of the request body) each record's id is derived from it and the record's place
     * in the request, so a retry of a request that failed after some chunks were committed
     * stores only the rest: the chunks stay short transactions (other writers interleave) and
     * the export is still stored once.
     */
    async ingestLogs(
      workspaceUuid: string,
      batches: OtlpBatch<OtlpLogRecord>[],
      requestKey?: string,
    ): Promise<IngestOutcome> {
      const now = clock.now();
      let index = 0;
      const idOf = () => (requestKey === undefined ? newId() : derivedId(workspaceUuid, requestKey, index++));
      const sorted = sortItems(batches, logProblem, (r, scope, resource) => ({
        uuid: idOf(),
        ...toLogRow(r, scope, resource, msToNanos(now)),
      }));
      const over = await quota.refusal(workspaceUuid, sorted.rows.length);
      if (over) return { rejected: sorted.rows.length + sorted.rejected, message: over };
      quota.added(workspaceUuid, sorted.rows.length);
      for (const part of chunks(sorted.rows, CHUNK)) {
        await db.transaction((trx) => repo.insertLogs(trx, workspaceUuid, iso(now), part));
      }
      const { rejected, reason } = sorted;
      return { rejected, message: rejected > 0 ? `${rejected} log record(s) rejected: ${reason}` : null };
    },

    /**
     * Writes spans of the service's own work into the workspace's telemetry, committed when it
     * resolves. Ingest never replaces them; recording the same ids again does.
     */
    async recordServiceSpans(workspaceUuid: string, spans: ServiceSpan[]): Promise<void> {
      await writeSpans(workspaceUuid, 'service', spans.map(serviceSpanRow));
    },

    async listTraces(
      workspaceUuid: string,
      q: RangeQuery & {
        service?: string;
        agent_id?: string;
        task_id?: string;
        status?: 'ok' | 'error';
        limit: number;
        cursor?: string;
      },
    ) {
      const after = cursorOf('traces', q.cursor);
      const aggs = await repo.listTraces(db.kysely, workspaceUuid, {
        cutoff: cutoff(),
        ...rangeKeys(q),
        service: q.service,
        agentId: q.agent_id,
        taskId: q.task_id,
        status: q.status,
        after: after && { key: after.key, traceId: after.id },
        limit: q.limit + 1,
      });
      const page = aggs.slice(0, q.limit);
      const spans = await repo.spansOfTraces(
        db.kysely,
        workspaceUuid,
        page.map((a) => a.trace_id),
        cutoff(),
      );
      const traces = page.map((a) =>
        summarise(
          a,
          spans.filter((s) => s.trace_id === a.trace_id),
        ),
      );
      const last = page.at(-1);
      const more = aggs.length > q.limit && last;
      return { traces, next_cursor: more ? encodeCursor('traces', last.start_key, last.trace_id) : null };
    },

    /**
     * The trace's first MAX_TRACE_SPANS spans by start, `truncated` when it has more.
     * @throws AppError NOT_FOUND when the caller has no live span of that trace.
     */
    async getTrace(workspaceUuid: string, traceId: string) {
      const id = traceId.toLowerCase();
      const since = cutoff();
      const spans: SpanRow[] = [];
      for (let after: SpanRow | undefined; spans.length <= MAX_TRACE_SPANS; ) {
        if (after) await nextTurn();
        const limit = Math.min(TRACE_PAGE, MAX_TRACE_SPANS + 1 - spans.length);
        const cursor = after ? { startKey: after.start_key, spanId: after.span_id } : null;
        const page = await repo.spanPageOfTrace(db.kysely, workspaceUuid, id, since, cursor, limit);
        spans.push(...page);
        after = page.at(-1);
        if (page.length < limit) break;
      }
      if (spans.length === 0) throw new AppError('NOT_FOUND', 'Trace not found');
      await nextTurn();
      const truncated = spans.length > MAX_TRACE_SPANS;
      return { trace_id: id, spans: inTreeOrder(spans.slice(0, MAX_TRACE_SPANS)), truncated };
    },

    async listLogs(
      workspaceUuid: string,
      q: RangeQuery & {
        service?: string;
        trace_id?: string;
        span_id?: string;
        task_id?: string;
        severity_min?: number;
        limit: number;
        cursor?: string;
      },
    ) {
      const after = cursorOf('logs', q.cursor);
      const rows = await repo.listLogs(db.kysely, workspaceUuid, {
        cutoff: cutoff(),
        ...rangeKeys(q),
        service: q.service,
        traceId: q.trace_id?.toLowerCase(),
        spanId: q.span_id?.toLowerCase(),
        taskId: q.task_id,
        severityMin: q.severity_min,
        after: after && { key: after.key, uuid: after.id },
        limit: q.limit + 1,
      });
      const page = rows.slice(0, q.limit);
      const last = page.at(-1);
      const more = rows.length > q.limit && last;
      return {
        logs: page.map(({ uuid: _, time_key: __, ...log }) => log),
        next_cursor: more ? encodeCursor('logs', last.time_key, last.uuid) : null,
      };
    },

    async usage(workspaceUuid: string, q: RangeQuery & { group_by?: string; service?: string }) {
      const keys = new Set<UsageKey>();
      for (const part of (q.group_by ?? '').split(',').map((p) => p.trim())) {
        if (part === '') continue;
        if (part !== 'model' && part !== 'agent' && part !== 'day') {
          throw invalid('group_by', 'must be a comma-separated set of model, agent, day');
        }
        keys.add(part);
      }
      const filter = { cutoff: cutoff(), ...rangeKeys(q), service: q.service };
      return usageAnswer(await repo.usageGroups(db.kysely, workspaceUuid, filter, keys), keys);
    },
  };
}

export type TelemetryService = ReturnType<typeof createTelemetryService>;
