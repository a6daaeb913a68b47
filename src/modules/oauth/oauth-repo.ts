import type { Executor } from '../../db/connect.js';
import { withDbErrors } from '../../db/errors.js';
import { isProviderName } from './oauth-fns.js';
import type { LoginAttempt } from './oauth-types.js';

/** The only code that touches the OAuth tables. */
export const oauthRepo = {
  /** Stores a new attempt, and drops the expired ones so abandoned logins do not pile up. */
  async insertAttempt(ex: Executor, stateHash: string, attempt: Omit<LoginAttempt, 'state'>, now: string) {
    await withDbErrors(ex.deleteFrom('oauth_attempts').where('expires_at', '<=', now).execute());
    await withDbErrors(
      ex
        .insertInto('oauth_attempts')
        .values({
          state_hash: stateHash,
          provider: attempt.provider,
          redirect_uri: attempt.redirectUri,
          code_verifier: attempt.codeVerifier,
          nonce: attempt.nonce,
          expires_at: attempt.expiresAt,
          created_at: now,
        })
        .execute(),
    );
  },

  /**
   * Deletes the attempt and returns it: one statement, so of concurrent callers on any instance
   * exactly one gets it. Expiry and provider are the caller's to check.
   */
  async takeAttempt(ex: Executor, stateHash: string, state: string): Promise<LoginAttempt | undefined> {
    const row = await withDbErrors(
      ex.deleteFrom('oauth_attempts').where('state_hash', '=', stateHash).returningAll().executeTakeFirst(),
    );
    if (!row || !isProviderName(row.provider)) return undefined;
    return {
      state,
      provider: row.provider,
      redirectUri: row.redirect_uri,
      codeVerifier: row.code_verifier,
      nonce: row.nonce,
      expiresAt: row.expires_at,
    };
  },

  /** The user linked to (provider, subject), recording the login. */
  async useIdentity(ex: Executor, provider: string, subject: string, now: string): Promise<string | undefined> {
    const row = await withDbErrors(
      ex
        .updateTable('oauth_identities')
        .set({ last_login_at: now })
        .where('provider', '=', provider)
        .where('subject', '=', subject)
        .returning('user_uuid')
        .executeTakeFirst(),
    );
    return row?.user_uuid;
  },

  linkIdentity(
    ex: Executor,
    row: { provider: string; subject: string; userUuid: string; email: string | null },
    now: string,
  ): Promise<unknown> {
    return withDbErrors(
      ex
        .insertInto('oauth_identities')
        .values({
          provider: row.provider,
          subject: row.subject,
          user_uuid: row.userUuid,
          email: row.email,
          created_at: now,
          last_login_at: now,
        })
        .execute(),
    );
  },
};

export type OAuthRepo = typeof oauthRepo;
