import { type Static, Type } from '@sinclair/typebox';
import {
  PageQuerySchema,
  PaginationSchema,
  StrictObject,
  StringEnum,
  TimestampSchema,
  UuidSchema,
} from '../../http/common-schemas.js';
import { TASK_STATUSES } from './tasks-fns.js';

export const MAX_MESSAGE_CHARS = 100_000;
export const MAX_METADATA_BYTES = 16 * 1024;

const Status = StringEnum(TASK_STATUSES, {
  description: 'queued, running, awaiting_input, completed, failed or cancelled.',
});
const MessageText = Type.String({ minLength: 1, maxLength: MAX_MESSAGE_CHARS });
const Metadata = Type.Record(Type.String(), Type.Unknown(), { description: 'Free-form JSON object, at most 16 KiB.' });

/** A task's concurrency key as given on submit (and by schedules). */
export const ConcurrencyKeyInput = Type.String({
  minLength: 1,
  maxLength: 255,
  description:
    "Groups tasks: at most the agent's concurrency_per_key tasks of one key are held at once, and keys take turns when work is handed out (null or absent: no key). Never changes.",
});
const ConcurrencyKeyOut = Type.Union([Type.String(), Type.Null()], {
  description: 'The concurrency key the task was created with; null: none.',
});

export const TaskParams = Type.Object({ id: UuidSchema, taskId: UuidSchema });
export const AgentIdParams = Type.Object({ id: UuidSchema });

export const SubmitBody = StrictObject({
  message: Type.String({ minLength: 1, maxLength: MAX_MESSAGE_CHARS, description: 'Instructions for the agent.' }),
  priority: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 10, description: '1 to 10, 10 most urgent; default 5.' }),
  ),
  timeout_override: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 86400, description: "Seconds; replaces the agent's default timeout." }),
  ),
  metadata: Type.Optional(Metadata),
  callback_mode: Type.Optional(
    Type.Union([Type.Literal('poll'), Type.Literal('webhook')], { description: 'Default poll.' }),
  ),
  webhook_url: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 2048,
      description: 'Absolute http(s) URL; required with callback_mode webhook.',
    }),
  ),
  concurrency_key: Type.Optional(
    Type.Union([ConcurrencyKeyInput, Type.Null()], {
      description:
        "1 to 255 characters, or null (no key). Tasks of one key are held at most the agent's concurrency_per_key at once and take turns with other keys; part of the body an Idempotency-Key compares.",
    }),
  ),
  run_at: Type.Optional(
    Type.String({
      description:
        'Delayed start: an RFC 3339 date-time with Z or a numeric offset, at most 30 days ahead (a past instant means now). The task is not handed out before it. Not together with delay_seconds.',
    }),
  ),
  delay_seconds: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: 2_592_000,
      description:
        'Delayed start: the task is not handed out before this many seconds after the submit. Not together with run_at.',
    }),
  ),
});
export type SubmitInput = Static<typeof SubmitBody>;

export const SubmitReply = Type.Object({
  task_id: UuidSchema,
  status: Type.Literal('queued'),
  created_at: TimestampSchema,
  estimated_start: TimestampSchema,
  poll_url: Type.String({ description: 'Absolute URL of GET /agent/:id/task/:taskId.' }),
  cancel_url: Type.String({ description: 'Absolute URL of POST /agent/:id/task/:taskId/cancel.' }),
});
/** A submit's answer; a rerun's also names its source (the rerun route's schema shows it). */
export type SubmitResult = Static<typeof SubmitReply> & { rerun_of?: string };

export const ConversationMessage = Type.Object({
  role: StringEnum(['user', 'agent'] as const),
  content: Type.String(),
  created_at: TimestampSchema,
});
export type ConversationMessage = Static<typeof ConversationMessage>;

export const ProgressSchema = Type.Object({
  current_step: Type.String(),
  steps_completed: Type.Integer(),
  total_steps: Type.Integer(),
});
export type Progress = Static<typeof ProgressSchema>;

