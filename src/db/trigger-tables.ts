import type { Generated } from 'kysely';
import type { DbBool, DbJson } from './column-types.js';

// Webhook triggers and the log of their deliveries.
// Re-exported by database.ts, which holds the `Database` interface.

export interface TriggersTable {
  uuid: string;
  agent_uuid: string;
  /** The workspace that owns the row (a personal workspace has its user's uuid). */
  workspace_uuid: string;
  name: string;
  message_template: string;
  /** Template of the concurrency key of the tasks it creates; null: none. */
  concurrency_key: string | null;
  enabled: DbBool;
  secret_sealed: string;
  previous_secret_sealed: string | null;
  previous_secret_expires_at: string | null;
  /** The signature scheme deliveries are verified with: secret, github, standard_webhooks, stripe, slack. */
  verification_type: Generated<string>;
  /** Timestamp tolerance of the timestamped schemes; null for secret and github. */
  tolerance_seconds: number | null;
  /** The owner supplied the secret (it is replaced by PATCH, never rotated). */
  secret_supplied: Generated<DbBool>;
  created_at: string;
  updated_at: string;
}

export interface TriggerDeliveriesTable {
  uuid: string;
  trigger_uuid: string;
  delivery_id: string;
  dedup_key: string | null;
  received_at: string;
  status_code: number;
  task_uuid: string | null;
  error: string | null;
  response: DbJson | null;
}

/** Signatures of accepted signed deliveries, remembered per trigger for the scheme's replay window. */
export interface TriggerSignaturesTable {
  trigger_uuid: string;
  /** The verified HMAC's bytes, as lowercase hex (whatever the header's text). */
  signature: string;
  workspace_uuid: string;
  expires_at: string;
  /** The first delivery's 202 body, answered again to every copy. */
  response: DbJson;
}
