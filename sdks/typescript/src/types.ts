/** A task's state (section 5 of the API). */
export type TaskStatus = 'queued' | 'running' | 'awaiting_input' | 'completed' | 'failed' | 'cancelled';

/** One turn of a task's conversation. */
export interface ConversationMessage {
  role: 'user' | 'agent' | string;
  content: string;
  [key: string]: unknown;
}

/** What a handler returns: a JSON object, usually `{summary, findings}`. */
export interface TaskResult {
  summary: string;
  findings?: Array<{ file: string; line: number; severity: string; message: string }>;
  [key: string]: unknown;
}

/** The body of `POST /agent/request/:id`. */
export interface SubmitInput {
  message: string;
  priority?: number;
  timeout_override?: number;
  metadata?: Record<string, unknown>;
  callback_mode?: 'poll' | 'webhook';
  webhook_url?: string;
  /** Tasks of one key share the agent's concurrency_per_key and take turns with other keys (1–255 characters). */
  concurrency_key?: string | null;
  /** Delayed start: not handed out before this RFC 3339 instant (at most 30 days ahead). */
  run_at?: string;
  /** Delayed start: not handed out before this many seconds from now (0–2,592,000). */
  delay_seconds?: number;
}

/** The answer to a submit. */
export interface SubmitResult {
  task_id: string;
  status: 'queued';
  poll_url: string;
  cancel_url: string;
  [key: string]: unknown;
}

/** A task as `GET /agent/:id/task/:taskId` returns it. */
export interface TaskView {
  task_id: string;
  status: TaskStatus;
  created_at: string;
  agent_uuid: string;
  message: string;
  messages: ConversationMessage[];
  priority: number;
  metadata: Record<string, unknown>;
  /** The task's concurrency key; null: none (absent from servers without concurrency keys). */
  concurrency_key?: string | null;
  /** The current attempt (1 for a new task; while waiting for a retry, the one to come). */
  attempt?: number;
  /** Attempts the task may have in all (its agent's retry policy when it was created). */
  max_attempts?: number;
  /** The error of the most recent attempt that ended in a failure. */
  last_error?: { code: string; message: string; attempt: number; at: string } | null;
  /** While queued: the instant from which it may be handed out; null otherwise. */
  available_at?: string | null;
  estimated_start?: string;
  started_at?: string;
  progress?: { current_step: string; steps_completed: number; total_steps: number };
  input_request?: { message: string; requested_at: string };
  completed_at?: string;
  result?: TaskResult;
  failed_at?: string;
  error?: { code: string; message: string };
  cancelled_at?: string;
}

/** One item of a claim answer (section 6). */
export interface ClaimedTask {
  task_id: string;
  lease_id: string;
  message: string;
  messages: ConversationMessage[];
  priority: number;
  metadata: Record<string, unknown>;
  /** The task's concurrency key; null: none (absent from servers without concurrency keys). */
  concurrency_key?: string | null;
  attempt: number;
  lease_expires_at: string;
  timeout_at: string;
  /** W3C trace context of this run. */
  traceparent: string;
}

/** One item of a task's event stream. */
export interface TaskEvent {
  id: number;
  task: TaskView;
}

/**
 * How a trigger checks its deliveries (section 7 and its signature schemes). A supplied secret is
 * never answered back; `tolerance_seconds` (1–86400, default 300) bounds a signed timestamp's age.
 */
export type TriggerVerificationInput =
  | { type: 'secret' }
  | { type: 'github'; secret?: string }
  | { type: 'standard_webhooks'; secret?: string; tolerance_seconds?: number }
  | { type: 'stripe'; secret: string; tolerance_seconds?: number }
  | { type: 'slack'; signing_secret: string; tolerance_seconds?: number };

/** A trigger's scheme as the server shows it: no secret. */
export type TriggerVerification =
  | { type: 'secret' | 'github' }
  | { type: 'standard_webhooks' | 'stripe' | 'slack'; tolerance_seconds: number };

/** A webhook trigger; `webhook_secret` is present only when the server made it, just now. */
export interface Trigger {
  uuid: string;
  agent_uuid: string;
  name: string;
  message_template: string;
  /** Template of the tasks' concurrency key (rendered per delivery); null: none. */
  concurrency_key?: string | null;
  enabled: boolean;
  verification?: TriggerVerification;
  webhook_url: string;
  created_at: string;
  updated_at: string;
  webhook_secret?: string;
}

/** A page of a list answer. */
export interface Pagination {
  page: number;
  limit: number;
  total: number;
  total_pages: number;
}

/** A verified callback (Standard Webhooks body). */
export interface WebhookEvent {
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
  [key: string]: unknown;
}
