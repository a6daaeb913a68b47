import { AppError, type ErrorCode } from '../../../http/errors.js';
import { iso } from '../../../lib/time.js';
import { backoffSeconds, DEFAULT_BACKOFF } from '../../agents/retry-policy.js';
import { outcomeOf, type TaskOperation, type TaskStatus } from '../tasks-fns.js';
import { type LastError, type NewTaskFields, newTaskRecord, type TaskRecord } from '../tasks-record.js';
import type { ConversationMessage, Progress, TaskResult } from '../tasks-schemas.js';

/** How long a claim or a heartbeat holds a task when the worker does not say. */
export const DEFAULT_LEASE_SECONDS = 60;

/** What can happen to a task: a user's request, a worker's report, or the sweeper's look at it. */
export type TaskInput =
  | { op: 'cancel' }
  | { op: 'message'; content: string }
  | { op: 'claim'; leaseId: string; leaseSeconds: number; workerId: string | null }
  | { op: 'progress'; leaseId: string; progress: Progress }
  | { op: 'input_request'; leaseId: string; message: string }
  | { op: 'complete'; leaseId: string; result: TaskResult }
  | {
      op: 'fail';
      leaseId: string;
      error: { code?: string | undefined; message: string };
      retryable: boolean;
      /** The worker asks for at least this wait before the retry (seconds; not capped by the policy). */
      retryAfterSeconds?: number | undefined;
      /** A retry is not handed out before this time (epoch ms; push runtimes' own backoff). */
      retryAtMs?: number;
    }
  /** The service's own heartbeat; `leaseSeconds` changes the lease's length from now on (an http agent's 202). */
  | { op: 'renew'; leaseId: string; leaseSeconds?: number }
  | { op: 'release'; leaseId: string }
  | { op: 'sweep' };

/**
 * A change to save: the fields to write, the task as it will be, the state-machine operation
 * that was applied, and whether readers see it (a new event in the task's stream).
 */
export interface Change {
  operation: TaskOperation;
  changes: Partial<TaskRecord>;
  next: TaskRecord;
  event: boolean;
}

const MESSAGES: Record<string, string> = {
  TASK_NOT_CANCELLABLE: 'Task cannot be cancelled: it has already finished',
  TASK_NOT_ACCEPTING_MESSAGES: 'Task is not accepting messages: it has finished',
  TASK_NOT_RUNNING: 'Task is not running under this lease',
};

/** A task's conversation holds at most this many messages (user and agent together)... */
export const MAX_CONVERSATION_MESSAGES = 200;
/** ...and at most this many characters, so one task cannot grow without bound. */
export const MAX_CONVERSATION_CHARS = 2_000_000;

/** The refusal of a message that would take the conversation past either limit; null when it fits. */
export function conversationLimit(messages: readonly ConversationMessage[], content: string): AppError | null {
  if (messages.length >= MAX_CONVERSATION_MESSAGES) {
    return new AppError('LIMIT_EXCEEDED', `A task holds at most ${MAX_CONVERSATION_MESSAGES} messages`, {
      field: 'message',
      reason: `the conversation already has ${messages.length} messages`,
    });
  }
  let chars = content.length;
  for (const m of messages) chars += m.content.length;
  if (chars > MAX_CONVERSATION_CHARS) {
    return new AppError('LIMIT_EXCEEDED', `A task holds at most ${MAX_CONVERSATION_CHARS} characters of conversation`, {
      field: 'message',
      reason: 'would take the conversation past its character limit',
    });
  }
  return null;
}

const refusal = (code: ErrorCode) => new AppError(code, MESSAGES[code] ?? code);

/**
 * Whether a task waits for a worker: queued, or running with nobody holding it (a user answered
 * its question). Stored with the task (`ready`) only so claims can find such tasks by index.
 */
export function isClaimable(status: TaskStatus, leaseExpiresAt: string | null): boolean {
  return status === 'queued' || (status === 'running' && leaseExpiresAt === null);
}

declare const madeByInitial: unique symbol;

/**
 * A new task in its first state, as `initial` made it. Only `initial` makes one, and the door's
 * `create` takes only this: no creator can put a first state together by hand.
 */
export type NewTask = TaskRecord & { status: 'queued'; readonly [madeByInitial]: true };

/**
 * A task's creation, the first transition: the state a new task starts in, whoever creates it (a
 * submit, a webhook trigger, a schedule, A2A, MCP). Queued, waiting for a worker, attempt 1, its
 * message opening the conversation, and visible as event 1 (the writer announces it as `submit`).
 * Pure: no I/O, no clock.
 */
export function initial(fields: NewTaskFields, nowMs: number): NewTask {
  const status = 'queued';
  const first = { status, ready: isClaimable(status, null), attempt: 1, seq: 1 } as const;
  return newTaskRecord(fields, first, iso(nowMs)) as NewTask;
}

