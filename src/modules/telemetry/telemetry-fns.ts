import { type Attributes, durationMs, isValidId, type JsonValue, nanosToIso, timeKey } from './otlp-values-fns.js';

/**
 * The decoded request, the same whichever encoding it came in: ids as lowercase hex ('' when
 * absent), times as unsigned nanoseconds, attribute values already in their JSON form.
 */
export interface OtlpEvent {
  name: string;
  timeNs: bigint;
  attributes: Attributes;
}
export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  startNs: bigint;
  endNs: bigint;
  attributes: Attributes;
  events: OtlpEvent[];
  statusCode: number;
  statusMessage: string;
}
export interface OtlpLogRecord {
  timeNs: bigint;
  observedNs: bigint;
  severityNumber: number;
  severityText: string;
  body: JsonValue | undefined;
  attributes: Attributes;
  traceId: string;
  spanId: string;
  eventName: string;
}
export interface OtlpScope {
  name: string;
  version: string;
}
export interface OtlpBatch<T> {
  resource: Attributes;
  scopes: { scope: OtlpScope; items: T[] }[];
}

const KINDS = ['unspecified', 'internal', 'server', 'client', 'producer', 'consumer'] as const;
const STATUSES = ['unset', 'ok', 'error'] as const;
export type SpanKind = (typeof KINDS)[number];
export type SpanStatus = (typeof STATUSES)[number];

/** A span as stored: the returned fields plus the sort keys. */
export interface SpanRow {
  trace_id: string;
  span_id: string;
  parent_span_id: string | null;
  name: string;
  kind: SpanKind;
  start_time_unix_nano: string;
  end_time_unix_nano: string;
  start_key: string;
  end_key: string;
  start_time: string;
  end_time: string;
  duration_ms: number;
  status_code: SpanStatus;
  status_message: string | null;
  service_name: string | null;
  scope_name: string | null;
  scope_version: string | null;
  attributes: Attributes;
  resource_attributes: Attributes;
  events: { name: string; time_unix_nano: string; time: string; attributes: Attributes }[];
  operation_name: string | null;
  provider_name: string | null;
  request_model: string | null;
  response_model: string | null;
  input_tokens: number | null;
  output_tokens: number | null;
  agent_id: string | null;
  agent_name: string | null;
  conversation_id: string | null;
  task_id: string | null;
}

export interface LogRow {
  time_unix_nano: string;
  time_key: string;
  time: string;
  observed_time_unix_nano: string | null;
  severity_number: number;
  severity_text: string | null;
  body: JsonValue;
  event_name: string | null;
  trace_id: string | null;
  span_id: string | null;
  service_name: string | null;
  scope_name: string | null;
  attributes: Attributes;
  resource_attributes: Attributes;
  task_id: string | null;
}

const text = (attrs: Attributes, key: string): string | null => {
  const v = attrs[key];
  return typeof v === 'string' ? v : null;
};
const count = (attrs: Attributes, key: string): number | null => {
  const v = attrs[key];
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : null;
};
const orNull = (s: string) => (s === '' ? null : s);

/** The GenAI semantic-convention fields and the task id, from a span's own attributes. */
export function extractFields(attrs: Attributes) {
  return {
    operation_name: text(attrs, 'gen_ai.operation.name'),
    provider_name: text(attrs, 'gen_ai.provider.name') ?? text(attrs, 'gen_ai.system'),
    request_model: text(attrs, 'gen_ai.request.model'),
    response_model: text(attrs, 'gen_ai.response.model'),
    input_tokens: count(attrs, 'gen_ai.usage.input_tokens'),
    output_tokens: count(attrs, 'gen_ai.usage.output_tokens'),
    agent_id: text(attrs, 'gen_ai.agent.id'),
    agent_name: text(attrs, 'gen_ai.agent.name'),
    conversation_id: text(attrs, 'gen_ai.conversation.id'),
    task_id: text(attrs, 'taskhook.task_id'),
  };
}

