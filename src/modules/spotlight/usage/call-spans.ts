import type { ServiceSpan } from '../../telemetry/service-spans-fns.js';
import { newSpanId, newTraceId, parseTraceparent } from '../../telemetry/trace-context-fns.js';
import type { CallRow } from './calls-rows.js';

/** A recorded call with what a span needs beyond the record (never prompt or completion text). */
export interface RecordedCall extends CallRow {
  /** The provider of the credential that answered. */
  provider?: 'openai' | 'anthropic';
  responseId: string | null;
  finishReasons: string[];
  traceparent: string | null;
  request: { temperature: unknown; maxTokens: unknown; baseUrl: string };
}

/**
 * Told of every recorded call, after its record is written. The telemetry store subscribes here
 * with `(call) => store.write(call.workspaceUuid, genAiSpanOf(call))` once it exists.
 */
export type CallObserver = (call: RecordedCall) => void;

type AttributeValue = string | number | boolean | string[];

/**
 * The OpenTelemetry GenAI attributes of a call's span (kind CLIENT, name `chat <upstream model>`):
 * what the telemetry store will receive for each recorded call. Absent facts are left out.
 */
export function genAiSpanAttributes(call: RecordedCall): Record<string, AttributeValue> {
  const url = new URL(call.request.baseUrl);
  const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  const attributes: Record<string, AttributeValue> = {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': call.provider ?? (call.api === 'anthropic.messages' ? 'anthropic' : 'openai'),
    'taskhook.spotlight.api': call.api,
    'gen_ai.request.model': call.upstreamModel,
    'server.address': url.hostname,
    'server.port': port,
    'taskhook.spotlight.call_id': call.uuid,
    'taskhook.spotlight.cache_hit': call.cacheHit,
    'taskhook.spotlight.usage_estimated': call.usageEstimated,
  };
  const optional: Record<string, AttributeValue | null | undefined> = {
    'gen_ai.response.model': call.responseModel,
    'gen_ai.response.id': call.responseId,
    'gen_ai.response.finish_reasons': call.finishReasons.length > 0 ? call.finishReasons : null,
    'gen_ai.usage.input_tokens': call.inputTokens,
    'gen_ai.usage.output_tokens': call.outputTokens,
    'gen_ai.usage.cache_read.input_tokens': call.cacheReadTokens,
    'gen_ai.usage.cache_creation.input_tokens': call.cacheWriteTokens,
    'gen_ai.request.temperature': typeof call.request.temperature === 'number' ? call.request.temperature : null,
    'gen_ai.request.max_tokens': typeof call.request.maxTokens === 'number' ? call.request.maxTokens : null,
    'error.type': call.error?.code,
    'taskhook.task_id': call.taskUuid,
    'taskhook.agent_uuid': call.agentUuid,
    'taskhook.spotlight.route': call.route?.name,
  };
  for (const [key, value] of Object.entries(optional))
    if (value !== null && value !== undefined) attributes[key] = value;
  return attributes;
}

/** The span of one recorded call (what `genAiSpanOf` makes for the telemetry store). */
export interface GenAiSpan {
  name: string;
  kind: 'client';
  startTime: string;
  durationMs: number;
  status: 'ok' | 'error';
  traceparent: string | null;
  attributes: Record<string, AttributeValue>;
}

/** The span of a recorded call: timing and status from the record, attributes from `genAiSpanAttributes`. */
export function genAiSpanOf(call: RecordedCall): GenAiSpan {
  return {
    name: `chat ${call.upstreamModel}`,
    kind: 'client',
    startTime: call.createdAt,
    durationMs: call.latencyMs,
    status: call.error ? 'error' : 'ok',
    traceparent: call.traceparent,
    attributes: genAiSpanAttributes(call),
  };
}

/**
 * The call's span as one of the service's own spans: in the caller's trace when the call carried
 * a `traceparent` (a worker inside a task's run), else in a trace of its own. Array attributes
 * (finish reasons) are joined, since stored service spans hold scalar values.
 */
export function genAiServiceSpan(call: RecordedCall): ServiceSpan {
  const span = genAiSpanOf(call);
  const parent = parseTraceparent(span.traceparent ?? undefined);
  const startMs = Date.parse(span.startTime);
  const attributes: ServiceSpan['attributes'] = {};
  for (const [key, value] of Object.entries(span.attributes)) {
    attributes[key] = Array.isArray(value) ? value.join(',') : value;
  }
  return {
    traceId: parent?.traceId ?? newTraceId(),
    spanId: newSpanId(),
    parentSpanId: parent?.spanId ?? null,
    name: span.name,
    kind: 'client',
    startMs,
    endMs: startMs + span.durationMs,
    status: span.status,
    attributes,
  };
}