/**
 * Every rule of a task's life in one place: given the task as stored, what happens, and the time,
 * the change to save; `null` when nothing changes (a repeated cancel, a heartbeat on a cancelled
 * task, a sweep with nothing due); or the AppError to answer (refused by the state table, or a
 * report under a lease the task is not running under). Pure: no I/O, no clock.
 *
 * Timeouts: a task's clock starts at its first claim (`timeout_at`), time spent waiting for a user's
 * answer is added back when it arrives, and the sweeper fails a running task past `timeout_at`.
 * Leases: a claim or heartbeat holds the task for `lease_seconds`; a sweep after that queues it
 * again (attempt + 1) or, after the last attempt, fails it with LEASE_EXPIRED.
 */
export function transition(task: TaskRecord, input: TaskInput, nowMs: number): Change | AppError | null {
  const now = iso(nowMs);
  switch (input.op) {
    case 'cancel':
      if (task.status === 'cancelled') return null;
      return apply(task, 'cancel', { leaseExpiresAt: null, cancelledAt: now }, now);
    case 'message':
      return message(task, input.content, nowMs);
    case 'claim':
      return apply(
        task,
        'claim',
        {
          leaseId: input.leaseId,
          leaseSeconds: input.leaseSeconds,
          leaseExpiresAt: iso(nowMs + input.leaseSeconds * 1000),
          workerId: input.workerId,
          claimedAt: now,
          startedAt: task.startedAt ?? now,
          timeoutAt: task.timeoutAt ?? iso(nowMs + task.timeoutSeconds * 1000),
        },
        now,
      );
    case 'progress':
      return progress(task, input.leaseId, input.progress, nowMs);
    case 'renew':
      return renew(task, input.leaseId, nowMs, input.leaseSeconds);
    case 'sweep':
      return sweep(task, nowMs);
    default:
      return report(task, input, nowMs);
  }
}

/** A report of the worker holding the task (not progress): refused unless it holds the lease. */
function report(
  task: TaskRecord,
  input: Extract<TaskInput, { op: 'input_request' | 'complete' | 'fail' | 'release' }>,
  nowMs: number,
): Change | AppError {
  const now = iso(nowMs);
  const outcome = outcomeOf(task.status, input.op);
  if ('error' in outcome) return refusal(outcome.error);
  if (task.leaseId !== input.leaseId || !task.leaseExpiresAt) return refusal('TASK_NOT_RUNNING');
  switch (input.op) {
    case 'input_request':
      return apply(
        task,
        'input_request',
        { leaseExpiresAt: null, inputRequest: { message: input.message, requested_at: now } },
        now,
        { role: 'agent', content: input.message, created_at: now },
      );
    case 'complete':
      return apply(task, 'complete', { leaseExpiresAt: null, result: input.result, completedAt: now }, now);
    case 'release':
      return apply(
        task,
        'release',
        { leaseExpiresAt: null, leaseId: null, estimatedStart: now, availableAt: now },
        now,
      );
    case 'fail': {
      const error = { code: input.error.code ?? 'AGENT_ERROR', message: input.error.message };
      const lastError: LastError = { ...error, attempt: task.attempt, at: now };
      if (input.retryable && task.attempt < task.maxAttempts) {
        const asked = Math.max(input.retryAfterSeconds ?? 0, 0) * 1000;
        const atMs = Math.max(nowMs + Math.max(delayMs(task), asked), input.retryAtMs ?? nowMs);
        return apply(task, 'retry', { ...retried(task, lastError, atMs, nowMs), error }, now);
      }
      return apply(task, 'fail', { leaseExpiresAt: null, error, lastError, failedAt: now }, now);
    }
  }
}

/** Milliseconds the task's policy waits after its current attempt ended retryably. */
function delayMs(task: TaskRecord): number {
  return backoffSeconds(task.backoff ?? DEFAULT_BACKOFF, task.attempt) * 1000;
}

/**
 * The fields of a task queued again for its next attempt: freed, the attempt raised, the failed
 * attempt's error kept, and not handed out before `availableAtMs` (nor estimated to start before it).
 */
function retried(task: TaskRecord, lastError: LastError, availableAtMs: number, nowMs: number): Partial<TaskRecord> {
  const availableAt = iso(availableAtMs);
  return {
    leaseExpiresAt: null,
    leaseId: null,
    attempt: task.attempt + 1,
    lastError,
    availableAt,
    estimatedStart: iso(Math.max(nowMs, availableAtMs)),
  };
}

/** A user's message: joins the conversation; an answer to a question puts the task back to work. */
function message(task: TaskRecord, content: string, nowMs: number): Change | AppError {
  const now = iso(nowMs);
  const fields: Partial<TaskRecord> = {};
  if (task.status === 'awaiting_input') {
    fields.inputRequest = null;
    // Time spent waiting for a person does not count against the task's timeout.
    if (task.timeoutAt && task.inputRequest) {
      const waited = nowMs - Date.parse(task.inputRequest.requested_at);
      fields.timeoutAt = iso(Date.parse(task.timeoutAt) + Math.max(0, waited));
    }
  }
  return apply(task, 'message', fields, now, { role: 'user', content, created_at: now });
}

