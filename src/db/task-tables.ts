import type { ColumnType } from 'kysely';
import type { DbBool, DbJson } from './column-types.js';

// Agents and their tasks: the queue, task events, idempotency keys, callbacks and push runs.
// Re-exported by database.ts, which holds the `Database` interface.

export interface AgentsTable {
  uuid: string;
  /** The workspace that owns the row (a personal workspace has its user's uuid). */
  workspace_uuid: string;
  name: string;
  description: string | null;
  status: string;
  runtime: DbJson;
  concurrency: number;
  default_timeout_seconds: number;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
  /** At most this many tasks of one concurrency key held at once; null: no per-key cap. */
  concurrency_per_key: number | null;
  /** The retry policy tasks are created with (JSON); null: the default. */
  retry: DbJson | null;
}

export interface TasksTable {
  uuid: string;
  agent_uuid: string;
  /** The workspace that owns the row (a personal workspace has its user's uuid). */
  workspace_uuid: string;
  status: string;
  ready: DbBool;
  priority: number;
  message: string;
  messages: DbJson;
  metadata: DbJson;
  callback_mode: string;
  webhook_url: string | null;
  timeout_seconds: number;
  attempt: number;
  lease_id: string | null;
  lease_seconds: number | null;
  lease_expires_at: string | null;
  worker_id: string | null;
  progress: DbJson | null;
  input_request: DbJson | null;
  result: DbJson | null;
  error: DbJson | null;
  estimated_start: string;
  created_at: string;
  updated_at: string;
  started_at: string | null;
  timeout_at: string | null;
  completed_at: string | null;
  failed_at: string | null;
  cancelled_at: string | null;
  seq: number;
  trace_id: string | null;
  trace_parent_span_id: string | null;
  claimed_at: string | null;
  concurrency_key: string | null;
  /** Attempts the task may have in all (its agent's retry policy when it was created). */
  max_attempts: number;
  /** The backoff of that policy (JSON); null: the default. */
  backoff: DbJson | null;
  /** The error of the most recent failed attempt (JSON), or null. */
  last_error: DbJson | null;
  /** No claim hands the task out before this instant. */
  available_at: string;
  /** The task this one is a rerun of; null: not a rerun. */
  rerun_of: string | null;
  /** The parent task; null: none (child tasks are not built yet, so always null). */
  parent_task_id: string | null;
}

/** When each group of an agent's tasks (by concurrency key; '' keyless) was last handed a task. */
export interface ConcurrencyGroupsTable {
  agent_uuid: string;
  group_key: string;
  /** Orders the groups' last hand-outs (higher: more recent); null: never served. */
  served_seq: number | null;
}

export interface TaskEventsTable {
  task_uuid: string;
  seq: number;
  data: DbJson;
  created_at: string;
  /** The task's agent, and the event's number in that agent's stream; null on events written before it existed. */
  agent_uuid: string | null;
  /** A bigint: PostgreSQL answers it as a string. */
  agent_seq: number | string | null;
}

/** The last event number each agent's stream handed out (see task_events.agent_seq). */
export interface AgentEventSeqsTable {
  agent_uuid: string;
  last_seq: number | string;
}

export interface IdempotencyKeysTable {
  /** The workspace that owns the row (a personal workspace has its user's uuid). */
  workspace_uuid: string;
  key: string;
  request_hash: string;
  task_uuid: string;
  response: DbJson;
  created_at: string;
  expires_at: string;
}

export interface CallbacksTable {
  uuid: string;
  task_uuid: string;
  /** The workspace that owns the row (a personal workspace has its user's uuid). */
  workspace_uuid: string;
  url: string;
  event_type: string;
  /** The exact JSON text that is signed and sent, identical on every attempt. */
  payload: string;
  status: string;
  attempts: DbJson;
  next_attempt_at: string | null;
  lease_until: string | null;
  created_at: string;
  updated_at: string;
  /** A2A push deliveries only: the config (internal uuid and its A2A id). */
  push_config_uuid: ColumnType<string | null, string | null | undefined, string | null>;
  push_config_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** A2A push deliveries only: the extra headers (Authorization, the notification token), sealed JSON. */
  secret_headers: ColumnType<string | null, string | null | undefined, string | null>;
  /** When the first attempt ended (push deliveries of one config go out in order of their first attempts). */
  first_attempt_at: ColumnType<string | null, string | null | undefined, string | null>;
  /** Set when the delivery's push config was deleted: nothing more is sent, a retry is refused. */
  push_ended_at: ColumnType<string | null, string | null | undefined, string | null>;
}

/** What a push runtime keeps about a task between runs (deleted when the task finishes). */
export interface PushRunsTable {
  task_uuid: string;
  state: DbJson | null;
  /** The lease under which an http agent accepted the task (202); null otherwise. */
  accepted_lease_id: string | null;
  updated_at: string;
}
