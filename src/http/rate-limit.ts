import type { Clock } from '../lib/time.js';
import type { RateLimitStore } from './rate-limit-stores.js';

export const WINDOW_SECONDS = 60;

export interface RateLimitResult {
  limit: number;
  remaining: number;
  /** Unix time in seconds when the window resets. */
  reset: number;
  exceeded: boolean;
  /** Seconds until the window resets (at least 1). */
  retryAfter: number;
}

/** Fixed 60-second windows of `limit` requests per scope (CONTRACT §8). */
export function createRateLimiter(opts: { limit: number; store: RateLimitStore; clock: Clock }) {
  return async function hit(scope: string): Promise<RateLimitResult> {
    const nowSeconds = opts.clock.now() / 1000;
    const window = Math.floor(nowSeconds / WINDOW_SECONDS);
    const count = await opts.store.hit(scope, window);
    const reset = (window + 1) * WINDOW_SECONDS;
    return {
      limit: opts.limit,
      remaining: Math.max(0, opts.limit - count),
      reset,
      exceeded: count > opts.limit,
      retryAfter: Math.max(1, Math.ceil(reset - nowSeconds)),
    };
  };
}

export type RateLimiter = ReturnType<typeof createRateLimiter>;
