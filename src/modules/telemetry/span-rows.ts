import type { TelemetrySpansTable } from '../../db/database.js';
import { fromDbJson, toDbJson } from '../../db/json.js';
import { type Attributes, durationMs } from './otlp-values-fns.js';
import type { SpanKind, SpanRow, SpanStatus } from './telemetry-fns.js';

/** Who wrote a span: an OTLP export, or taskhook itself (its task, webhook and callback spans). */
export type SpanOrigin = 'ingest' | 'service';

const KEY_COLUMNS = new Set(['workspace_uuid', 'trace_id', 'span_id']);
const num = (v: number | string | null) => (v === null ? null : Number(v));

export function spanFromRow(r: TelemetrySpansTable): SpanRow {
  return {
    ...r,
    kind: r.kind as SpanKind,
    status_code: r.status_code as SpanStatus,
    attributes: fromDbJson<Attributes>(r.attributes),
    resource_attributes: fromDbJson<Attributes>(r.resource_attributes),
    events: fromDbJson<SpanRow['events']>(r.events),
    input_tokens: num(r.input_tokens),
    output_tokens: num(r.output_tokens),
    duration_ms: durationMs(BigInt(r.start_time_unix_nano), BigInt(r.end_time_unix_nano)),
  };
}

/** The columns of a span row, in the order `spanValues` gives them. */
export const SPAN_COLUMNS = [
  'workspace_uuid',
  'trace_id',
  'span_id',
  'parent_span_id',
  'name',
  'kind',
  'start_time_unix_nano',
  'end_time_unix_nano',
  'start_key',
  'end_key',
  'start_time',
  'end_time',
  'status_code',
  'status_message',
  'service_name',
  'scope_name',
  'scope_version',
  'attributes',
  'resource_attributes',
  'events',
  'operation_name',
  'provider_name',
  'request_model',
  'response_model',
  'input_tokens',
  'output_tokens',
  'agent_id',
  'agent_name',
  'conversation_id',
  'task_id',
  'origin',
  'received_at',
] as const satisfies ReadonlyArray<keyof TelemetrySpansTable>;
/** Fails to compile while a column of the table is missing from SPAN_COLUMNS. */
type Unlisted = Exclude<keyof TelemetrySpansTable, (typeof SPAN_COLUMNS)[number]>;
const everyColumnListed: [Unlisted] extends [never] ? true : never = true;
void everyColumnListed;

/** A span's row values in SPAN_COLUMNS order, appended to `out`. */
export function spanValues(
  out: unknown[],
  workspaceUuid: string,
  origin: SpanOrigin,
  receivedAt: string,
  s: SpanRow,
): void {
  out.push(
    workspaceUuid,
    s.trace_id,
    s.span_id,
    s.parent_span_id,
    s.name,
    s.kind,
    s.start_time_unix_nano,
    s.end_time_unix_nano,
    s.start_key,
    s.end_key,
    s.start_time,
    s.end_time,
    s.status_code,
    s.status_message,
    s.service_name,
    s.scope_name,
    s.scope_version,
    toDbJson(s.attributes),
    toDbJson(s.resource_attributes),
    toDbJson(s.events),
    s.operation_name,
    s.provider_name,
    s.request_model,
    s.response_model,
    s.input_tokens,
    s.output_tokens,
    s.agent_id,
    s.agent_name,
    s.conversation_id,
    s.task_id,
    origin,
    receivedAt,
  );
}

/** Conflicting ids replace the stored span; an ingested span never replaces one of the service's own. */
const upsertSuffix = (origin: SpanOrigin) =>
  `on conflict ("workspace_uuid", "trace_id", "span_id") do update set ${SPAN_COLUMNS.filter((c) => !KEY_COLUMNS.has(c))
    .map((c) => `"${c}" = excluded."${c}"`)
    .join(
      ', ',
    )}${origin === 'ingest' ? ` where "telemetry_spans"."origin" = 'ingest'` : ''} returning "trace_id", "span_id"`;
export const UPSERT_SUFFIX = { ingest: upsertSuffix('ingest'), service: upsertSuffix('service') };
