import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import { MAX_VALUE_DEPTH } from './otlp-json.js';
import { attributesOf, bytesToHex, doubleToJson, intToJson, type JsonValue } from './otlp-values-fns.js';
import type { OtlpBatch, OtlpEvent, OtlpLogRecord, OtlpScope, OtlpSpan } from './telemetry-fns.js';

// The vendored definitions sit at the repository root, two levels above both src/ and dist/.
const PROTO_ROOT = fileURLToPath(new URL('../../../vendor/opentelemetry-proto/', import.meta.url));

function loadRoot(): protobuf.Root {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => PROTO_ROOT + target;
  root.loadSync(
    [
      'opentelemetry/proto/collector/trace/v1/trace_service.proto',
      'opentelemetry/proto/collector/logs/v1/logs_service.proto',
    ],
    { keepCase: false },
  );
  return root;
}

const root = loadRoot();
const TraceRequest = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
const LogsRequest = root.lookupType('opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest');
const TraceResponse = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse');
const LogsResponse = root.lookupType('opentelemetry.proto.collector.logs.v1.ExportLogsServiceResponse');

/** protobufjs' decoded messages, read field by field (absent fields fall back to their defaults). */
// biome-ignore lint/suspicious/noExplicitAny: decoded messages are untyped; every read below is converted.
type Msg = any;

type Long = { toString(): string; unsigned?: boolean };
const u64 = (v: number | Long | null | undefined): bigint => (v == null ? 0n : BigInt(v.toString()));

/** An AnyValue to JSON (see otlp-values-fns for the mapping). */
function anyValue(v: Msg, depth = 0): JsonValue {
  if (!v) return null;
  if (depth > MAX_VALUE_DEPTH) throw new Error(`attribute values nest at most ${MAX_VALUE_DEPTH} levels deep`);
  switch (v.value) {
    case 'stringValue':
      return v.stringValue;
    case 'boolValue':
      return v.boolValue;
    case 'intValue':
      return intToJson(BigInt(v.intValue.toString()));
    case 'doubleValue':
      return doubleToJson(v.doubleValue);
    case 'bytesValue':
      return Buffer.from(v.bytesValue).toString('base64');
    case 'arrayValue':
      return (v.arrayValue.values ?? []).map((item: Msg) => anyValue(item, depth + 1));
    case 'kvlistValue':
      return attributesOf(keyValues(v.kvlistValue.values, depth + 1));
    default:
      return null;
  }
}

function* keyValues(list: Msg[] | undefined, depth = 0): Iterable<[string, JsonValue]> {
  for (const kv of list ?? []) yield [kv.key ?? '', anyValue(kv.value, depth)];
}

const attrs = (list: Msg[] | undefined) => attributesOf(keyValues(list));
const scopeOf = (s: Msg): OtlpScope => ({ name: s?.name ?? '', version: s?.version ?? '' });

function span(s: Msg): OtlpSpan {
  return {
    traceId: bytesToHex(s.traceId),
    spanId: bytesToHex(s.spanId),
    parentSpanId: bytesToHex(s.parentSpanId),
    name: s.name ?? '',
    kind: s.kind ?? 0,
    startNs: u64(s.startTimeUnixNano),
    endNs: u64(s.endTimeUnixNano),
    attributes: attrs(s.attributes),
    events: (s.events ?? []).map(
      (e: Msg): OtlpEvent => ({ name: e.name ?? '', timeNs: u64(e.timeUnixNano), attributes: attrs(e.attributes) }),
    ),
    statusCode: s.status?.code ?? 0,
    statusMessage: s.status?.message ?? '',
  };
}

function logRecord(r: Msg): OtlpLogRecord {
  return {
    timeNs: u64(r.timeUnixNano),
    observedNs: u64(r.observedTimeUnixNano),
    severityNumber: r.severityNumber ?? 0,
    severityText: r.severityText ?? '',
    body: r.body ? anyValue(r.body) : undefined,
    attributes: attrs(r.attributes),
    traceId: bytesToHex(r.traceId),
    spanId: bytesToHex(r.spanId),
    eventName: r.eventName ?? '',
  };
}

/**
 * Decodes a binary ExportTraceServiceRequest.
 * @throws Error when the bytes are not a valid message of that type.
 */
export function decodeTracesProto(body: Uint8Array): OtlpBatch<OtlpSpan>[] {
  const msg: Msg = TraceRequest.decode(body);
  return (msg.resourceSpans ?? []).map((rs: Msg) => ({
    resource: attrs(rs.resource?.attributes),
    scopes: (rs.scopeSpans ?? []).map((ss: Msg) => ({ scope: scopeOf(ss.scope), items: (ss.spans ?? []).map(span) })),
  }));
}

/**
 * Decodes a binary ExportLogsServiceRequest.
 * @throws Error when the bytes are not a valid message of that type.
 */
export function decodeLogsProto(body: Uint8Array): OtlpBatch<OtlpLogRecord>[] {
  const msg: Msg = LogsRequest.decode(body);
  return (msg.resourceLogs ?? []).map((rl: Msg) => ({
    resource: attrs(rl.resource?.attributes),
    scopes: (rl.scopeLogs ?? []).map((sl: Msg) => ({
      scope: scopeOf(sl.scope),
      items: (sl.logRecords ?? []).map(logRecord),
    })),
  }));
}

/** The binary Export…ServiceResponse: empty when all was accepted, else with partial_success. */
export function encodeResponseProto(
  signal: 'traces' | 'logs',
  partial: { rejected: number; message: string } | null,
): Uint8Array {
  if (!partial) return new Uint8Array(0);
  if (signal === 'traces') {
    const body = { partialSuccess: { rejectedSpans: partial.rejected, errorMessage: partial.message } };
    return TraceResponse.encode(TraceResponse.fromObject(body)).finish();
  }
  const body = { partialSuccess: { rejectedLogRecords: partial.rejected, errorMessage: partial.message } };
  return LogsResponse.encode(LogsResponse.fromObject(body)).finish();
}

/** A google.rpc.Status message (code field 1, message field 2), written directly: it has no other fields we send. */
export function encodeStatusProto(code: number, message: string): Uint8Array {
  return protobuf.Writer.create().uint32(8).int32(code).uint32(18).string(message).finish();
}
