import { Type } from '@sinclair/typebox';
import { setting } from './settings-fns.js';

/**
 * The telemetry store (retention, ingest limits) and the model proxy (timeouts, size limits, cache, call records).
 * Spread into `SETTINGS` (settings.ts) at their place in the README's order.
 */
export const OBSERVABILITY_SETTINGS = {
  telemetryRetentionDays: setting({
    env: 'TASKHOOK_TELEMETRY_RETENTION_DAYS',
    schema: Type.Integer({ minimum: 1, maximum: 3650 }),
    default: 30,
    doc: 'Spans that ended, and log records timed, longer ago than this are never returned or counted, and are deleted by housekeeping (every TASKHOOK_HOUSEKEEPING_INTERVAL_MS, in small batches).',
  }),
  telemetryMaxBodyBytes: setting({
    env: 'TASKHOOK_TELEMETRY_MAX_BODY_BYTES',
    schema: Type.Integer({ minimum: 1024 }),
    default: 4 * 1024 * 1024,
    doc: 'Largest OTLP ingest body, counted after gzip inflation (413 beyond). `TASKHOOK_MAX_BODY_BYTES` does not apply to ingest.',
  }),
  telemetryMaxRecords: setting({
    env: 'TASKHOOK_TELEMETRY_MAX_RECORDS',
    schema: Type.Integer({ minimum: 1000 }),
    default: 5_000_000,
    doc: 'Most spans and log records one account keeps within retention. An export that would go beyond is refused whole: 200 with `partialSuccess` rejecting all of it and an `errorMessage` naming this setting (so exporters do not retry).',
  }),
  proxyTimeoutMs: setting({
    env: 'TASKHOOK_PROXY_TIMEOUT_MS',
    schema: Type.Integer({ minimum: 100 }),
    default: 600_000,
    doc: "Model proxy: longest wait for an upstream's response headers, for a whole non-streamed body, and between two streamed chunks (then 504, or an error event ending the stream).",
  }),
  proxyMaxBodyBytes: setting({
    env: 'TASKHOOK_PROXY_MAX_BODY_BYTES',
    schema: Type.Integer({ minimum: 1024 }),
    default: 20 * 1024 * 1024,
    doc: "Model proxy: largest chat-completion request body (413 in OpenAI's error shape).",
  }),
  proxyMaxAnswerBytes: setting({
    env: 'TASKHOOK_PROXY_MAX_ANSWER_BYTES',
    schema: Type.Integer({ minimum: 1024 }),
    default: 16 * 1024 * 1024,
    doc: 'Model proxy: largest non-streamed upstream answer (it is read whole to count usage); a larger one is dropped and answered 502 `upstream_error` naming the limit.',
  }),
  proxyMaxEventBytes: setting({
    env: 'TASKHOOK_PROXY_MAX_EVENT_BYTES',
    schema: Type.Integer({ minimum: 1024 }),
    default: 1024 * 1024,
    doc: 'Model proxy: largest single event of a streamed answer (text up to its blank line); past it the stream ends with an error event and the call is recorded as `upstream_error`.',
  }),
  proxyMaxStreamBytes: setting({
    env: 'TASKHOOK_PROXY_MAX_STREAM_BYTES',
    schema: Type.Integer({ minimum: 1024 }),
    default: 32 * 1024 * 1024,
    doc: 'Model proxy: largest whole streamed answer; past it the stream ends with an error event and the call is recorded as `upstream_error`.',
  }),
  proxyMaxInFlightPerAccount: setting({
    env: 'TASKHOOK_PROXY_MAX_IN_FLIGHT_PER_ACCOUNT',
    schema: Type.Integer({ minimum: 1 }),
    default: 32,
    doc: "Model proxy: calls (`/spotlight/v1/*`) one user may have in flight on one instance; one more is answered 429 `LIMIT_EXCEEDED` in OpenAI's error shape with `Retry-After`.",
  }),
  proxyCacheMaxBytes: setting({
    env: 'TASKHOOK_PROXY_CACHE_MAX_BYTES',
    schema: Type.Integer({ minimum: 0 }),
    default: 104_857_600,
    doc: "Model proxy: memory the response cache may hold on one instance (each answer's bytes plus 1,024 per entry); the least recently used entries are evicted first, across all workspaces. `0` turns the cache off.",
  }),
  spotlightRetentionDays: setting({
    env: 'TASKHOOK_SPOTLIGHT_RETENTION_DAYS',
    schema: Type.Integer({ minimum: 1, maximum: 36500 }),
    default: 400,
    doc: 'Model call records older than this are deleted by housekeeping (every TASKHOOK_HOUSEKEEPING_INTERVAL_MS).',
  }),
};
