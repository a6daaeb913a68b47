import type { Generated } from 'kysely';
import type { DbBool, DbJson } from './column-types.js';

// Accounts and their credentials: users, e-mail tokens, keys, signing secrets, OAuth logins.
// Re-exported by database.ts, which holds the `Database` interface.

export interface UsersTable {
  uuid: string;
  email: string;
  password_hash: string;
  email_verified: DbBool;
  agents_enabled: DbBool;
  token_version: number;
  created_at: string;
  updated_at: string;
  /** Set while the account is disabled (`taskhook user disable`). */
  disabled_at: string | null;
}

export interface EmailVerificationsTable {
  token_hash: string;
  user_uuid: string;
  expires_at: string;
  created_at: string;
}

export interface PlatformKeysTable {
  uuid: string;
  /** The workspace that owns the row (a personal workspace has its user's uuid). */
  workspace_uuid: string;
  name: string;
  key_hash: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  /** The user who made it; its role bounds the key's (null never, once migrated). */
  created_by: string | null;
  /** `admin`, `member` or `viewer`. */
  role: Generated<string>;
  /** The model allowlist: a JSON array of patterns, or null (every model). */
  models: DbJson | null;
}

export interface IngestTokensTable {
  uuid: string;
  /** The workspace that owns the row (a personal workspace has its user's uuid). */
  workspace_uuid: string;
  token_hash: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  /** The user who made it. */
  created_by: string | null;
}

export interface SigningSecretsTable {
  uuid: string;
  /** The workspace that owns the row (a personal workspace has its user's uuid). */
  workspace_uuid: string;
  secret_sealed: string;
  created_at: string;
  expires_at: string | null;
}

export interface OAuthAttemptsTable {
  state_hash: string;
  provider: string;
  redirect_uri: string;
  code_verifier: string;
  nonce: string | null;
  expires_at: string;
  created_at: string;
}

export interface OAuthIdentitiesTable {
  provider: string;
  subject: string;
  user_uuid: string;
  email: string | null;
  created_at: string;
  last_login_at: string;
}
