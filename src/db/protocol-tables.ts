// What the A2A and MCP servers keep beside the tasks they create.
// Re-exported by database.ts, which holds the `Database` interface.

export interface A2aTaskContextsTable {
  task_uuid: string;
  agent_uuid: string;
  context_id: string;
}

export interface A2aHistoryIdsTable {
  task_uuid: string;
  position: number;
  message_id: string;
}

export interface A2aMessageIdsTable {
  agent_uuid: string;
  message_id: string;
  task_uuid: string;
  expires_at: string;
}

export interface A2aPushConfigsTable {
  uuid: string;
  task_uuid: string;
  workspace_uuid: string;
  /** The config's A2A `id`, unique per task. */
  config_id: string;
  /** Order of first creation among the task's configs. */
  position: number;
  url: string;
  /** Sealed. */
  token: string | null;
  auth_scheme: string | null;
  /** Sealed. */
  auth_credentials: string | null;
  created_at: string;
  updated_at: string;
}

export interface McpTasksTable {
  task_uuid: string;
  workspace_uuid: string;
  agent_uuid: string;
  created_at: string;
}

export interface McpDeclinedQuestionsTable {
  task_uuid: string;
  position: number;
}

/** A client registered through Dynamic Client Registration (a metadata document client is not stored). */
export interface McpOAuthClientsTable {
  client_id: string;
  client_name: string | null;
  client_uri: string | null;
  logo_uri: string | null;
  application_type: string | null;
  /** JSON array of strings. */
  redirect_uris: string;
  /** JSON array of strings. */
  grant_types: string;
  auth_method: string;
  secret_hash: string | null;
  created_at: string;
}

/** An authorization request waiting for the user's consent. */
export interface McpOAuthRequestsTable {
  id: string;
  /** JSON: the client as it was known when the request came (id, name, uri, logo, registration, grant types). */
  client: string;
  redirect_uri: string;
  code_challenge: string;
  state: string | null;
  resource: string;
  expires_at: string;
}

/** A user's consent: a client may use `/mcp` in one workspace with at most one role. */
export interface McpOAuthGrantsTable {
  uuid: string;
  workspace_uuid: string;
  user_uuid: string;
  client_id: string;
  client_name: string | null;
  client_uri: string | null;
  registration: string;
  role: string;
  resource: string;
  /** JSON: who approved it and from which request (the audit entry written when it becomes active). */
  approval: string;
  created_at: string;
  /** 1 once its code was exchanged. */
  active: number;
  last_used_at: string | null;
  revoked_at: string | null;
}

/** A code (`code`), access token (`access`) or refresh token (`refresh`) of a grant, by its SHA-256. */
export interface McpOAuthTokensTable {
  hash: string;
  kind: string;
  grant_uuid: string;
  client_id: string;
  redirect_uri: string | null;
  code_challenge: string | null;
  expires_at: string;
  /** A consumed code or a rotated refresh token. */
  ended_at: string | null;
}
