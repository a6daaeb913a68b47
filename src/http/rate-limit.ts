import type { PurgeStep } from '../db/purge.js';
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

/** The store's count, or an error when it fails or does not answer within `timeoutMs`. */
async function countWithin(hit: Promise<number>, timeoutMs: number): Promise<number> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('rate-limit store timed out')), timeoutMs);
  });
  hit.catch(() => undefined);
  try {
    return await Promise.race([hit, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Fixed 60-second windows of `limit` requests per scope (docs/api.md §8). Fails open: when the
 * counter store (PostgreSQL or Redis) is unreachable the request is let through uncounted, so an
 * outage of the store never takes down the API or /health (docs/api.md §8, §10).
 */
export function createRateLimiter(opts: {
  limit: number;
  store: RateLimitStore;
  clock: Clock;
  /** How long a request waits for the store before it is let through uncounted. */
  storeTimeoutMs: number;
  onStoreError?: (err: unknown) => void;
}) {
  /** Counts `n` requests (default 1; negative takes them back) in the scope's current window. */
  return async function hit(scope: string, n = 1): Promise<RateLimitResult> {
    const nowSeconds = opts.clock.now() / 1000;
    const window = Math.floor(nowSeconds / WINDOW_SECONDS);
    let count = 0;
    try {
      const hit = opts.store.hit(scope, window, n);
      // A store that answers at once (memory) needs no timeout, and no timer per request.
      count = typeof hit === 'number' ? hit : await countWithin(hit, opts.storeTimeoutMs);
    } catch (err) {
      opts.onStoreError?.(err);
    }
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

/**
 * The scope of a workspace's requests: every member's sessions and every key of the workspace
 * together. (A personal workspace's uuid is its user's, so a single user's window is unchanged.)
 */
export const workspaceScope = (workspaceUuid: string) => `user:${workspaceUuid}`;

/**
 * Counts one request in each of `scopes` (a webhook delivery counts in its trigger's window and
 * in its owner's) and answers for the first, the request's own window (a delivery's trigger: the
 * sender's quota, which the sender can act on), except when another window is used up while the
 * first is not: then the refusal is that window's, and its headers say so.
 */
export async function hitEach(hit: RateLimiter, scopes: string[]): Promise<RateLimitResult> {
  const [own, ...others] = await Promise.all(scopes.map((scope) => hit(scope)));
  if (!own) throw new Error('hitEach needs at least one scope');
  if (own.exceeded) return own;
  return others.find((r) => r.exceeded) ?? own;
}

/**
 * Counts `extra` more requests in the scope's window only when it has room for all of them (a
 * bulk rerun counts one request per task, 22.7): otherwise they are taken back at once and the
 * answer is `exceeded`, so a refused request stays counted as the one it was.
 */
export async function hitExtra(hit: RateLimiter, scope: string, extra: number): Promise<RateLimitResult> {
  const result = await hit(scope, extra);
  if (!result.exceeded) return result;
  const undone = await hit(scope, -extra);
  return { ...undone, exceeded: true };
}

/**
 * Purging a deleted workspace: its request windows in the shared table (PostgreSQL mode; the
 * table stays empty otherwise). A trigger's own windows carry only the trigger's uuid and are
 * gone within two windows by the store's sweep.
 */
export const rateLimitsPurge: PurgeStep = async (ex, workspaceUuid) => {
  const result = await ex
    .deleteFrom('rate_limits')
    .where('scope', '=', workspaceScope(workspaceUuid))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
};
