import type { Db } from '../../db/connect.js';
import { isUniqueViolation } from '../../db/errors.js';
import { AppError, AUTH_MESSAGES, AuthError, invalid } from '../../http/errors.js';
import { sha256Hex } from '../../lib/crypto.js';
import { type Clock, iso } from '../../lib/time.js';
import { ACCOUNT_DISABLED, normalizeEmail } from '../accounts/accounts-fns.js';
import type { AccountsRepo, UserRow } from '../accounts/accounts-repo.js';
import type { AccountsService } from '../accounts/accounts-service.js';
import {
  callbackOutcome,
  isProviderName,
  PROVIDER_LABELS,
  PROVIDERS,
  type ProviderName,
  randomToken,
  redirectUriFor,
} from './oauth-fns.js';
import { loginFailed } from './oauth-http.js';
import type { OAuthRepo } from './oauth-repo.js';
import type { LoginAttempt, ProviderClient, ProviderIdentity } from './oauth-types.js';

export interface OAuthDeps {
  db: Db;
  repo: OAuthRepo;
  users: Pick<AccountsRepo, 'findUserByEmail' | 'findUserByUuid'>;
  accounts: Pick<AccountsService, 'createUser' | 'session' | 'claimPendingAccount'>;
  clients: Partial<Record<ProviderName, ProviderClient>>;
  clock: Clock;
  publicUrl: string;
  redirectUrl: string | undefined;
  stateTtlSeconds: number;
}

const STATE_INVALID = 'The login attempt is unknown, expired or already used: start again';

/** Login with an identity provider: step 1 (the authorization URL) and step 2 (code to session). */
export function createOAuthService(deps: OAuthDeps) {
  const { db, repo, clock } = deps;
  const now = () => iso(clock.now());

  /** @throws AppError NOT_FOUND for an unknown provider or one that is not configured. */
  function clientFor(provider: string): ProviderClient {
    if (!isProviderName(provider)) throw new AppError('NOT_FOUND', `OAuth provider ${provider} does not exist`);
    const client = deps.clients[provider];
    if (!client) throw new AppError('NOT_FOUND', `OAuth provider ${provider} is not configured`);
    return client;
  }

  /** The user for a verified identity (linking or creating), or the 403 that refuses it. */
  async function accountFor(
    provider: ProviderName,
    identity: ProviderIdentity,
  ): Promise<{ user: UserRow; created: boolean }> {
    const label = PROVIDER_LABELS[provider];
    const known = await db.transaction((trx) => repo.useIdentity(trx, provider, identity.subject, now()));
    const knownUser = known && (await deps.users.findUserByUuid(db.kysely, known));
    if (knownUser) return { user: knownUser, created: false };
    if (!identity.email || !identity.emailVerified) {
      throw new AuthError(403, `The e-mail address of your ${label} account is not verified`);
    }
    const link = { provider, subject: identity.subject, email: identity.email };
    const existing = await deps.users.findUserByEmail(db.kysely, normalizeEmail(identity.email));
    if (existing) {
      // The provider has just proved the mailbox: an unverified registration of the address (perhaps
      // someone else's) is taken over, its password cleared and its links void.
      await db.transaction(async (trx) => {
        if (!existing.emailVerified) await deps.accounts.claimPendingAccount(trx, existing.uuid);
        await repo.linkIdentity(trx, { ...link, userUuid: existing.uuid }, now());
      });
      const user = existing.emailVerified ? existing : await deps.users.findUserByUuid(db.kysely, existing.uuid);
      if (!user) throw new AuthError(401, AUTH_MESSAGES.invalid);
      return { user, created: false };
    }
    const user = await deps.accounts.createUser({
      email: identity.email,
      password: null,
      verified: true,
      agentsEnabled: true,
      link: (trx, created) => repo.linkIdentity(trx, { ...link, userUuid: created.uuid }, now()),
    });
    return { user, created: true };
  }

  return {
    /** The configured providers, in their fixed order. */
    configured: (): ProviderName[] => PROVIDERS.filter((p) => deps.clients[p] !== undefined),

    /** Throws the 404 of an unknown or unconfigured provider; nothing else. */
    requireProvider(provider: string): void {
      clientFor(provider);
    },

    /**
     * Step 1: a new login attempt, kept in the database, and the URL that sends the browser to the provider.
     * @throws AppError NOT_FOUND (provider), OAUTH_PROVIDER_UNAVAILABLE (discovery failed).
     */
    async start(provider: string): Promise<{ authorization_url: string; state: string }> {
      const client = clientFor(provider);
      const attempt: LoginAttempt = {
        state: randomToken(),
        provider: client.name,
        redirectUri: redirectUriFor(client.name, deps.redirectUrl, deps.publicUrl),
        codeVerifier: randomToken(),
        nonce: client.name === 'google' ? randomToken() : null,
        expiresAt: iso(clock.now() + deps.stateTtlSeconds * 1000),
      };
      const url = await client.authorizationUrl(attempt);
      await db.transaction((trx) => repo.insertAttempt(trx, sha256Hex(attempt.state), attempt, now()));
      return { authorization_url: url, state: attempt.state };
    },

    /**
     * Step 2: spends the attempt, exchanges the code and answers with a session like a password login.
     * @throws AppError NOT_FOUND, INVALID_REQUEST, OAUTH_STATE_INVALID, OAUTH_PROVIDER_UNAVAILABLE;
     * AuthError 401 (provider refusal, invalid ID token) and 403 (unverified provider e-mail, disabled account).
     */
    async finish(provider: string, input: { state: string; code?: string; error?: string }) {
      const client = clientFor(provider);
      const outcome = callbackOutcome(input);
      if (!outcome)
        throw invalid(
          'code',
          'exactly one of code and error is required',
          'Invalid request: give exactly one of code and error',
        );
      const attempt = await db.transaction((trx) => repo.takeAttempt(trx, sha256Hex(input.state), input.state));
      if (!attempt || attempt.expiresAt <= now() || attempt.provider !== client.name) {
        throw new AppError('OAUTH_STATE_INVALID', STATE_INVALID);
      }
      if ('error' in outcome) throw loginFailed(PROVIDER_LABELS[client.name], outcome.error);
      const identity = await client.identify(outcome.code, attempt);
      let account: { user: UserRow; created: boolean };
      try {
        account = await accountFor(client.name, identity);
      } catch (err) {
        // A concurrent first login of the same person linked or created first: theirs now stands.
        if (!isConflict(err)) throw err;
        account = await accountFor(client.name, identity);
      }
      if (account.user.disabled) throw new AuthError(403, ACCOUNT_DISABLED);
      return { ...(await deps.accounts.session(account.user)), created: account.created };
    },
  };
}

function isConflict(err: unknown): boolean {
  return (
    isUniqueViolation(err) ||
    (err instanceof AppError && err.code === 'INVALID_REQUEST' && err.details?.field === 'email')
  );
}

export type OAuthService = ReturnType<typeof createOAuthService>;