const Finding = Type.Object(
  {
    file: Type.String({ maxLength: 4096 }),
    line: Type.Integer({ minimum: 0 }),
    severity: Type.String({ minLength: 1, maxLength: 64 }),
    message: Type.String({ maxLength: 10_000 }),
  },
  { additionalProperties: true },
);
export const ResultSchema = Type.Object(
  {
    summary: Type.String({ maxLength: MAX_MESSAGE_CHARS }),
    findings: Type.Optional(Type.Array(Finding, { maxItems: 10_000, default: [] })),
  },
  { additionalProperties: true, description: 'summary, findings, and any other fields the agent returns.' },
);
export type TaskResult = Static<typeof ResultSchema>;

export const TaskErrorSchema = Type.Object({
  code: Type.String({
    description:
      'TIMEOUT, LEASE_EXPIRED, AGENT_ERROR, PROVIDER_ERROR, BUDGET_EXCEEDED (a model budget refused the run; not retried), MODEL_NOT_PRICED (a budget applies and the model has no price; not retried), DELIVERY_FAILED, AGENT_REJECTED, INVALID_AGENT_RESPONSE, or a code the worker reported.',
  }),
  message: Type.String(),
});

const LastErrorSchema = Type.Object({
  code: Type.String(),
  message: Type.String(),
  attempt: Type.Integer({ description: 'The attempt that ended with this error.' }),
  at: TimestampSchema,
});

export const TaskBody = Type.Object(
  {
    task_id: UuidSchema,
    status: Status,
    created_at: TimestampSchema,
    agent_uuid: UuidSchema,
    message: Type.String({ description: 'The original instructions.' }),
    messages: Type.Array(ConversationMessage, { description: 'The conversation, the original message first.' }),
    priority: Type.Integer(),
    metadata: Metadata,
    concurrency_key: ConcurrencyKeyOut,
    attempt: Type.Integer({
      description:
        'The current attempt, from 1; while the task waits for a retry, the number of the attempt to come (the claim item shows the same).',
    }),
    max_attempts: Type.Integer({ description: "Attempts in all: the agent's retry policy when the task was created." }),
    last_error: Type.Union([LastErrorSchema, Type.Null()], {
      description:
        "The error of the most recent attempt that ended in a failure; null while none has. For a failed task, code and message are the error's.",
    }),
    available_at: Type.Union([TimestampSchema, Type.Null()], {
      description:
        'While queued: the instant from which the task may be handed out (its creation, the end of a delayed start or of a retry wait, or when it was queued again). Null in every other state.',
    }),
    rerun_of: Type.Union([UuidSchema, Type.Null()], {
      description: 'The task this one is a rerun of (POST /agent/:id/task/:taskId/rerun); null: not a rerun.',
    }),
    parent_task_id: Type.Union([UuidSchema, Type.Null()], {
      description: 'The parent task; always null for now (child tasks are not offered yet).',
    }),
    estimated_start: Type.Optional(TimestampSchema),
    started_at: Type.Optional(TimestampSchema),
    progress: Type.Optional(ProgressSchema),
    input_request: Type.Optional(Type.Object({ message: Type.String(), requested_at: TimestampSchema })),
    completed_at: Type.Optional(TimestampSchema),
    result: Type.Optional(ResultSchema),
    failed_at: Type.Optional(TimestampSchema),
    error: Type.Optional(TaskErrorSchema),
    cancelled_at: Type.Optional(TimestampSchema),
  },
  {
    title: 'Task',
    description:
      'Common fields, plus those of the status: estimated_start while queued; started_at once claimed; progress and input_request while they apply; completed_at and result, failed_at and error, or cancelled_at once finished.',
  },
);
export type TaskView = Static<typeof TaskBody>;

export const MessageBody = StrictObject({ message: MessageText });
export const MessageReply = Type.Object({ task_id: UuidSchema, status: Status, message_received: Type.Boolean() });
export const CancelReply = Type.Object({
  task_id: UuidSchema,
  status: Type.Literal('cancelled'),
  cancelled_at: TimestampSchema,
});

