import type { TaskRecord } from '../tasks/tasks-record.js';
import type { Finding } from './findings-fns.js';

/**
 * What every push runtime (the service hands the task to a model, an HTTP endpoint or a remote
 * A2A agent) is given for one run, and what it answers. The dispatcher claims the task (status
 * `running`, `leaseId` set) and calls the runtime's `run`; the task runner applies the outcome
 * through the task lifecycle under that lease.
 */
export interface PushRun<R> {
  /** The claimed task: `leaseId`, `attempt`, `leaseExpiresAt`, `timeoutAt` and the whole conversation. */
  task: TaskRecord;
  /** The agent's runtime as stored, with header values decrypted. */
  runtime: R;
  /** Aborted by cancel, timeout or shutdown (`signal.reason`): close the request in flight at once. */
  signal: AbortSignal;
  /** W3C traceparent of this run's span; sent as a `traceparent` header where the protocol allows. */
  traceparent: string;
  /**
   * What a runtime remembered about this task in an earlier run (e.g. the remote A2A task's id and
   * context, so a person's reply continues the same remote task), or null.
   */
  state: Record<string, unknown> | null;
  /** Stores what the runtime must remember for the next run of this task; durable before it resolves. */
  saveState(state: Record<string, unknown> | null): Promise<void>;
}

export type TaskResultOut = { summary: string; findings: Finding[] } & Record<string, unknown>;

/** How a run ended; the runner turns it into a lifecycle transition. */
export type PushOutcome =
  | { kind: 'completed'; result: TaskResultOut }
  | { kind: 'input_request'; message: string }
  | {
      kind: 'failed';
      /** The task's `error.code`, e.g. PROVIDER_ERROR, BUDGET_EXCEEDED, DELIVERY_FAILED, AGENT_ERROR, AGENT_REJECTED. */
      code: string;
      message: string;
      retryable: boolean;
      /** A Retry-After of the failed answer, in ms from now; null when none. */
      retryAfterMs: number | null;
    }
  /** The remote agent cancelled the task itself. */
  | { kind: 'cancelled'; message: string }
  /** The agent accepted the task and reports later with the lease (http 202): it stays running. */
  | { kind: 'accepted'; leaseSeconds: number }
  /** The run's signal ended it (cancel, timeout, shutdown): nothing to apply here. */
  | { kind: 'aborted' };

/** One push runtime. */
export interface PushRuntime<R> {
  run(run: PushRun<R>): Promise<PushOutcome>;
  /**
   * Tells the remote that a task it held was cancelled or timed out (one attempt, outcome ignored);
   * `state` as last saved. Optional: a model has nothing to tell.
   */
  cancelled?(args: { task: TaskRecord; runtime: R; state: Record<string, unknown> | null }): Promise<void>;
}
