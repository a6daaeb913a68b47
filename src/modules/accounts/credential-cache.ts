import { createChangeCache } from '../../db/change-cache.js';
import type { CredentialWithUser } from './accounts-repo.js';

/**
 * A short-lived cache of authenticated credentials (by secret hash), so a request authenticated
 * by a key costs no database round trip; invalidated by user (see `createChangeCache`) when
 * `credentialChanges` (credential-changes.ts) announces one.
 * Streams are not told of `invalidateAll`: they re-check their credential on their 15 s heartbeat.
 */
export function createCredentialCache(opts: { ttlMs: number; now: () => number }) {
  return createChangeCache<CredentialWithUser>({ ...opts, idOf: (found) => found.user.uuid });
}

export type CredentialCache = ReturnType<typeof createCredentialCache>;