export const ListQuery = Type.Composite([PageQuerySchema, Type.Object({ status: Type.Optional(Status) })]);
export const ListReply = Type.Object({ tasks: Type.Array(TaskBody), pagination: PaginationSchema });

const LeaseId = Type.String({ minLength: 1, maxLength: 64, description: 'The lease_id of your claim.' });

export const ClaimBody = StrictObject({
  worker_id: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  max_tasks: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'Default 1.' })),
  wait_seconds: Type.Optional(
    Type.Integer({ minimum: 0, maximum: 30, description: 'Long poll: wait up to this long for work; default 0.' }),
  ),
  lease_seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 600, description: 'Default 60.' })),
});
export type ClaimInput = Static<typeof ClaimBody>;

export const ClaimedTask = Type.Object({
  task_id: UuidSchema,
  lease_id: Type.String(),
  message: Type.String(),
  messages: Type.Array(ConversationMessage),
  priority: Type.Integer(),
  metadata: Metadata,
  concurrency_key: ConcurrencyKeyOut,
  attempt: Type.Integer({ description: 'Starts at 1; a lease expiry or retryable failure adds one.' }),
  lease_expires_at: TimestampSchema,
  timeout_at: TimestampSchema,
  traceparent: Type.String({
    description:
      "W3C trace context of this run: pass it as the parent of the worker's own spans to join the task's trace.",
  }),
});
export type ClaimedTask = Static<typeof ClaimedTask>;
export const ClaimReply = Type.Object({ tasks: Type.Array(ClaimedTask) });

export const ProgressBody = StrictObject({
  lease_id: LeaseId,
  current_step: Type.String({ maxLength: 1000 }),
  steps_completed: Type.Integer({ minimum: 0 }),
  total_steps: Type.Integer({ minimum: 0 }),
});
export const ProgressReply = Type.Object({
  task_id: UuidSchema,
  status: Status,
  lease_expires_at: Type.Union([TimestampSchema, Type.Null()], {
    description: 'The extended lease; null when the task was cancelled (stop working on it).',
  }),
});

export const LeaseBody = StrictObject({ lease_id: LeaseId });
export const InputRequestBody = StrictObject({ lease_id: LeaseId, message: MessageText });
export const CompleteBody = StrictObject({ lease_id: LeaseId, result: ResultSchema });
/** Most tasks one batch complete reports. */
export const MAX_BATCH_COMPLETE = 100;
export const CompleteBatchBody = StrictObject({
  tasks: Type.Array(StrictObject({ task_id: UuidSchema, lease_id: LeaseId, result: ResultSchema }), {
    minItems: 1,
    maxItems: MAX_BATCH_COMPLETE,
    description: 'Tasks of this agent to complete, each at most once.',
  }),
});
export type CompleteBatchItem = Static<typeof CompleteBatchBody>['tasks'][number];
export const CompleteBatchReply = Type.Object({
  results: Type.Array(
    Type.Object({
      task_id: UuidSchema,
      status: Type.Union([Type.Literal('completed'), Type.Literal('refused')]),
      error: Type.Optional(
        Type.Object({
          code: Type.String({ description: 'NOT_FOUND or TASK_NOT_RUNNING, as the single complete would answer.' }),
          message: Type.String(),
        }),
      ),
    }),
    { description: 'One entry per task, in the order sent.' },
  ),
});
export const FailBody = StrictObject({
  lease_id: LeaseId,
  error: StrictObject({
    code: Type.Optional(Type.String({ pattern: '^[A-Z][A-Z0-9_]{0,63}$', description: 'Default AGENT_ERROR.' })),
    message: Type.String({ minLength: 1, maxLength: 10_000 }),
  }),
  retryable: Type.Optional(
    Type.Boolean({ description: 'Queue the task again while attempts remain (its max_attempts); default false.' }),
  ),
  retry_after_seconds: Type.Optional(
    Type.Number({
      minimum: 0,
      maximum: 86400,
      description:
        "Only with retryable true: wait at least this long before the retry (the policy's backoff when longer; not capped by its max_seconds).",
    }),
  ),
});
