import { type Kysely, PostgresAdapter, sql, type Transaction } from 'kysely';
import type { Db, Executor } from './connect.js';
import type { Database } from './database.js';
import type { Subscription } from './pg-listen.js';
import { afterCommit } from './transactions.js';

/**
 * A kind of change other instances must hear of (a user's credentials, an agent), announced
 * with the id of what changed: on PostgreSQL a NOTIFY on the channel, on SQLite this process's
 * listeners after the commit (other processes' writes are seen through `watchOtherWriters`).
 */
export function changeChannel(name: string) {
  /** This process's caches, told of changes made by this process on SQLite. */
  const local = new Set<(id: string) => void>();
  return {
    name,
    /**
     * Announces, inside the caller's transaction, that `id` changed. PostgreSQL delivers the
     * notification at commit to every instance listening, the CLI's writes included.
     */
    async announce(ex: Kysely<Database> | Transaction<Database>, id: string): Promise<void> {
      if (ex.getExecutor().adapter instanceof PostgresAdapter) {
        await sql`select pg_notify(${name}, ${id})`.execute(ex);
        return;
      }
      const tell = () => {
        for (const listener of local) listener(id);
      };
      // In a transaction: after its commit, so no lookup between now and then caches the old state.
      // On the root handle the write has committed already.
      try {
        afterCommit(ex as Executor, tell);
      } catch {
        tell();
      }
    },
    /** Hears this process's announcements (SQLite). */
    hearLocally(listener: (id: string) => void): () => void {
      local.add(listener);
      return () => local.delete(listener);
    },
  };
}

export type ChangeChannel = ReturnType<typeof changeChannel>;

interface Entry<V> {
  value: V;
  expiresAt: number;
}

const MAX_ENTRIES = 10_000;

/**
 * A short-lived cache of rows that changes are announced for. Only serves while the instance
 * hears the announcements (`setListening`): a change drops the entries of its id as soon as it
 * is delivered, and the cache empties and stops serving whenever the listening connection is
 * lost. `ttlMs` bounds staleness in the one case no notification covers (a notification lost while
 * the connection still looks alive). Lookups that started before an invalidation never fill it.
 * `idOf` names the id a value's changes are announced under (default: its key).
 */
export function createChangeCache<V>(opts: { ttlMs: number; now: () => number; idOf?: (value: V) => string }) {
  const entries = new Map<string, Entry<V>>();
  let listening = false;
  let generation = 0;
  const listeners = new Set<(id: string) => void>();

  function clear() {
    entries.clear();
    generation++;
  }

  const cache = {
    get enabled(): boolean {
      return listening && opts.ttlMs > 0;
    },
    /** The generation a lookup starts in; pass it back to `set`. */
    generation: () => generation,
    get(key: string): V | undefined {
      if (!listening) return undefined;
      const entry = entries.get(key);
      if (!entry) return undefined;
      if (entry.expiresAt <= opts.now()) {
        entries.delete(key);
        return undefined;
      }
      return entry.value;
    },
    set(key: string, value: V, startedIn: number): void {
      if (!listening || opts.ttlMs <= 0 || startedIn !== generation) return;
      if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value as string);
      entries.set(key, { value, expiresAt: opts.now() + opts.ttlMs });
    },
    /** Drops every entry (another process changed the database). Listeners are not told. */
    invalidateAll(): void {
      clear();
    },
    /** Drops every entry of `id` (after a change to it) and tells the listeners. */
    invalidate(id: string): void {
      generation++;
      const { idOf } = opts;
      if (!idOf) entries.delete(id);
      else for (const [key, entry] of entries) if (idOf(entry.value) === id) entries.delete(key);
      for (const listener of listeners) listener(id);
    },
    /** Hears every id that may have changed (this instance's writes, and others' when listening). */
    onInvalidate(listener: (id: string) => void): () => void {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    setListening(up: boolean): void {
      listening = up;
      clear();
    },
    /**
     * The value of `key`: the cached one, else `load`'s, kept unless a change overtook the load
     * (the generation is taken before it starts). A miss (`undefined`) is never kept.
     */
    async read(key: string, load: () => Promise<V | undefined>): Promise<V | undefined> {
      const cached = cache.get(key);
      if (cached !== undefined) return cached;
      const startedIn = generation;
      const loaded = await load();
      if (loaded !== undefined) cache.set(key, loaded, startedIn);
      return loaded;
    },
    /** Drops `id` once `trx` commits: the instance that wrote a change stops serving the old row before it answers. */
    invalidateAtCommit(trx: Executor, id: string): void {
      afterCommit(trx, () => cache.invalidate(id));
    },
  };
  return cache;
}

export type ChangeCache<V> = ReturnType<typeof createChangeCache<V>>;

/** What `listenForChanges` drives of a cache. */
export interface ChangeListener {
  invalidate(id: string): void;
  invalidateAll(): void;
  setListening(up: boolean): void;
}

/**
 * Starts hearing of changes for several caches at once: on PostgreSQL one LISTEN connection for
 * all their channels; on SQLite this process's own announcements plus one watch for other
 * processes' writes (any write by the CLI or another process on the same file empties every
 * cache, within `OTHER_WRITERS_POLL_MS`). An in-memory SQLite database has no other writer.
 */
export function listenForChanges(
  db: Db,
  feeds: ReadonlyArray<{ channel: ChangeChannel; cache: ChangeListener }>,
  log: { warn(obj: object, msg: string): void },
): Subscription | null {
  if (feeds.length === 0) return null;
  const setListening = (up: boolean) => {
    for (const { cache } of feeds) cache.setListening(up);
  };
  if (!db.listen) {
    const unhear = feeds.map(({ channel, cache }) => channel.hearLocally((id) => cache.invalidate(id)));
    const watch = db.watchOtherWriters?.(() => {
      for (const { cache } of feeds) cache.invalidateAll();
    });
    setListening(true);
    return {
      close: async () => {
        for (const stop of unhear) stop();
        setListening(false);
        await watch?.close();
      },
    };
  }
  const byChannel = new Map(feeds.map((feed) => [feed.channel.name, feed.cache]));
  return db.listen([...byChannel.keys()], {
    onMessage: (id, channel) => byChannel.get(channel)?.invalidate(id),
    onState: setListening,
    onError: (err) => log.warn({ err }, 'change listener lost its connection'),
  });
}
