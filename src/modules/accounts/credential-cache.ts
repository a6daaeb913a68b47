import type { Kysely, Transaction } from 'kysely';
import { changeChannel, createChangeCache } from '../../db/change-cache.js';
import type { Database } from '../../db/database.js';
import type { CredentialWithUser } from './accounts-repo.js';

/** The PostgreSQL channel on which every change that can void a credential is announced. */
export const CREDENTIALS_CHANNEL = 'taskhook_credentials';

/** Every change that can void a credential, by user uuid. */
export const credentialChanges = changeChannel(CREDENTIALS_CHANNEL);

/**
 * Announces, inside the caller's transaction, that a user's credentials or account changed
 * (key or token revoked, password or verification or feature flag changed); see `changeChannel`.
 */
export const announceCredentialChange = (ex: Kysely<Database> | Transaction<Database>, userUuid: string) =>
  credentialChanges.announce(ex, userUuid);

/**
 * A short-lived cache of authenticated credentials (by secret hash), so a request authenticated
 * by a key costs no database round trip; invalidated by user (see `createChangeCache`).
 * Streams are not told of `invalidateAll`: they re-check their credential on their 15 s heartbeat.
 */
export function createCredentialCache(opts: { ttlMs: number; now: () => number }) {
  return createChangeCache<CredentialWithUser>({ ...opts, idOf: (found) => found.user.uuid });
}

export type CredentialCache = ReturnType<typeof createCredentialCache>;
