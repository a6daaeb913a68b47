import { type Kysely, PostgresAdapter, sql, type Transaction } from 'kysely';
import type { Db, Executor } from '../../db/connect.js';
import type { Database } from '../../db/database.js';
import type { Subscription } from '../../db/pg-listen.js';
import { afterCommit } from '../../db/transactions.js';
import type { CredentialWithUser } from './accounts-repo.js';

/** The PostgreSQL channel on which every change that can void a credential is announced. */
export const CREDENTIALS_CHANNEL = 'taskhook_credentials';

/** This process's caches, told of changes made by this process on SQLite. */
const localListeners = new Set<(userUuid: string) => void>();

/**
 * Announces, inside the caller's transaction, that a user's credentials or account changed
 * (key or token revoked, password or verification or feature flag changed). PostgreSQL delivers
 * the notification at commit to every instance listening, the CLI's writes included. On SQLite
 * this process's caches hear it once the write commits; other processes' writes are seen through
 * `watchOtherWriters`.
 */
export async function announceCredentialChange(
  ex: Kysely<Database> | Transaction<Database>,
  userUuid: string,
): Promise<void> {
  if (ex.getExecutor().adapter instanceof PostgresAdapter) {
    await sql`select pg_notify(${CREDENTIALS_CHANNEL}, ${userUuid})`.execute(ex);
    return;
  }
  const tell = () => {
    for (const listener of localListeners) listener(userUuid);
  };
  // In a transaction: after its commit, so no lookup between now and then caches the old state.
  // On the root handle the write has committed already.
  try {
    afterCommit(ex as Executor, tell);
  } catch {
    tell();
  }
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
    /**
     * Drops every entry (another process changed the database). Streams are not told: they
     * re-check their credential on their 15 s heartbeat.
     */
    invalidateAll(): void {
      clear();
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
 * Starts hearing of changes: on PostgreSQL the cache's LISTEN; on SQLite this process's own
 * announcements plus a watch for other processes' writes (any write by the CLI or another process
 * on the same file empties the cache, within `OTHER_WRITERS_POLL_MS`). An in-memory SQLite database
 * has no other writer.
 */
export function listenForCredentialChanges(
  db: Db,
  cache: CredentialCache,
  log: { warn(obj: object, msg: string): void },
): Subscription | null {
  if (!db.listen) {
    const local = (userUuid: string) => cache.invalidateUser(userUuid);
    localListeners.add(local);
    const watch = db.watchOtherWriters?.(() => cache.invalidateAll());
    cache.setListening(true);
    return {
      close: async () => {
        localListeners.delete(local);
        cache.setListening(false);
        await watch?.close();
      },
    };
  }
  return db.listen(CREDENTIALS_CHANNEL, {
    onMessage: (userUuid) => cache.invalidateUser(userUuid),
    onState: (up) => cache.setListening(up),
    onError: (err) => log.warn({ err }, 'credential change listener lost its connection'),
  });
}
