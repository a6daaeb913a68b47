/**
 * The model proxy's response cache: in memory, per instance, bounded in bytes, least recently used
 * entries evicted first. One map serves every workspace: the workspace is part of each key, so no
 * workspace can read another's entries, but a busy workspace can evict a quiet one's (the bound is
 * a memory bound, not a per-workspace quota).
 */

/** Bookkeeping counted for every entry on top of its answer's bytes (the key, the metadata). */
export const ENTRY_OVERHEAD_BYTES = 1024;

/** A stored answer: a whole JSON body, or the SSE events of a stream that ended with `[DONE]`. */
export type CachedAnswer =
  | { kind: 'json'; contentType: string; body: Buffer }
  | { kind: 'stream'; contentType: string; events: string[]; usageEventIndex: number | null };

/** What a hit replays and records besides the answer. */
export interface CachedMeta {
  credentialUuid: string | null;
  upstreamModel: string | null;
  responseModel: string | null;
}

/** One entry; `storedAt`/`expiresAt` are epoch milliseconds of the injected clock. */
export interface CacheEntry {
  answer: CachedAnswer;
  meta: CachedMeta;
  storedAt: number;
  expiresAt: number;
  size: number;
}

/** Bytes an answer counts against the bound (its overhead included). */
export function answerSize(answer: CachedAnswer): number {
  const bytes =
    answer.kind === 'json'
      ? answer.body.byteLength
      : answer.events.reduce((sum, event) => sum + Buffer.byteLength(event), 0);
  return bytes + ENTRY_OVERHEAD_BYTES;
}

/** The cache's operations; see createResponseCache. */
export type ResponseCache = ReturnType<typeof createResponseCache>;

/**
 * Creates a cache bounded by `maxBytes` (0: off, every lookup misses and nothing is stored).
 * `now` is the module's clock, so tests can move time instead of sleeping.
 */
export function createResponseCache(deps: { maxBytes: number; now: () => number }) {
  // A Map keeps insertion order: re-inserting on every hit makes its first key the least recently used.
  const entries = new Map<string, CacheEntry>();
  let totalBytes = 0;

  const remove = (key: string) => {
    const entry = entries.get(key);
    if (!entry) return;
    entries.delete(key);
    totalBytes -= entry.size;
  };

  return {
    /** The bound in bytes (0: the cache is off). */
    maxBytes: deps.maxBytes,

    /** An entry stored less than `policySeconds` ago and not expired, marked most recently used; else null. */
    lookup(key: string, policySeconds: number): CacheEntry | null {
      const entry = entries.get(key);
      if (!entry) return null;
      const now = deps.now();
      if (now >= entry.expiresAt) {
        remove(key);
        return null;
      }
      if (now - entry.storedAt >= policySeconds * 1000) return null;
      entries.delete(key);
      entries.set(key, entry);
      return entry;
    },

    /** Stores an answer for `ttlSeconds`, evicting least recently used entries; false when it does not fit at all. */
    store(key: string, answer: CachedAnswer, meta: CachedMeta, ttlSeconds: number): boolean {
      const size = answerSize(answer);
      if (deps.maxBytes <= 0 || size > deps.maxBytes) return false;
      remove(key);
      while (totalBytes + size > deps.maxBytes) {
        const oldest = entries.keys().next().value as string;
        remove(oldest);
      }
      const now = deps.now();
      entries.set(key, { answer, meta, storedAt: now, expiresAt: now + ttlSeconds * 1000, size });
      totalBytes += size;
      return true;
    },

    /** Whole seconds since an entry was stored, for the `Age` header. */
    ageSeconds(entry: CacheEntry): number {
      return Math.max(0, Math.floor((deps.now() - entry.storedAt) / 1000));
    },

    /** Entries and bytes held now (tests, metrics). */
    stats(): { entries: number; bytes: number } {
      return { entries: entries.size, bytes: totalBytes };
    },
  };
}
