import type { Selectable } from 'kysely';
import type { TasksTable } from '../../db/database.js';
import { fromDbJson, toDbJson } from '../../db/json.js';
import { type Backoff, DEFAULT_RETRY } from '../agents/retry-policy.js';
import type { TaskStatus } from './tasks-fns.js';
import type { ConversationMessage, Progress, TaskResult } from './tasks-schemas.js';

/** A task as the code sees it, and its mapping to and from the tasks table. */
export interface TaskRecord {
  uuid: string;
  agentUuid: string;
  workspaceUuid: string;
  status: TaskStatus;
  /**
   * Waits for a worker. Always `isClaimable(status, leaseExpiresAt)`: the transition function sets
   * it on every change; it is stored only so claims find such tasks by index.
   */
  ready: boolean;
  priority: number;
  message: string;
  /** The conversation, the original message first. */
  messages: ConversationMessage[];
  metadata: Record<string, unknown>;
  callbackMode: 'poll' | 'webhook';
  webhookUrl: string | null;
  timeoutSeconds: number;
  attempt: number;
  leaseId: string | null;
  leaseSeconds: number | null;
  /** Set only while a worker holds the task. */
  leaseExpiresAt: string | null;
  workerId: string | null;
  progress: Progress | null;
  inputRequest: { message: string; requested_at: string } | null;
  result: TaskResult | null;
  error: { code: string; message: string } | null;
  estimatedStart: string;
  createdAt: string;
  updatedAt: string;
  startedAt: string | null;
  timeoutAt: string | null;
  completedAt: string | null;
  failedAt: string | null;
  cancelledAt: string | null;
  /** Event sequence number: increases with every visible change. */
  seq: number;
  /** The caller's trace this task joined (a submit's `traceparent`, a webhook delivery); null: its own. */
  traceId?: string | null;
  /** The caller's span the task span hangs under; null for a root task span. */
  traceParentSpanId?: string | null;
  /** When the current (or last) run was claimed: the start of its run span. */
  claimedAt?: string | null;
  /** Tasks of one key share the agent's per-key cap and are served in turn with other keys; never changes. */
  concurrencyKey: string | null;
  /** Attempts in all (the agent's retry policy when the task was created). */
  maxAttempts: number;
  /** The wait between attempts; null: the default backoff. */
  backoff: Backoff | null;
  /** The error of the most recent attempt that ended in a failure. */
  lastError: LastError | null;
  /** No claim hands the task out before this instant (shown while queued). */
  availableAt: string;
  /** The task this one is a rerun of; null: not a rerun. */
  rerunOf: string | null;
  /** The parent task; null: none (always, until child tasks exist). */
  parentTaskId: string | null;
}

/** The error of an attempt that ended in a failure, and when and which attempt it was. */
export interface LastError {
  code: string;
  message: string;
  attempt: number;
  at: string;
}

const JSON_FIELDS = new Set([
  'messages',
  'metadata',
  'progress',
  'inputRequest',
  'result',
  'error',
  'backoff',
  'lastError',
]);
export const COLUMNS: Record<keyof TaskRecord, keyof TasksTable> = {
  uuid: 'uuid',
  agentUuid: 'agent_uuid',
  workspaceUuid: 'workspace_uuid',
  status: 'status',
  ready: 'ready',
  priority: 'priority',
  message: 'message',
  messages: 'messages',
  metadata: 'metadata',
  callbackMode: 'callback_mode',
  webhookUrl: 'webhook_url',
  timeoutSeconds: 'timeout_seconds',
  attempt: 'attempt',
  leaseId: 'lease_id',
  leaseSeconds: 'lease_seconds',
  leaseExpiresAt: 'lease_expires_at',
  workerId: 'worker_id',
  progress: 'progress',
  inputRequest: 'input_request',
  result: 'result',
  error: 'error',
  estimatedStart: 'estimated_start',
  createdAt: 'created_at',
  updatedAt: 'updated_at',
  startedAt: 'started_at',
  timeoutAt: 'timeout_at',
  completedAt: 'completed_at',
  failedAt: 'failed_at',
  cancelledAt: 'cancelled_at',
  seq: 'seq',
  traceId: 'trace_id',
  traceParentSpanId: 'trace_parent_span_id',
  claimedAt: 'claimed_at',
  concurrencyKey: 'concurrency_key',
  maxAttempts: 'max_attempts',
  backoff: 'backoff',
  lastError: 'last_error',
  availableAt: 'available_at',
  rerunOf: 'rerun_of',
  parentTaskId: 'parent_task_id',
};

/**
 * The PostgreSQL type of each column that is not text. A value given as a parameter of a VALUES
 * list has no column to take its type from, so a set-based update casts it to this.
 */
export const PG_TYPES: Partial<Record<keyof TasksTable, 'jsonb' | 'boolean' | 'integer'>> = {
  ready: 'boolean',
  priority: 'integer',
  messages: 'jsonb',
  metadata: 'jsonb',
  timeout_seconds: 'integer',
  attempt: 'integer',
  lease_seconds: 'integer',
  progress: 'jsonb',
  input_request: 'jsonb',
  result: 'jsonb',
  error: 'jsonb',
  seq: 'integer',
  max_attempts: 'integer',
  backoff: 'jsonb',
  last_error: 'jsonb',
};

