import { isLosslessNumber, parse } from 'lossless-json';
import {
  attributesOf,
  doubleToJson,
  intToJson,
  type JsonValue,
  normaliseHexId,
  parseI64,
  parseU64,
} from './otlp-values-fns.js';
import type { OtlpBatch, OtlpEvent, OtlpLogRecord, OtlpScope, OtlpSpan } from './telemetry-fns.js';

/** The body is JSON but not of the request message's shape. */
export class OtlpShapeError extends Error {}

type Obj = Record<string, unknown>;

/** Attribute values nest arrays and maps; deeper than this is refused like any other bad shape. */
export const MAX_VALUE_DEPTH = 64;

const fail = (path: string, what: string): never => {
  throw new OtlpShapeError(`${path} must be ${what}`);
};

function obj(v: unknown, path: string): Obj | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'object' || Array.isArray(v) || isLosslessNumber(v)) return fail(path, 'an object');
  return v as Obj;
}

function list(v: unknown, path: string): unknown[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) return fail(path, 'an array');
  return v;
}

function str(v: unknown, path: string): string {
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') return fail(path, 'a string');
  return v;
}

/** An integer field (enums, int32): a JSON number or decimal string. */
function int(v: unknown, path: string): number {
  if (v === undefined || v === null) return 0;
  const raw = isLosslessNumber(v) ? v.value : typeof v === 'string' ? v : fail(path, 'an integer');
  const parsed = parseI64(raw);
  if (parsed === null || parsed > 2147483647n || parsed < -2147483648n) return fail(path, 'a 32-bit integer');
  return Number(parsed);
}

/** A 64-bit field read exactly as written: a JSON number or a decimal string. */
function int64(v: unknown, path: string, signed: boolean): bigint {
  if (v === undefined || v === null) return 0n;
  const raw = isLosslessNumber(v) ? v.value : typeof v === 'string' ? v : fail(path, 'an integer');
  const parsed = signed ? parseI64(raw) : parseU64(raw);
  return parsed ?? fail(path, signed ? 'a 64-bit integer' : 'an unsigned 64-bit integer');
}

function double(v: unknown, path: string): JsonValue {
  if (isLosslessNumber(v)) return doubleToJson(Number(v.value));
  if (v === 'NaN' || v === 'Infinity' || v === '-Infinity') return v;
  if (typeof v === 'string' && v.trim() !== '' && !Number.isNaN(Number(v))) return doubleToJson(Number(v));
  return fail(path, 'a number');
}

function anyValue(v: unknown, path: string, depth = 0): JsonValue {
  if (depth > MAX_VALUE_DEPTH) return fail(path, `nested at most ${MAX_VALUE_DEPTH} levels deep`);
  const o = obj(v, path);
  if (!o) return null;
  if ('stringValue' in o) return str(o.stringValue, `${path}.stringValue`);
  if ('boolValue' in o) return typeof o.boolValue === 'boolean' ? o.boolValue : fail(`${path}.boolValue`, 'a boolean');
  if ('intValue' in o) return intToJson(int64(o.intValue, `${path}.intValue`, true));
  if ('doubleValue' in o) return double(o.doubleValue, `${path}.doubleValue`);
  if ('bytesValue' in o) return Buffer.from(str(o.bytesValue, `${path}.bytesValue`), 'base64').toString('base64');
  if ('arrayValue' in o) {
    const values = list(obj(o.arrayValue, `${path}.arrayValue`)?.values, `${path}.arrayValue.values`);
    return values.map((item, i) => anyValue(item, `${path}.arrayValue.values[${i}]`, depth + 1));
  }
  if ('kvlistValue' in o) {
    return keyValues(obj(o.kvlistValue, `${path}.kvlistValue`)?.values, `${path}.kvlistValue`, depth + 1);
  }
  return null;
}

function keyValues(v: unknown, path: string, depth = 0) {
  return attributesOf(
    list(v, path).map((item, i): [string, JsonValue] => {
      const kv = obj(item, `${path}[${i}]`) ?? {};
      return [str(kv.key, `${path}[${i}].key`), anyValue(kv.value, `${path}[${i}].value`, depth)];
    }),
  );
}

const id = (v: unknown, path: string) => normaliseHexId(str(v, path));

