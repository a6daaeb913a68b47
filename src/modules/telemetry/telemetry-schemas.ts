import { type TSchema, Type } from '@sinclair/typebox';
import { StrictObject, StringEnum } from '../../http/common-schemas.js';

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
const NullableString = Nullable(Type.String());
/** Attribute maps: any JSON value per key. */
const JsonObject = Type.Record(Type.String(), Type.Unknown(), { description: 'Key → JSON value.' });

const HEX32 = '^[0-9a-fA-F]{32}$';
const HEX16 = '^[0-9a-fA-F]{16}$';

const range = {
  from: Type.Optional(Type.String({ description: 'ISO 8601 with a time zone; inclusive.' })),
  to: Type.Optional(Type.String({ description: 'ISO 8601 with a time zone; exclusive.' })),
};
const paging = {
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Items per page, 1 to 100.' }),
  cursor: Type.Optional(Type.String({ maxLength: 512, description: 'next_cursor of the previous page.' })),
};

export const TracesQuery = StrictObject({
  ...range,
  service: Type.Optional(Type.String()),
  agent_id: Type.Optional(Type.String()),
  task_id: Type.Optional(Type.String()),
  status: Type.Optional(StringEnum(['ok', 'error'] as const)),
  ...paging,
});

export const LogsQuery = StrictObject({
  ...range,
  service: Type.Optional(Type.String()),
  trace_id: Type.Optional(Type.String({ pattern: HEX32 })),
  span_id: Type.Optional(Type.String({ pattern: HEX16 })),
  task_id: Type.Optional(Type.String()),
  severity_min: Type.Optional(Type.Integer({ minimum: 1, maximum: 24 })),
  ...paging,
});

export const UsageQuery = StrictObject({
  ...range,
  group_by: Type.Optional(Type.String({ description: 'Comma-separated set of model, agent, day.' })),
  service: Type.Optional(Type.String()),
});

export const TraceParams = Type.Object({ traceId: Type.String({ pattern: HEX32 }) });

const TraceSummarySchema = Type.Object({
  trace_id: Type.String(),
  root_span_id: NullableString,
  name: NullableString,
  service_name: NullableString,
  start_time: Type.String(),
  end_time: Type.String(),
  duration_ms: Type.Number(),
  span_count: Type.Integer(),
  error_count: Type.Integer(),
  status: StringEnum(['ok', 'error'] as const),
  agent_id: NullableString,
  agent_name: NullableString,
  task_id: NullableString,
  input_tokens: Type.Integer(),
  output_tokens: Type.Integer(),
});

export const SpanSchema = Type.Object({
  trace_id: Type.String(),
  span_id: Type.String(),
  parent_span_id: NullableString,
  name: Type.String(),
  kind: StringEnum(['unspecified', 'internal', 'server', 'client', 'producer', 'consumer'] as const),
  start_time_unix_nano: Type.String(),
  end_time_unix_nano: Type.String(),
  start_time: Type.String(),
  end_time: Type.String(),
  duration_ms: Type.Number(),
  status_code: StringEnum(['unset', 'ok', 'error'] as const),
  status_message: NullableString,
  service_name: NullableString,
  scope_name: NullableString,
  scope_version: NullableString,
  attributes: JsonObject,
  resource_attributes: JsonObject,
  events: Type.Array(
    Type.Object({ name: Type.String(), time_unix_nano: Type.String(), time: Type.String(), attributes: JsonObject }),
  ),
  operation_name: NullableString,
  provider_name: NullableString,
  request_model: NullableString,
  response_model: NullableString,
  input_tokens: Nullable(Type.Integer()),
  output_tokens: Nullable(Type.Integer()),
  agent_id: NullableString,
  agent_name: NullableString,
  conversation_id: NullableString,
  task_id: NullableString,
});

const LogSchema = Type.Object({
  time_unix_nano: Type.String(),
  time: Type.String(),
  observed_time_unix_nano: NullableString,
  severity_number: Type.Integer(),
  severity_text: NullableString,
  body: Type.Unknown(),
  event_name: NullableString,
  trace_id: NullableString,
  span_id: NullableString,
  service_name: NullableString,
  scope_name: NullableString,
  attributes: JsonObject,
  resource_attributes: JsonObject,
  task_id: NullableString,
});

const sums = {
  input_tokens: Type.Integer(),
  output_tokens: Type.Integer(),
  total_tokens: Type.Integer(),
  span_count: Type.Integer(),
};

export const TracesReply = Type.Object({ traces: Type.Array(TraceSummarySchema), next_cursor: NullableString });
export const TraceReply = Type.Object({
  trace_id: Type.String(),
  spans: Type.Array(SpanSchema),
  truncated: Type.Boolean({
    description:
      'true when the trace has more than 10,000 spans: `spans` then holds the first 10,000 by start time, then span id.',
  }),
});
export const LogsReply = Type.Object({ logs: Type.Array(LogSchema), next_cursor: NullableString });
export const UsageReply = Type.Object({
  groups: Type.Array(
    Type.Object({
      model: Type.Optional(NullableString),
      agent_id: Type.Optional(NullableString),
      day: Type.Optional(NullableString),
      ...sums,
    }),
  ),
  totals: Type.Object(sums),
});
