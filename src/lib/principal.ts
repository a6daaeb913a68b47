/** Who is making a request, once their credential has been checked. */
export interface Principal {
  userUuid: string;
  email: string;
  /** Which credential kind authenticated the request. */
  via: 'jwt' | 'platform_key' | 'ingest_token';
  /** The platform key or ingest token used; null for a session JWT. */
  credentialUuid: string | null;
  agentsEnabled: boolean;
  /** The user's token version when the credential was checked; a password change raises it. */
  tokenVersion: number;
}

/** What a route requires: nothing, a user (JWT or platform key), a user session (JWT), or an ingest token. */
export type AuthMode = 'none' | 'user' | 'session' | 'ingest';
