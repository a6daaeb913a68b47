import type { Redis } from 'ioredis';
import { sql } from 'kysely';
import type { Db } from '../db/connect.js';
import { prepareQuery } from '../db/prepared.js';

/**
 * Counts hits per (scope, window). `hit` returns the count including this hit: a number at once
 * (memory), or a promise (shared storage). `n` (default 1) counts several requests at once (a
 * bulk rerun), or takes them back when negative (a count never goes below 0).
 */
export interface RateLimitStore {
  hit(scope: string, window: number, n?: number): number | Promise<number>;
}

/**
 * A store that also adds any amount (tokens, or -1 to take back a hit that was refused) and reads
 * a count without changing it: the model proxy's RPM/TPM limits count in the same storage.
 */
export interface CounterStore extends RateLimitStore {
  /** Adds `n` (may be negative) to the (scope, window) count and returns the new count. */
  add(scope: string, window: number, n: number): number | Promise<number>;
  /** The (scope, window) count, 0 when nothing was counted. */
  read(scope: string, window: number): number | Promise<number>;
}

const EXACT_SCOPES = 100_000;
const SKETCH_DEPTH = 4;
const SKETCH_WIDTH = 1 << 16;

function hash(text: string, seed: number): number {
  // FNV-1a with a per-row seed; good enough spread for a count-min sketch.
  let h = (2166136261 ^ seed) >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 16777619) >>> 0;
  }
  return h % SKETCH_WIDTH;
}

/**
 * Embedded mode: exact counts for the first 100,000 scopes of a window, then a count-min
 * sketch (1 MiB) for the rest. Memory stays bounded however many scopes appear, and no scope's
 * count is ever lowered by others: the sketch can only over-count.
 */
export function createMemoryStore(): CounterStore {
  let current = -1;
  let exact = new Map<string, number>();
  let sketch: Uint32Array | null = null;
  function turn(window: number) {
    if (window !== current) {
      current = window;
      exact = new Map();
      sketch = null;
    }
  }
  function add(scope: string, window: number, n: number): number {
    turn(window);
    const known = exact.get(scope);
    if (known !== undefined || exact.size < EXACT_SCOPES) {
      const next = Math.max(0, (known ?? 0) + n);
      exact.set(scope, next);
      return next;
    }
    sketch ??= new Uint32Array(SKETCH_DEPTH * SKETCH_WIDTH);
    let min = Number.MAX_SAFE_INTEGER;
    for (let row = 0; row < SKETCH_DEPTH; row++) {
      const i = row * SKETCH_WIDTH + hash(scope, row);
      sketch[i] = Math.max(0, (sketch[i] ?? 0) + n);
      min = Math.min(min, sketch[i] ?? 0);
    }
    return min;
  }
  return {
    hit: (scope, window, n = 1) => add(scope, window, n),
    add,
    read(scope, window) {
      if (window !== current) return 0;
      const known = exact.get(scope);
      if (known !== undefined || !sketch) return known ?? 0;
      let min = Number.MAX_SAFE_INTEGER;
      for (let row = 0; row < SKETCH_DEPTH; row++)
        min = Math.min(min, sketch[row * SKETCH_WIDTH + hash(scope, row)] ?? 0);
      return min;
    },
  };
}

/**
 * Hits on one (scope, window) that arrive while that scope's previous write is in flight are
 * sent together as one increment by their number; each still gets its own exact count. Under
 * concurrent requests of one user this turns N round trips (and N waits on the same row lock)
 * into a few, with the same counts a write per hit would give.
 */
export function coalesceHits(
  add: (scope: string, window: number, n: number) => Promise<number>,
): RateLimitStore['hit'] {
  type Waiter = { n: number; resolve: (count: number) => void; reject: (err: unknown) => void };
  const queued = new Map<string, Waiter[]>();
  const inFlight = new Set<string>();

  async function flush(key: string, scope: string, window: number): Promise<void> {
    const batch = queued.get(key) ?? [];
    queued.delete(key);
    inFlight.add(key);
    try {
      let sum = 0;
      for (const waiter of batch) sum += waiter.n;
      const total = await add(scope, window, sum);
      // Each waiter's count as if the hits had been written one after another, in order.
      let before = total - sum;
      for (const waiter of batch) {
        before += waiter.n;
        waiter.resolve(before);
      }
    } catch (err) {
      for (const waiter of batch) waiter.reject(err);
    } finally {
      inFlight.delete(key);
      if (queued.has(key)) void flush(key, scope, window);
    }
  }

  return (scope, window, n = 1) =>
    new Promise<number>((resolve, reject) => {
      const key = `${window}\n${scope}`;
      const waiters = queued.get(key);
      if (waiters) waiters.push({ n, resolve, reject });
      else queued.set(key, [{ n, resolve, reject }]);
      if (!inFlight.has(key)) void flush(key, scope, window);
    });
}

const addHits = prepareQuery(3, (ex, scope: string, window: number, n: number) =>
  ex
    .insertInto('rate_limits')
    .values({ scope, window_start: window, count: sql<number>`greatest(${n}, 0)` })
    .onConflict((oc) =>
      oc.columns(['scope', 'window_start']).doUpdateSet({ count: sql`greatest(rate_limits.count + ${n}, 0)` }),
    )
    .returning('count'),
);

const readCount = prepareQuery(2, (ex, scope: string, window: number) =>
  ex.selectFrom('rate_limits').select('count').where('scope', '=', scope).where('window_start', '=', window),
);

/** PostgreSQL mode: an atomic upsert on an UNLOGGED table shared by every instance. */
export function createPostgresStore(db: Db): CounterStore {
  let lastSweep = -1;
  const add = async (scope: string, window: number, n: number) => {
    const [row] = await addHits(db.kysely, scope, window, n);
    return Number(row?.count);
  };
  const hit = coalesceHits(add);
  return {
    hit(scope, window, n = 1) {
      if (window !== lastSweep) {
        lastSweep = window;
        // Old windows by the database's clock, so an instance whose clock runs ahead cannot
        // delete the counters other instances are still using.
        void sql`delete from rate_limits where window_start < floor(extract(epoch from now()) / 60) - 2`
          .execute(db.kysely)
          .catch(() => undefined);
      }
      return hit(scope, window, n);
    },
    add,
    async read(scope, window) {
      const [row] = await readCount(db.kysely, scope, window);
      return row ? Number(row.count) : 0;
    },
  };
}

/** Redis mode (REDIS_URL): INCRBY with a two-window expiry, shared by every instance. */
export function createRedisStore(redis: Redis, prefix = 'taskhook:rl'): CounterStore {
  const add = async (scope: string, window: number, n: number) => {
    const key = `${prefix}:${window}:${scope}`;
    const results = await redis.multi().incrby(key, n).expire(key, 120).exec();
    const [err, count] = results?.[0] ?? [new Error('Redis returned no result'), 0];
    if (err) throw err;
    return Number(count);
  };
  return {
    hit: coalesceHits(add),
    add,
    async read(scope, window) {
      return Number((await redis.get(`${prefix}:${window}:${scope}`)) ?? 0);
    },
  };
}
