import type { Kysely, Transaction } from 'kysely';
import { changeChannel } from '../../db/change-cache.js';
import type { Database } from '../../db/database.js';

/** The PostgreSQL channel on which every change that can void a credential is announced. */
export const CREDENTIALS_CHANNEL = 'taskhook_credentials';

/** Every change that can void a credential, by user uuid. */
export const credentialChanges = changeChannel(CREDENTIALS_CHANNEL);

/**
 * Announces, inside the caller's transaction, that a user's credentials or account changed
 * (key or token revoked, password or verification or feature flag changed, account disabled or
 * deleted); see `changeChannel`.
 */
export const announceCredentialChange = (ex: Kysely<Database> | Transaction<Database>, userUuid: string) =>
  credentialChanges.announce(ex, userUuid);
