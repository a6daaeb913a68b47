import type { ProviderName } from './oauth-fns.js';

/** A login attempt between step 1 and step 2, as kept in the database. */
export interface LoginAttempt {
  state: string;
  provider: ProviderName;
  redirectUri: string;
  codeVerifier: string;
  /** OpenID nonce (Google); null for GitHub. */
  nonce: string | null;
  expiresAt: string;
}

/** Who the provider says the user is. */
export interface ProviderIdentity {
  /** The provider's stable id of the user (Google `sub`, GitHub's numeric user id). */
  subject: string;
  email: string | null;
  emailVerified: boolean;
}

/** One identity provider: builds the authorization URL and turns a code into an identity. */
export interface ProviderClient {
  readonly name: ProviderName;
  /** @throws AppError OAUTH_PROVIDER_UNAVAILABLE when the provider's configuration cannot be read. */
  authorizationUrl(attempt: LoginAttempt): Promise<string>;
  /**
   * Exchanges the code and reads the identity.
   * @throws AuthError 401 for a refused code or an invalid ID token; AppError OAUTH_PROVIDER_UNAVAILABLE
   * when the provider fails or does not answer.
   */
  identify(code: string, attempt: LoginAttempt): Promise<ProviderIdentity>;
}
