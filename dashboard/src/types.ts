/** The shapes of the public API the dashboard reads (see /openapi.json). */

export type TaskStatus = 'queued' | 'running' | 'awaiting_input' | 'completed' | 'failed' | 'cancelled';
export const TASK_STATUSES: TaskStatus[] = ['queued', 'running', 'awaiting_input', 'completed', 'failed', 'cancelled'];
export const FINAL: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled']);

export interface Page {
  page: number;
  limit: number;
  total: number;
  total_pages: number;
}

export interface Agent {
  uuid: string;
  name: string;
  description: string | null;
  status: 'active' | 'paused' | 'stopped' | 'error';
  runtime: { type: string } & Record<string, unknown>;
  concurrency: number;
  default_timeout_seconds: number;
  created_at: string;
  updated_at: string;
}

export interface AgentInput {
  name: string;
  description?: string;
  concurrency?: number;
  default_timeout_seconds?: number;
}

export interface Finding {
  file: string;
  line: number;
  severity: string;
  message: string;
}

export interface Task {
  task_id: string;
  status: TaskStatus;
  created_at: string;
  agent_uuid: string;
  message: string;
  messages: { role: 'user' | 'agent'; content: string; created_at: string }[];
  priority: number;
  metadata: Record<string, unknown> | null;
  estimated_start?: string;
  started_at?: string;
  progress?: { current_step: string; steps_completed: number; total_steps: number };
  input_request?: { message: string; requested_at: string };
  completed_at?: string;
  result?: { summary?: string; findings?: Finding[] } & Record<string, unknown>;
  failed_at?: string;
  error?: { code: string; message: string };
  cancelled_at?: string;
}

export interface Trigger {
  uuid: string;
  agent_uuid: string;
  name: string;
  message_template: string;
  enabled: boolean;
  webhook_url: string;
  webhook_secret?: string;
  created_at: string;
  updated_at: string;
}

export interface TriggerDelivery {
  delivery_id: string;
  received_at: string;
  status_code: number;
  task_id: string | null;
  error: string | null;
}

export interface CallbackDelivery {
  delivery_id: string;
  event_type: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: { at: string; status_code: number | null; duration_ms: number; error: string | null }[];
  next_attempt_at: string | null;
}

export interface PlatformKey {
  uuid: string;
  name: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export interface IngestToken {
  uuid: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}
