import { type Kysely, PostgresAdapter, sql, type Transaction } from 'kysely';
import type { Db } from '../../db/connect.js';
import type { Database } from '../../db/database.js';
import type { Subscription } from '../../db/pg-listen.js';
import type { CredentialWithUser } from './accounts-repo.js';

/** The PostgreSQL channel on which every change that can void a credential is announced. */
export const CREDENTIALS_CHANNEL = 'taskhook_credentials';

/**
 * Announces, inside the caller's transaction, that a user's credentials or account changed
 * (key or token revoked, password or verification or feature flag changed). PostgreSQL delivers
 * the notification at commit to every instance listening, the CLI's writes included. A no-op on
 * SQLite, where nothing is cached.
 */
export async function announceCredentialChange(
  ex: Kysely<Database> | Transaction<Database>,
  userUuid: string,
): Promise<void> {
  if (!(ex.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql`select pg_notify(${CREDENTIALS_CHANNEL}, ${userUuid})`.execute(ex);
}

interface Entry {
  found: CredentialWithUser;
  expiresAt: number;
}

const MAX_ENTRIES = 10_000;

/**
 * A short-lived cache of authenticated credentials (by secret hash), so a request authenticated
 * by a key costs no database round trip. Only used while the instance LISTENs for changes:
 * a change announced by any instance or by the CLI drops the user's entries as soon as it is
 * delivered, and the cache empties and stops serving whenever the listening connection is lost.
 * `ttlMs` bounds staleness in the one case no notification covers (a notification lost while the
 * connection still looks alive). Lookups that started before an invalidation never fill the cache.
 */
export function createCredentialCache(opts: { ttlMs: number; now: () => number }) {
  const entries = new Map<string, Entry>();
  let listening = false;
  let generation = 0;
  const listeners = new Set<(userUuid: string) => void>();

  function clear() {
    entries.clear();
    generation++;
  }

  return {
    get enabled(): boolean {
      return listening && opts.ttlMs > 0;
    },
    /** The generation a lookup starts in; pass it back to `set`. */
    generation: () => generation,
    get(hash: string): CredentialWithUser | undefined {
      if (!listening) return undefined;
      const entry = entries.get(hash);
      if (!entry) return undefined;
      if (entry.expiresAt <= opts.now()) {
        entries.delete(hash);
        return undefined;
      }
      return entry.found;
    },
    set(hash: string, found: CredentialWithUser, startedIn: number): void {
      if (!listening || opts.ttlMs <= 0 || startedIn !== generation) return;
      if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value as string);
      entries.set(hash, { found, expiresAt: opts.now() + opts.ttlMs });
    },
    /** Drops every entry of the user (after a change to their account or credentials) and tells the listeners. */
    invalidateUser(userUuid: string): void {
      generation++;
      for (const [hash, entry] of entries) if (entry.found.user.uuid === userUuid) entries.delete(hash);
      for (const listener of listeners) listener(userUuid);
    },
    /** Hears every user whose credentials may have changed (this instance's writes, and others' when listening). */
    onInvalidate(listener: (userUuid: string) => void): () => void {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    setListening(up: boolean): void {
      listening = up;
      clear();
    },
  };
}

export type CredentialCache = ReturnType<typeof createCredentialCache>;

/**
 * Starts the cache's LISTEN on PostgreSQL; on SQLite the cache stays disabled (a lookup there is
 * an in-process read of a few microseconds, and the CLI's writes could not be announced).
 */
export function listenForCredentialChanges(
  db: Db,
  cache: CredentialCache,
  log: { warn(obj: object, msg: string): void },
): Subscription | null {
  if (!db.listen) return null;
  return db.listen(CREDENTIALS_CHANNEL, {
    onMessage: (userUuid) => cache.invalidateUser(userUuid),
    onState: (up) => cache.setListening(up),
    onError: (err) => log.warn({ err }, 'credential change listener lost its connection'),
  });
}
