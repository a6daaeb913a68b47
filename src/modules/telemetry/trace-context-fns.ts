import { createHash, randomBytes } from 'node:crypto';

/** A W3C trace context: who the parent of the next span is. */
export interface TraceContext {
  traceId: string;
  spanId: string;
  sampled: boolean;
}

const HEX = /^[0-9a-f]+$/;
const isZero = (hex: string) => /^0+$/.test(hex);

/**
 * Reads a W3C `traceparent` header; null for anything invalid (an invalid header is ignored, never
 * an error). Version `ff` is refused; later versions may append fields after the four known ones.
 */
export function parseTraceparent(header: string | string[] | undefined): TraceContext | null {
  if (typeof header !== 'string') return null;
  const value = header.trim().toLowerCase();
  const parts = value.split('-');
  const [version, traceId, spanId, flags] = parts;
  if (!version || !traceId || !spanId || !flags) return null;
  if (version.length !== 2 || !HEX.test(version) || version === 'ff') return null;
  if (version === '00' && parts.length !== 4) return null;
  if (traceId.length !== 32 || !HEX.test(traceId) || isZero(traceId)) return null;
  if (spanId.length !== 16 || !HEX.test(spanId) || isZero(spanId)) return null;
  if (flags.length !== 2 || !HEX.test(flags)) return null;
  return { traceId, spanId, sampled: (Number.parseInt(flags, 16) & 1) === 1 };
}

/** The `traceparent` that makes `spanId` of `traceId` the parent of the receiver's spans. */
export function formatTraceparent(traceId: string, spanId: string): string {
  return `00-${traceId}-${spanId}-01`;
}

/** A new random trace id (16 bytes, lowercase hex). */
export function newTraceId(): string {
  const id = randomBytes(16).toString('hex');
  return isZero(id) ? newTraceId() : id;
}

/** A new random span id (8 bytes, lowercase hex). */
export function newSpanId(): string {
  const id = randomBytes(8).toString('hex');
  return isZero(id) ? newSpanId() : id;
}

/**
 * A span id derived from stable names (e.g. `['task', taskUuid]`, `['run', leaseId]`), so every
 * instance computes the same id for the same piece of work without storing it.
 */
export function deriveSpanId(...parts: string[]): string {
  const id = createHash('sha256').update(parts.join('\u0000')).digest('hex').slice(0, 16);
  return isZero(id) ? 'f'.repeat(16) : id;
}

/** A trace id derived from stable names, for a task that did not join a caller's trace. */
export function deriveTraceId(...parts: string[]): string {
  const id = createHash('sha256')
    .update(`trace\u0000${parts.join('\u0000')}`)
    .digest('hex')
    .slice(0, 32);
  return isZero(id) ? 'f'.repeat(32) : id;
}
