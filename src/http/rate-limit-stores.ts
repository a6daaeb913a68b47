import type { Redis } from 'ioredis';
import { sql } from 'kysely';
import type { Db } from '../db/connect.js';

/**
 * Counts hits per (scope, window). `hit` returns the count including this hit: a number at once
 * (memory), or a promise (shared storage).
 */
export interface RateLimitStore {
  hit(scope: string, window: number): number | Promise<number>;
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
export function createMemoryStore(): RateLimitStore {
  let current = -1;
  let exact = new Map<string, number>();
  let sketch: Uint32Array | null = null;
  return {
    hit(scope, window) {
      if (window !== current) {
        current = window;
        exact = new Map();
        sketch = null;
      }
      const known = exact.get(scope);
      if (known !== undefined || exact.size < EXACT_SCOPES) {
        const next = (known ?? 0) + 1;
        exact.set(scope, next);
        return next;
      }
      sketch ??= new Uint32Array(SKETCH_DEPTH * SKETCH_WIDTH);
      let min = Number.MAX_SAFE_INTEGER;
      for (let row = 0; row < SKETCH_DEPTH; row++) {
        const i = row * SKETCH_WIDTH + hash(scope, row);
        sketch[i] = (sketch[i] ?? 0) + 1;
        min = Math.min(min, sketch[i] ?? 0);
      }
      return min;
    },
  };
}

/** PostgreSQL mode: one atomic upsert per hit on an UNLOGGED table shared by every instance. */
export function createPostgresStore(db: Db): RateLimitStore {
  let lastSweep = -1;
  return {
    async hit(scope, window) {
      if (window !== lastSweep) {
        lastSweep = window;
        // Old windows by the database's clock, so an instance whose clock runs ahead cannot
        // delete the counters other instances are still using.
        void sql`delete from rate_limits where window_start < floor(extract(epoch from now()) / 60) - 2`
          .execute(db.kysely)
          .catch(() => undefined);
      }
      const row = await db.kysely
        .insertInto('rate_limits')
        .values({ scope, window_start: window, count: 1 })
        .onConflict((oc) => oc.columns(['scope', 'window_start']).doUpdateSet({ count: sql`rate_limits.count + 1` }))
        .returning('count')
        .executeTakeFirstOrThrow();
      return Number(row.count);
    },
  };
}

/** Redis mode (REDIS_URL): INCR with a two-window expiry, shared by every instance. */
export function createRedisStore(redis: Redis, prefix = 'taskhook:rl'): RateLimitStore {
  return {
    async hit(scope, window) {
      const key = `${prefix}:${window}:${scope}`;
      const results = await redis.multi().incr(key).expire(key, 120).exec();
      const [err, count] = results?.[0] ?? [new Error('Redis returned no result'), 0];
      if (err) throw err;
      return Number(count);
    },
  };
}