/** Why a span is refused, or null when it is stored. */
export function spanProblem(span: OtlpSpan): string | null {
  if (!isValidId(span.traceId, 16)) return 'trace id must be 16 bytes and not all zeros';
  if (!isValidId(span.spanId, 8)) return 'span id must be 8 bytes and not all zeros';
  if (span.parentSpanId !== '' && !isValidId(span.parentSpanId, 8)) return 'parent span id must be empty or 8 bytes';
  if (span.startNs === 0n) return 'start time must be set';
  if (span.endNs < span.startNs) return 'end time is before start time';
  return null;
}

/** Why a log record is refused, or null when it is stored (all-zero ids mean "none"). */
export function logProblem(record: OtlpLogRecord): string | null {
  if (record.traceId !== '' && !/^0+$/.test(record.traceId) && !isValidId(record.traceId, 16)) {
    return 'trace id must be empty or 16 bytes';
  }
  if (record.spanId !== '' && !/^0+$/.test(record.spanId) && !isValidId(record.spanId, 8)) {
    return 'span id must be empty or 8 bytes';
  }
  return null;
}

/** A valid span to its stored form. */
export function toSpanRow(span: OtlpSpan, scope: OtlpScope, resource: Attributes): SpanRow {
  return {
    trace_id: span.traceId,
    span_id: span.spanId,
    parent_span_id: orNull(span.parentSpanId),
    name: span.name,
    kind: KINDS[span.kind] ?? 'unspecified',
    start_time_unix_nano: span.startNs.toString(),
    end_time_unix_nano: span.endNs.toString(),
    start_key: timeKey(span.startNs),
    end_key: timeKey(span.endNs),
    start_time: nanosToIso(span.startNs),
    end_time: nanosToIso(span.endNs),
    duration_ms: durationMs(span.startNs, span.endNs),
    status_code: STATUSES[span.statusCode] ?? 'unset',
    status_message: orNull(span.statusMessage),
    service_name: text(resource, 'service.name'),
    scope_name: orNull(scope.name),
    scope_version: orNull(scope.version),
    attributes: span.attributes,
    resource_attributes: resource,
    events: span.events.map((e) => ({
      name: e.name,
      time_unix_nano: e.timeNs.toString(),
      time: nanosToIso(e.timeNs),
      attributes: e.attributes,
    })),
    ...extractFields(span.attributes),
  };
}

/** A valid log record to its stored form; `receivedNs` stands in when it carries no time at all. */
export function toLogRow(record: OtlpLogRecord, scope: OtlpScope, resource: Attributes, receivedNs: bigint): LogRow {
  const time = record.timeNs || record.observedNs || receivedNs;
  const id = (hex: string) => (hex === '' || /^0+$/.test(hex) ? null : hex);
  return {
    time_unix_nano: time.toString(),
    time_key: timeKey(time),
    time: nanosToIso(time),
    observed_time_unix_nano: record.observedNs ? record.observedNs.toString() : null,
    severity_number: record.severityNumber >= 0 && record.severityNumber <= 24 ? record.severityNumber : 0,
    severity_text: orNull(record.severityText),
    body: record.body === undefined ? null : record.body,
    event_name: orNull(record.eventName),
    trace_id: id(record.traceId),
    span_id: id(record.spanId),
    service_name: text(resource, 'service.name'),
    scope_name: orNull(scope.name),
    attributes: record.attributes,
    resource_attributes: resource,
    task_id: text(record.attributes, 'taskhook.task_id'),
  };
}

export interface Sorted<T> {
  rows: T[];
  rejected: number;
  /** The first reason an item was refused, for the partial-success message. */
  reason: string | null;
}

/** Splits a decoded batch into rows to store and a count of refused items. */
export function sortItems<I, R>(
  batches: OtlpBatch<I>[],
  problem: (item: I) => string | null,
  toRow: (item: I, scope: OtlpScope, resource: Attributes) => R,
): Sorted<R> {
  const out: Sorted<R> = { rows: [], rejected: 0, reason: null };
  for (const batch of batches) {
    for (const { scope, items } of batch.scopes) {
      for (const item of items) {
        const why = problem(item);
        if (why) {
          out.rejected += 1;
          out.reason ??= why;
        } else {
          out.rows.push(toRow(item, scope, batch.resource));
        }
      }
    }
  }
  return out;
}
