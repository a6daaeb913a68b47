import type { Logger } from 'pino';
import { afterCommit, type Executor } from '../../db/transactions.js';
import {
  inputWaitSpan,
  type RunOutcome,
  runSpan,
  runSpanIdOf,
  type ServiceSpan,
  taskSpan,
  taskTraceOf,
} from './service-spans-fns.js';
import { deriveSpanId } from './trace-context-fns.js';

/**
 * The statuses that end a task span: the tasks room's `FINAL_STATUSES`, which telemetry (below
 * tasks) cannot import; a test keeps the two equal.
 */
export const TASK_SPAN_END_STATUSES: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled']);

/**
 * The fields of a task the tracer reads. The tasks room's record has them all; naming them here
 * keeps telemetry below tasks (tasks builds its trace headers with telemetry's functions).
 */
export interface TracedTask {
  uuid: string;
  agentUuid: string;
  workspaceUuid: string;
  status: string;
  attempt: number;
  leaseId: string | null;
  leaseExpiresAt: string | null;
  workerId: string | null;
  inputRequest: { requested_at: string } | null;
  error: { code: string; message: string } | null;
  metadata: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
  claimedAt?: string | null;
  traceId?: string | null;
  traceParentSpanId?: string | null;
}

/** A saved change of a task as the tasks room announces it, inside the change's transaction. */
export interface TracedChange {
  trx: Executor;
  /** The transition's operation (`submit` for a new task, whose `before` is null). */
  operation: string;
  before: TracedTask | null;
  task: TracedTask;
}

/** How the run that held `before`'s lease ended, judged by the operation and where it led. */
function runOutcome(operation: string, task: TracedTask): RunOutcome {
  switch (operation) {
    case 'complete':
      return 'completed';
    case 'fail':
      return task.status === 'failed' ? 'failed' : 'retried';
    case 'retry':
      return 'retried';
    case 'input_request':
      return 'awaiting_input';
    case 'release':
      return 'released';
    case 'cancel':
      return 'cancelled';
    case 'timeout':
      return 'timeout';
    default:
      // The sweeper: a lease that ran out, or the task's own time that did.
      return task.status === 'failed' && task.error?.code === 'TIMEOUT' ? 'timeout' : 'lease_expired';
  }
}

const ms = (at: string | null | undefined, fallback: number) => (at ? Date.parse(at) : fallback);

/**
 * The spans one saved change of a task ends: the run whose lease it ended, the wait for input it
 * ended, and the task span when it reached a final status. Pure; task spans carry no agent name
 * yet (filled in by the recorder).
 */
export function spansOfChange(event: Pick<TracedChange, 'operation' | 'before' | 'task'>): ServiceSpan[] {
  const { before, task, operation } = event;
  if (!before) return [];
  const trace = taskTraceOf(task);
  const endMs = Date.parse(task.updatedAt);
  const spans: ServiceSpan[] = [];
  if (before.leaseId && before.leaseExpiresAt && (task.leaseId !== before.leaseId || !task.leaseExpiresAt)) {
    spans.push(
      runSpan(trace, {
        taskUuid: task.uuid,
        spanId: runSpanIdOf(before.leaseId),
        attempt: before.attempt,
        leaseId: before.leaseId,
        workerId: before.workerId,
        outcome: runOutcome(operation, task),
        errorMessage: task.error?.message ?? null,
        claimedAtMs: ms(before.claimedAt, endMs),
        endedAtMs: endMs,
      }),
    );
  }
  if (before.status === 'awaiting_input' && task.status !== 'awaiting_input' && before.inputRequest) {
    const requestedAt = before.inputRequest.requested_at;
    spans.push(
      inputWaitSpan(trace, {
        taskUuid: task.uuid,
        spanId: deriveSpanId('input', task.uuid, requestedAt),
        startMs: ms(requestedAt, endMs),
        endMs,
      }),
    );
  }
  if (TASK_SPAN_END_STATUSES.has(task.status) && before.status !== task.status) {
    spans.push(
      taskSpan(trace, {
        uuid: task.uuid,
        agentUuid: task.agentUuid,
        agentName: '',
        status: task.status as 'completed' | 'failed' | 'cancelled',
        errorMessage: task.error?.message ?? null,
        triggerUuid: typeof task.metadata.trigger_uuid === 'string' ? task.metadata.trigger_uuid : null,
        createdAtMs: Date.parse(task.createdAt),
        endedAtMs: endMs,
      }),
    );
  }
  return spans;
}

/**
 * Records the service's own spans of tasks, best-effort: spans are queued after the change
 * commits and written in one batch per workspace on the next turn of the event loop, so tracing never
 * fails or slows a request; a write that fails is logged and dropped.
 */
export function createTaskTracer(deps: {
  record: (workspaceUuid: string, spans: ServiceSpan[]) => Promise<void>;
  agentName: (workspaceUuid: string, agentUuid: string) => Promise<string | null>;
  logger: Pick<Logger, 'warn'>;
}) {
  let queue: Array<{ workspaceUuid: string; spans: ServiceSpan[] }> = [];
  let writing: Promise<void> = Promise.resolve();
  let scheduled = false;

  /** The task spans named after their agent: one lookup per agent of the batch, not one per task. */
  async function named(workspaceUuid: string, spans: ServiceSpan[]): Promise<ServiceSpan[]> {
    const names = new Map<string, Promise<string>>();
    const nameOf = (agentUuid: string) => {
      let name = names.get(agentUuid);
      if (!name) {
        name = deps
          .agentName(workspaceUuid, agentUuid)
          .catch(() => null)
          .then((found) => found ?? agentUuid);
        names.set(agentUuid, name);
      }
      return name;
    };
    return Promise.all(
      spans.map(async (span) => {
        if (span.name !== 'task ') return span;
        const name = await nameOf(String(span.attributes['gen_ai.agent.id']));
        return { ...span, name: `task ${name}`, attributes: { ...span.attributes, 'gen_ai.agent.name': name } };
      }),
    );
  }

  async function write(batch: typeof queue) {
    const byWorkspace = new Map<string, ServiceSpan[]>();
    for (const { workspaceUuid, spans } of batch) {
      const list = byWorkspace.get(workspaceUuid);
      if (list) list.push(...spans);
      else byWorkspace.set(workspaceUuid, [...spans]);
    }
    for (const [workspaceUuid, spans] of byWorkspace) {
      try {
        await deps.record(workspaceUuid, await named(workspaceUuid, spans));
      } catch (err) {
        deps.logger.warn({ err, spans: spans.length }, 'service spans not recorded');
      }
    }
  }

  function enqueue(workspaceUuid: string, spans: ServiceSpan[]) {
    queue.push({ workspaceUuid, spans });
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      const batch = queue;
      queue = [];
      writing = writing.then(() => write(batch));
    });
  }

  return {
    enqueue,
    /** Hears every saved change of a task: queues the spans it ended once it commits. */
    onChange(event: TracedChange): void {
      const spans = spansOfChange(event);
      if (spans.length > 0) afterCommit(event.trx, () => enqueue(event.task.workspaceUuid, spans));
    },
    /** Resolves once everything queued so far is written (tests, shutdown). */
    async flush(): Promise<void> {
      await new Promise((resolve) => setImmediate(resolve));
      await writing;
    },
  };
}

export type TaskTracer = ReturnType<typeof createTaskTracer>;
