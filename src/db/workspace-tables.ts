import type { DbBool, DbJson } from './column-types.js';

/** A tenant: it owns agents, keys, telemetry and the rest (docs/workspaces.md). */
export interface WorkspacesTable {
  /** A personal workspace has its user's uuid. */
  uuid: string;
  name: string;
  personal: DbBool;
  created_at: string;
  updated_at: string;
  /** Set at deletion; the rows it owns are then deleted in the background. */
  deleted_at: string | null;
}

export interface WorkspaceMembersTable {
  workspace_uuid: string;
  user_uuid: string;
  /** `owner`, `admin`, `member` or `viewer`. */
  role: string;
  joined_at: string;
}

export interface InvitationsTable {
  uuid: string;
  workspace_uuid: string;
  /** As given. */
  email: string;
  /** Lower-cased, for comparisons. */
  email_lower: string;
  role: string;
  /** SHA-256 of the token; the token itself is only in the e-mail. */
  token_hash: string;
  invited_by: string;
  created_at: string;
  expires_at: string;
  /** Set when it stops being pending; `ended_as` says how (`accepted`, `revoked`, `replaced`). */
  ended_at: string | null;
  ended_as: string | null;
}

export interface AuditLogTable {
  id: string;
  workspace_uuid: string;
  at: string;
  /** `user` or `key`. */
  actor_type: string;
  actor_uuid: string;
  /** The user's e-mail or the key's name, as it was at the time. */
  actor_name: string;
  action: string;
  target_type: string;
  target_uuid: string;
  details: DbJson;
  ip: string | null;
  /** The server's own id for the request (a UUID); null from the CLI. */
  request_id: string | null;
  /** The X-Request-Id the client sent, when it was accepted; null otherwise and from the CLI. */
  client_request_id: string | null;
}