/** Record fields → column values (JSON as text, booleans as 1/0). */
export function toColumns(fields: Partial<TaskRecord>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields) as Array<[keyof TaskRecord, unknown]>) {
    if (value === undefined) continue;
    const column = COLUMNS[key];
    if (key === 'ready') out[column] = value ? 1 : 0;
    else if (JSON_FIELDS.has(key)) out[column] = value === null ? null : toDbJson(value);
    else out[column] = value;
  }
  return out;
}

export function toRecord(row: Selectable<TasksTable>): TaskRecord {
  const json = <T>(v: unknown) => (v === null ? null : fromDbJson<T>(v));
  return {
    uuid: row.uuid,
    agentUuid: row.agent_uuid,
    workspaceUuid: row.workspace_uuid,
    status: row.status as TaskStatus,
    ready: Boolean(row.ready),
    priority: row.priority,
    message: row.message,
    messages: fromDbJson(row.messages),
    metadata: fromDbJson(row.metadata),
    callbackMode: row.callback_mode as TaskRecord['callbackMode'],
    webhookUrl: row.webhook_url,
    timeoutSeconds: row.timeout_seconds,
    attempt: row.attempt,
    leaseId: row.lease_id,
    leaseSeconds: row.lease_seconds,
    leaseExpiresAt: row.lease_expires_at,
    workerId: row.worker_id,
    progress: json(row.progress),
    inputRequest: json(row.input_request),
    result: json(row.result),
    error: json(row.error),
    estimatedStart: row.estimated_start,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    startedAt: row.started_at,
    timeoutAt: row.timeout_at,
    completedAt: row.completed_at,
    failedAt: row.failed_at,
    cancelledAt: row.cancelled_at,
    seq: row.seq,
    traceId: row.trace_id,
    traceParentSpanId: row.trace_parent_span_id,
    claimedAt: row.claimed_at,
    concurrencyKey: row.concurrency_key,
    maxAttempts: row.max_attempts,
    backoff: json(row.backoff),
    lastError: json(row.last_error),
    availableAt: row.available_at,
    rerunOf: row.rerun_of,
    parentTaskId: row.parent_task_id,
  };
}

/**
 * The fields a creator (submit, a webhook trigger, a schedule, A2A, MCP) decides for a new task:
 * its agent's retry policy (default: 3 attempts, the default backoff) and, for a delayed start,
 * the instant it may be handed out (default, and never earlier than: its creation), and for a
 * rerun the task it was made from.
 */
export type NewTaskFields = Pick<
  TaskRecord,
  | 'uuid'
  | 'agentUuid'
  | 'workspaceUuid'
  | 'priority'
  | 'message'
  | 'metadata'
  | 'callbackMode'
  | 'webhookUrl'
  | 'timeoutSeconds'
  | 'estimatedStart'
  | 'traceId'
  | 'traceParentSpanId'
  | 'concurrencyKey'
> &
  Partial<Pick<TaskRecord, 'maxAttempts' | 'backoff' | 'availableAt' | 'rerunOf'>>;

/** What the transition function decides of a new task (see `initial` in lifecycle/transition-fns.ts). */
export type FirstState = Pick<TaskRecord, 'status' | 'ready' | 'attempt' | 'seq'>;

/**
 * The record of a new task created at `now` in its first state (nothing written): its message
 * opens the conversation. Only `initial` calls it; it decides nothing.
 */
export function newTaskRecord(fields: NewTaskFields, first: FirstState, now: string): TaskRecord {
  // Written out field by field in the order every task record has (no spread): records of one
  // shape keep the code that reads them monomorphic, and a spread here cost 7 % of a submit's CPU.
  return {
    uuid: fields.uuid,
    agentUuid: fields.agentUuid,
    workspaceUuid: fields.workspaceUuid,
    status: first.status,
    ready: first.ready,
    priority: fields.priority,
    message: fields.message,
    messages: [{ role: 'user', content: fields.message, created_at: now }],
    metadata: fields.metadata,
    callbackMode: fields.callbackMode,
    webhookUrl: fields.webhookUrl,
    timeoutSeconds: fields.timeoutSeconds,
    attempt: first.attempt,
    leaseId: null,
    leaseSeconds: null,
    leaseExpiresAt: null,
    workerId: null,
    progress: null,
    inputRequest: null,
    result: null,
    error: null,
    estimatedStart: fields.estimatedStart,
    createdAt: now,
    updatedAt: now,
    startedAt: null,
    timeoutAt: null,
    completedAt: null,
    failedAt: null,
    cancelledAt: null,
    seq: first.seq,
    traceId: fields.traceId,
    traceParentSpanId: fields.traceParentSpanId,
    claimedAt: null,
    concurrencyKey: fields.concurrencyKey,
    maxAttempts: fields.maxAttempts ?? DEFAULT_RETRY.max_attempts,
    backoff: fields.backoff ?? null,
    lastError: null,
    availableAt: fields.availableAt !== undefined && fields.availableAt > now ? fields.availableAt : now,
    rerunOf: fields.rerunOf ?? null,
    parentTaskId: null,
  };
}
