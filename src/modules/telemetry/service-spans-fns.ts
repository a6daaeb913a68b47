import { type Attributes, msToNanos } from './otlp-values-fns.js';
import { type SpanRow, toSpanRow } from './telemetry-fns.js';
import { deriveSpanId, deriveTraceId } from './trace-context-fns.js';

/** The resource every span of the service's own work carries. */
export const SERVICE_RESOURCE: Attributes = { 'service.name': 'taskhook' };
const SCOPE = { name: 'taskhook', version: '' };

const KIND = { internal: 1, server: 2, client: 3 } as const;
const STATUS = { unset: 0, ok: 1, error: 2 } as const;

/** One span of the service's own work, in plain terms; times in epoch milliseconds. */
export interface ServiceSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string | null | undefined;
  name: string;
  kind: keyof typeof KIND;
  startMs: number;
  endMs: number;
  status: keyof typeof STATUS;
  statusMessage?: string | null | undefined;
  /** Undefined values are left out (e.g. a worker id the claim did not send). */
  attributes: Record<string, string | number | boolean | undefined>;
}

/** A service span to the stored row, exactly as an ingested span with the same content would be. */
export function serviceSpanRow(span: ServiceSpan): SpanRow {
  const attributes: Attributes = {};
  for (const [key, value] of Object.entries(span.attributes)) if (value !== undefined) attributes[key] = value;
  const start = msToNanos(span.startMs);
  const end = msToNanos(Math.max(span.endMs, span.startMs));
  return toSpanRow(
    {
      traceId: span.traceId,
      spanId: span.spanId,
      parentSpanId: span.parentSpanId ?? '',
      name: span.name,
      kind: KIND[span.kind],
      // A zero start is refused for ingested spans; the service's spans always have a real time.
      startNs: start,
      endNs: end,
      attributes,
      events: [],
      statusCode: STATUS[span.status],
      statusMessage: span.statusMessage ?? '',
    },
    SCOPE,
    SERVICE_RESOURCE,
  );
}

/** Where a task's spans hang: its trace, its own span, and the span it is a child of (if any). */
export interface TaskTrace {
  traceId: string;
  taskSpanId: string;
  parentSpanId: string | null;
}

/**
 * A task's trace from what the task stores: the caller's trace and parent span when it joined one
 * (a submit's `traceparent`, the webhook delivery that created it), else a trace of its own. Every
 * id is derived, so any instance computes the same ones.
 */
export function taskTraceOf(task: {
  uuid: string;
  traceId?: string | null;
  traceParentSpanId?: string | null;
}): TaskTrace {
  return {
    traceId: task.traceId ?? deriveTraceId(task.uuid),
    taskSpanId: deriveSpanId('task', task.uuid),
    parentSpanId: task.traceParentSpanId ?? null,
  };
}

/** The span id of the run that holds lease `leaseId`: the parent of the worker's own spans. */
export const runSpanIdOf = (leaseId: string) => deriveSpanId('run', leaseId);

type FinalStatus = 'completed' | 'failed' | 'cancelled';

/** The task span: from creation to the final status. */
export function taskSpan(
  trace: TaskTrace,
  task: {
    uuid: string;
    agentUuid: string;
    agentName: string;
    status: FinalStatus;
    errorMessage?: string | null;
    triggerUuid?: string | null;
    createdAtMs: number;
    endedAtMs: number;
  },
): ServiceSpan {
  const status = task.status === 'completed' ? 'ok' : task.status === 'failed' ? 'error' : 'unset';
  return {
    traceId: trace.traceId,
    spanId: trace.taskSpanId,
    parentSpanId: trace.parentSpanId,
    name: `task ${task.agentName}`,
    kind: 'internal',
    startMs: task.createdAtMs,
    endMs: task.endedAtMs,
    status,
    statusMessage: status === 'error' ? (task.errorMessage ?? null) : null,
    attributes: {
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.id': task.agentUuid,
      'gen_ai.agent.name': task.agentName,
      'taskhook.task_id': task.uuid,
      'taskhook.task.status': task.status,
      'taskhook.trigger_uuid': task.triggerUuid ?? undefined,
    },
  };
}

export type RunOutcome =
  | 'completed'
  | 'failed'
  | 'retried'
  | 'lease_expired'
  | 'timeout'
  | 'awaiting_input'
  | 'released'
  | 'cancelled';

const RUN_STATUS: Record<RunOutcome, ServiceSpan['status']> = {
  completed: 'ok',
  failed: 'error',
  retried: 'error',
  lease_expired: 'error',
  timeout: 'error',
  awaiting_input: 'unset',
  released: 'unset',
  cancelled: 'unset',
};

