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

/** For connections that outlive their request (event streams): is the credential they opened with still good? */
export interface CredentialCheck {
  /**
   * False once the request's credential is revoked or expired, the account is disabled or lost the
   * agents feature, or (for a session JWT only) the user's password changed since `was` was
   * authenticated.
   * @throws only for trouble other than the credential (e.g. the database is unreachable).
   */
  stillValid(headers: Record<string, string | string[] | undefined>, was: Principal): Promise<boolean>;
  /** Hears each user whose credentials may have changed, as soon as this instance learns of it. */
  onChange(listener: (userUuid: string) => void): () => void;
}