/**
 * A heartbeat: extends the lease, and records the progress when it differs. A cancelled task
 * answers its holder without a change, so the worker learns it must stop.
 */
function progress(task: TaskRecord, leaseId: string, value: Progress, nowMs: number): Change | AppError | null {
  const outcome = outcomeOf(task.status, 'progress');
  if ('error' in outcome) return refusal(outcome.error);
  if (task.leaseId !== leaseId) return refusal('TASK_NOT_RUNNING');
  if (task.status === 'cancelled') return null;
  if (!task.leaseExpiresAt) return refusal('TASK_NOT_RUNNING');
  const leaseExpiresAt = iso(nowMs + (task.leaseSeconds ?? DEFAULT_LEASE_SECONDS) * 1000);
  const before = task.progress;
  const same =
    before &&
    before.current_step === value.current_step &&
    before.steps_completed === value.steps_completed &&
    before.total_steps === value.total_steps;
  // The same progress again only keeps the lease alive: nothing a reader sees changes.
  if (same)
    return { operation: 'progress', changes: { leaseExpiresAt }, next: { ...task, leaseExpiresAt }, event: false };
  return apply(task, 'progress', { leaseExpiresAt, progress: value }, iso(nowMs));
}

/**
 * The service's own heartbeat while it runs a task (push runtimes): extends the lease, nothing a
 * reader sees changes. A cancelled task answers without a change, so the runner learns it must stop.
 */
function renew(task: TaskRecord, leaseId: string, nowMs: number, seconds?: number): Change | AppError | null {
  const outcome = outcomeOf(task.status, 'progress');
  if ('error' in outcome) return refusal(outcome.error);
  if (task.leaseId !== leaseId) return refusal('TASK_NOT_RUNNING');
  if (task.status === 'cancelled') return null;
  if (!task.leaseExpiresAt) return refusal('TASK_NOT_RUNNING');
  const leaseSeconds = seconds ?? task.leaseSeconds ?? DEFAULT_LEASE_SECONDS;
  const changes = { leaseExpiresAt: iso(nowMs + leaseSeconds * 1000), leaseSeconds };
  return { operation: 'progress', changes, next: { ...task, ...changes }, event: false };
}

/** The sweeper's rules for a running task: an expired lease first, then the timeout. */
function sweep(task: TaskRecord, nowMs: number): Change | AppError | null {
  const now = iso(nowMs);
  if (task.status !== 'running') return null;
  if (task.leaseExpiresAt && task.leaseExpiresAt < now) {
    // The attempt ended when its lease did: the wait before the next one counts from then.
    const at = task.leaseExpiresAt;
    if (task.attempt < task.maxAttempts) {
      const lastError = { code: 'LEASE_EXPIRED', message: 'No heartbeat within the lease', attempt: task.attempt, at };
      return apply(task, 'lease_expired', retried(task, lastError, Date.parse(at) + delayMs(task), nowMs), now);
    }
    const error = {
      code: 'LEASE_EXPIRED',
      message: `No heartbeat within the lease, ${task.maxAttempts} attempts made`,
    };
    const freed = { leaseExpiresAt: null, leaseId: null };
    return apply(
      task,
      'fail',
      { ...freed, error, lastError: { ...error, attempt: task.attempt, at }, failedAt: now },
      now,
    );
  }
  if (task.timeoutAt && task.timeoutAt < now) {
    const error = { code: 'TIMEOUT', message: `Task ran longer than its timeout of ${task.timeoutSeconds} s` };
    const lastError = { ...error, attempt: task.attempt, at: now };
    return apply(task, 'timeout', { leaseExpiresAt: null, error, lastError, failedAt: now }, now);
  }
  return null;
}

/**
 * Applies `operation` through the state table: the new status, `fields`, the time of the change,
 * the message appended to the conversation, whether the task waits for a worker, and the next
 * event number when a reader can see the change (a re-claim after a reply changes nothing visible).
 */
function apply(
  task: TaskRecord,
  operation: TaskOperation,
  fields: Partial<TaskRecord>,
  now: string,
  append?: ConversationMessage,
): Change | AppError {
  const outcome = outcomeOf(task.status, operation);
  if ('error' in outcome) return refusal(outcome.error);
  const status = 'to' in outcome ? outcome.to : task.status;
  const limited = append && conversationLimit(task.messages, append.content);
  if (limited) return limited;
  const changes: Partial<TaskRecord> = { ...fields, status, updatedAt: now };
  if (append) changes.messages = [...task.messages, append];
  const leaseExpiresAt = 'leaseExpiresAt' in fields ? (fields.leaseExpiresAt ?? null) : task.leaseExpiresAt;
  changes.ready = isClaimable(status, leaseExpiresAt);
  const event = status !== task.status || append !== undefined || fields.progress !== undefined;
  if (event) changes.seq = task.seq + 1;
  return { operation, changes, next: { ...task, ...changes }, event };
}
