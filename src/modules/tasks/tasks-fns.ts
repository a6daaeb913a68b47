import { createHash } from 'node:crypto';
import type { ErrorCode } from '../../http/errors.js';

export const TASK_STATUSES = ['queued', 'running', 'awaiting_input', 'completed', 'failed', 'cancelled'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

/** Every operation that can touch a task, by users (cancel, message) and by workers and the sweeper. */
export const TASK_OPERATIONS = [
  'cancel',
  'message',
  'claim',
  'progress',
  'input_request',
  'complete',
  'fail',
  'retry',
  'release',
  'lease_expired',
  'timeout',
] as const;
export type TaskOperation = (typeof TASK_OPERATIONS)[number];

/**
 * What an operation does in a state: move to a status, keep it (`same`: e.g. a message appended
 * to a running task, or a repeated cancel), or refuse with an error code.
 */
export type Outcome = { to: TaskStatus } | { same: true } | { error: ErrorCode };

const NOT_RUNNING = { error: 'TASK_NOT_RUNNING' } as const;
const SAME = { same: true } as const;

/** Worker and sweeper operations are refused unless the task is running. */
const WORKER_REFUSED = {
  claim: NOT_RUNNING,
  progress: NOT_RUNNING,
  input_request: NOT_RUNNING,
  complete: NOT_RUNNING,
  fail: NOT_RUNNING,
  retry: NOT_RUNNING,
  release: NOT_RUNNING,
  lease_expired: NOT_RUNNING,
  timeout: NOT_RUNNING,
} as const;

/**
 * The task state machine: (state, operation) → outcome. Every code path consults this table.
 * `claim` on a running task picks up one that is waiting for a worker again after a user's reply.
 * `progress` on a cancelled task answers with its status so the worker learns it must stop.
 * `release` hands a task back unfinished (a worker shutting down): queued again, attempt unchanged.
 */
export const TRANSITIONS: Record<TaskStatus, Record<TaskOperation, Outcome>> = {
  queued: { ...WORKER_REFUSED, claim: { to: 'running' }, cancel: { to: 'cancelled' }, message: SAME },
  running: {
    claim: SAME,
    progress: SAME,
    input_request: { to: 'awaiting_input' },
    complete: { to: 'completed' },
    fail: { to: 'failed' },
    retry: { to: 'queued' },
    release: { to: 'queued' },
    lease_expired: { to: 'queued' },
    timeout: { to: 'failed' },
    cancel: { to: 'cancelled' },
    message: SAME,
  },
  awaiting_input: { ...WORKER_REFUSED, cancel: { to: 'cancelled' }, message: { to: 'running' } },
  completed: {
    ...WORKER_REFUSED,
    cancel: { error: 'TASK_NOT_CANCELLABLE' },
    message: { error: 'TASK_NOT_ACCEPTING_MESSAGES' },
  },
  failed: {
    ...WORKER_REFUSED,
    cancel: { error: 'TASK_NOT_CANCELLABLE' },
    message: { error: 'TASK_NOT_ACCEPTING_MESSAGES' },
  },
  cancelled: {
    ...WORKER_REFUSED,
    progress: SAME,
    cancel: SAME,
    message: { error: 'TASK_NOT_ACCEPTING_MESSAGES' },
  },
};

export function outcomeOf(status: TaskStatus, operation: TaskOperation): Outcome {
  return TRANSITIONS[status][operation];
}

/** The statuses a task never leaves: every waiter, stream and query that asks "is it over?" uses this set. */
export const FINAL_STATUSES: ReadonlySet<TaskStatus> = new Set(['completed', 'failed', 'cancelled']);
/** The statuses a task can still leave (not final). */
export const OPEN_STATUSES: readonly TaskStatus[] = TASK_STATUSES.filter((s) => !FINAL_STATUSES.has(s));

/**
 * Whether the task waits on nobody but its user: finished, or awaiting input. A blocking call
 * answers then (A2A's blocking send), a stream of A2A updates ends, a callback announces it.
 */
export function isSettled(status: TaskStatus): boolean {
  return FINAL_STATUSES.has(status) || status === 'awaiting_input';
}

/** JSON with object keys sorted at every depth: equal values give equal text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The fingerprint of a submit request, for Idempotency-Key comparisons. */
export function requestHash(agentUuid: string, body: unknown): string {
  return createHash('sha256')
    .update(canonicalJson({ agent: agentUuid, body }))
    .digest('hex');
}

/**
 * When a newly queued task should start, in ms since the epoch.
 * `ahead` tasks wait before it; `free` worker slots are open now (concurrency minus held);
 * each wave of `concurrency` tasks takes `avgRunMs`. A task that fits in a free slot starts now.
 */
export function estimateStart(input: {
  now: number;
  ahead: number;
  free: number;
  concurrency: number;
  avgRunMs: number;
}): number {
  const { now, ahead, free, concurrency, avgRunMs } = input;
  if (ahead < free) return now;
  const waves = Math.floor((ahead - Math.max(0, free)) / Math.max(1, concurrency)) + 1;
  return now + waves * avgRunMs;
}

/** The fields of an agent that bound what its claims may take. */
interface ClaimBounds {
  status: string;
  concurrency: number;
  concurrency_per_key: number | null;
}

/**
 * Whether a change of an agent may let a claim take a task it could not take before: the agent
 * became active, or its concurrency (overall or per key) grew or its per-key cap was removed.
 * Its tasks did not change, so no task change announces it: the change itself must.
 */
export function widensClaims(before: ClaimBounds, after: ClaimBounds): boolean {
  if (after.status !== 'active') return false;
  if (before.status !== 'active' || after.concurrency > before.concurrency) return true;
  if (after.concurrency_per_key === before.concurrency_per_key || before.concurrency_per_key === null) return false;
  return after.concurrency_per_key === null || after.concurrency_per_key > before.concurrency_per_key;
}