function scopeOf(v: unknown, path: string): OtlpScope {
  const s = obj(v, path) ?? {};
  return { name: str(s.name, `${path}.name`), version: str(s.version, `${path}.version`) };
}

function span(v: unknown, p: string): OtlpSpan {
  const s = obj(v, p) ?? {};
  const status = obj(s.status, `${p}.status`) ?? {};
  return {
    traceId: id(s.traceId, `${p}.traceId`),
    spanId: id(s.spanId, `${p}.spanId`),
    parentSpanId: id(s.parentSpanId, `${p}.parentSpanId`),
    name: str(s.name, `${p}.name`),
    kind: int(s.kind, `${p}.kind`),
    startNs: int64(s.startTimeUnixNano, `${p}.startTimeUnixNano`, false),
    endNs: int64(s.endTimeUnixNano, `${p}.endTimeUnixNano`, false),
    attributes: keyValues(s.attributes, `${p}.attributes`),
    events: list(s.events, `${p}.events`).map((ev, i): OtlpEvent => {
      const e = obj(ev, `${p}.events[${i}]`) ?? {};
      return {
        name: str(e.name, `${p}.events[${i}].name`),
        timeNs: int64(e.timeUnixNano, `${p}.events[${i}].timeUnixNano`, false),
        attributes: keyValues(e.attributes, `${p}.events[${i}].attributes`),
      };
    }),
    statusCode: int(status.code, `${p}.status.code`),
    statusMessage: str(status.message, `${p}.status.message`),
  };
}

function logRecord(v: unknown, p: string): OtlpLogRecord {
  const r = obj(v, p) ?? {};
  return {
    timeNs: int64(r.timeUnixNano, `${p}.timeUnixNano`, false),
    observedNs: int64(r.observedTimeUnixNano, `${p}.observedTimeUnixNano`, false),
    severityNumber: int(r.severityNumber, `${p}.severityNumber`),
    severityText: str(r.severityText, `${p}.severityText`),
    body: r.body === undefined || r.body === null ? undefined : anyValue(r.body, `${p}.body`),
    attributes: keyValues(r.attributes, `${p}.attributes`),
    traceId: id(r.traceId, `${p}.traceId`),
    spanId: id(r.spanId, `${p}.spanId`),
    eventName: str(r.eventName, `${p}.eventName`),
  };
}

function batches<T>(
  text: string,
  outer: string,
  inner: string,
  itemsKey: string,
  item: (v: unknown, path: string) => T,
): OtlpBatch<T>[] {
  // Numbers stay as their text so 64-bit values are never rounded through a double.
  const root = obj(parse(text), 'request') ?? fail('request', 'an object');
  return list(root[outer], outer).map((rv, i) => {
    const r = obj(rv, `${outer}[${i}]`) ?? {};
    const resource = obj(r.resource, `${outer}[${i}].resource`) ?? {};
    return {
      resource: keyValues(resource.attributes, `${outer}[${i}].resource.attributes`),
      scopes: list(r[inner], `${outer}[${i}].${inner}`).map((sv, j) => {
        const path = `${outer}[${i}].${inner}[${j}]`;
        const s = obj(sv, path) ?? {};
        return {
          scope: scopeOf(s.scope, `${path}.scope`),
          items: list(s[itemsKey], `${path}.${itemsKey}`).map((x, k) => item(x, `${path}.${itemsKey}[${k}]`)),
        };
      }),
    };
  });
}

/**
 * Decodes an ExportTraceServiceRequest in OTLP's JSON encoding.
 * @throws SyntaxError for text that is not JSON, OtlpShapeError for JSON of another shape.
 */
export function decodeTracesJson(text: string): OtlpBatch<OtlpSpan>[] {
  return batches(text, 'resourceSpans', 'scopeSpans', 'spans', span);
}

/**
 * Decodes an ExportLogsServiceRequest in OTLP's JSON encoding.
 * @throws SyntaxError for text that is not JSON, OtlpShapeError for JSON of another shape.
 */
export function decodeLogsJson(text: string): OtlpBatch<OtlpLogRecord>[] {
  return batches(text, 'resourceLogs', 'scopeLogs', 'logRecords', logRecord);
}
