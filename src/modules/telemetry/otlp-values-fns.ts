/**
 * Pure conversions shared by the protobuf and JSON decoders: attribute values to JSON, ids to
 * lowercase hex, nanosecond times to ISO 8601. OTLP is the protocol; these are its house rules.
 */

/** A JSON value as stored and returned for OTLP `AnyValue`s. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type Attributes = Record<string, JsonValue>;

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const NS_PER_MS = 1_000_000n;
/** Largest fixed64 value: times are unsigned 64-bit nanoseconds. */
const MAX_U64 = (1n << 64n) - 1n;
const MIN_I64 = -(1n << 63n);
const MAX_I64 = (1n << 63n) - 1n;

/** An OTLP int64 as JSON: a number when exactly representable, else its decimal string. */
export function intToJson(value: bigint): JsonValue {
  return value <= MAX_SAFE && value >= -MAX_SAFE ? Number(value) : value.toString();
}

/** An OTLP double as JSON: the number, or `"NaN"`, `"Infinity"`, `"-Infinity"`, which JSON cannot hold. */
export function doubleToJson(value: number): JsonValue {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Number.POSITIVE_INFINITY) return 'Infinity';
  if (value === Number.NEGATIVE_INFINITY) return '-Infinity';
  return value;
}

/** Key/value pairs to an object; a repeated key: the last one wins. */
export function attributesOf(pairs: Iterable<[string, JsonValue]>): Attributes {
  const out: Attributes = Object.create(null);
  for (const [key, value] of pairs) out[key] = value;
  return { ...out };
}

/** Bytes to lowercase hex ('' for none). */
export function bytesToHex(bytes: Uint8Array | null | undefined): string {
  return bytes && bytes.length > 0 ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex') : '';
}

/**
 * A hex id of the JSON encoding to lowercase hex; a string that is not hex stays as it is, so the
 * item's length check rejects it.
 */
export function normaliseHexId(value: string): string {
  return /^[0-9a-fA-F]*$/.test(value) ? value.toLowerCase() : `!${value}`;
}

/** True when `hex` is an id of `bytes` bytes that is not all zeros. */
export function isValidId(hex: string, bytes: number): boolean {
  return hex.length === bytes * 2 && /^[0-9a-f]+$/.test(hex) && !/^0+$/.test(hex);
}

/** An unsigned 64-bit decimal string, or null when `text` is not one. */
export function parseU64(text: string): bigint | null {
  if (!/^\d{1,20}$/.test(text)) return null;
  const value = BigInt(text);
  return value <= MAX_U64 ? value : null;
}

/** A signed 64-bit decimal string, or null when `text` is not one. */
export function parseI64(text: string): bigint | null {
  if (!/^-?\d{1,20}$/.test(text)) return null;
  const value = BigInt(text);
  return value >= MIN_I64 && value <= MAX_I64 ? value : null;
}

/** Nanoseconds since the epoch to ISO 8601 UTC, truncated to the millisecond. */
export function nanosToIso(nanos: bigint): string {
  return new Date(Number(nanos / NS_PER_MS)).toISOString();
}

/** Milliseconds to nanoseconds, as the decimal string stored for a time. */
export function msToNanos(ms: number): bigint {
  return BigInt(Math.trunc(ms)) * NS_PER_MS;
}

/** A time key that sorts as text in numeric order: 20 digits, zero-padded. */
export function timeKey(nanos: bigint): string {
  return nanos.toString().padStart(20, '0');
}

/** (end − start) in milliseconds, not rounded. */
export function durationMs(startNs: bigint, endNs: bigint): number {
  const diff = endNs - startNs;
  return Number(diff / NS_PER_MS) + Number(diff % NS_PER_MS) / 1e6;
}

const ISO_RE = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/i;

/**
 * An ISO 8601 timestamp with a time zone to nanoseconds since the epoch, keeping sub-millisecond
 * digits; null when the text is not such a timestamp.
 */
export function isoToNanos(text: string): bigint | null {
  const m = ISO_RE.exec(text);
  if (!m) return null;
  const seconds = Date.parse(`${m[1]}${m[3]?.toUpperCase()}`);
  if (Number.isNaN(seconds) || seconds < 0) return null;
  return BigInt(seconds) * NS_PER_MS + BigInt((m[2] ?? '').padEnd(9, '0'));
}