/** A run span: one claim, from the claim to the end of its lease. */
export function runSpan(
  trace: TaskTrace,
  run: {
    taskUuid: string;
    spanId: string;
    attempt: number;
    leaseId: string;
    workerId?: string | null;
    outcome: RunOutcome;
    errorMessage?: string | null;
    claimedAtMs: number;
    endedAtMs: number;
  },
): ServiceSpan {
  const status = RUN_STATUS[run.outcome];
  return {
    traceId: trace.traceId,
    spanId: run.spanId,
    parentSpanId: trace.taskSpanId,
    name: 'task.run',
    kind: 'internal',
    startMs: run.claimedAtMs,
    endMs: run.endedAtMs,
    status,
    statusMessage: status === 'error' ? (run.errorMessage ?? run.outcome) : null,
    attributes: {
      'taskhook.task_id': run.taskUuid,
      'taskhook.attempt': run.attempt,
      'taskhook.lease_id': run.leaseId,
      'taskhook.worker_id': run.workerId ?? undefined,
      'taskhook.outcome': run.outcome,
    },
  };
}

/** The wait for a person's answer: from the input request until the task leaves awaiting_input. */
export function inputWaitSpan(
  trace: TaskTrace,
  wait: { taskUuid: string; spanId: string; startMs: number; endMs: number },
): ServiceSpan {
  return {
    traceId: trace.traceId,
    spanId: wait.spanId,
    parentSpanId: trace.taskSpanId,
    name: 'task.awaiting_input',
    kind: 'internal',
    startMs: wait.startMs,
    endMs: wait.endMs,
    status: 'unset',
    attributes: { 'taskhook.task_id': wait.taskUuid },
  };
}

/** One callback delivery attempt; send `traceparent: formatTraceparent(traceId, spanId)` with it. */
export function callbackSpan(
  trace: TaskTrace,
  attempt: {
    taskUuid: string;
    spanId: string;
    eventType: string;
    url: string;
    deliveryId: string;
    attempt: number;
    statusCode?: number | null;
    startMs: number;
    endMs: number;
  },
): ServiceSpan {
  const ok = attempt.statusCode != null && attempt.statusCode >= 200 && attempt.statusCode < 300;
  return {
    traceId: trace.traceId,
    spanId: attempt.spanId,
    parentSpanId: trace.taskSpanId,
    name: `callback ${attempt.eventType}`,
    kind: 'client',
    startMs: attempt.startMs,
    endMs: attempt.endMs,
    status: ok ? 'unset' : 'error',
    attributes: {
      'taskhook.task_id': attempt.taskUuid,
      'http.request.method': 'POST',
      'url.full': attempt.url,
      'http.response.status_code': attempt.statusCode ?? undefined,
      'taskhook.delivery_id': attempt.deliveryId,
      'taskhook.callback.attempt': attempt.attempt,
    },
  };
}

/** The webhook delivery that created a task: the parent of the task span. */
export function webhookSpan(delivery: {
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  triggerUuid: string;
  triggerName: string;
  deliveryId: string;
  taskUuid: string;
  receivedAtMs: number;
  answeredAtMs: number;
}): ServiceSpan {
  return {
    traceId: delivery.traceId,
    spanId: delivery.spanId,
    parentSpanId: delivery.parentSpanId,
    name: `webhook ${delivery.triggerName}`,
    kind: 'server',
    startMs: delivery.receivedAtMs,
    endMs: delivery.answeredAtMs,
    status: 'unset',
    attributes: {
      'taskhook.trigger_uuid': delivery.triggerUuid,
      'taskhook.delivery_id': delivery.deliveryId,
      'taskhook.task_id': delivery.taskUuid,
      'http.request.method': 'POST',
      'http.response.status_code': 202,
    },
  };
}

/**
 * An MCP `tools/call` that submitted a task: from the request's arrival until its answer (in task
 * mode, the CreateTaskResult); the parent of the task span.
 */
export function mcpToolCallSpan(call: {
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  toolName: string;
  requestId: string;
  protocolVersion?: string | undefined;
  taskUuid: string;
  receivedAtMs: number;
  answeredAtMs: number;
}): ServiceSpan {
  return {
    traceId: call.traceId,
    spanId: call.spanId,
    parentSpanId: call.parentSpanId,
    name: `tools/call ${call.toolName}`,
    kind: 'server',
    startMs: call.receivedAtMs,
    endMs: call.answeredAtMs,
    status: 'unset',
    attributes: {
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': call.toolName,
      'gen_ai.operation.name': 'execute_tool',
      'jsonrpc.request.id': call.requestId,
      'mcp.protocol.version': call.protocolVersion,
      'taskhook.task_id': call.taskUuid,
    },
  };
}
