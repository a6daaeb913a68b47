import type { ChangeCache } from '../../../db/change-cache.js';
import type { Db } from '../../../db/connect.js';
import type { CounterStore } from '../../../http/rate-limit-stores.js';
import type { Clock } from '../../../lib/time.js';
import {
  counterScopes,
  type LimitScope,
  type Limits,
  minuteOf,
  rateLimitHeaders,
  refusalMessage,
  refusingScope,
  type ScopeCounts,
  secondsLeft,
} from './limits-fns.js';
import { limitKey, limitsRepo } from './limits-repo.js';

/** Who a call counts for: its agent (attributed task or runtime) and the key that authenticated it. */
export interface CallScopes {
  workspaceUuid: string;
  agentUuid: string | null;
  platformKeyUuid: string | null;
}

/** An admitted call: the headers its answer carries, and how it adds its tokens once they are known. */
export interface Admission {
  headers: Record<string, string>;
  /** Adds the call's tokens to each of its scopes with a tpm, in the window current now. */
  settle(tokens: number): Promise<void>;
}

/** A refusal: the 429's message, type and headers. */
export interface RateRefusal {
  scope: LimitScope;
  on: 'requests' | 'tokens';
  message: string;
  headers: Record<string, string>;
}

const ADMITTED_FREELY: Admission = { headers: {}, settle: async () => undefined };

/** A store operation that fails, or does not answer in time, counts as 0 (fail open, like section 8's limit). */
async function within<T>(op: T | Promise<T>, fallback: T, timeoutMs: number, onError: (err: unknown) => void) {
  if (!(op instanceof Promise)) return op;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<T>((_, reject) => {
    timer = setTimeout(() => reject(new Error('rate-limit store timed out')), timeoutMs);
  });
  try {
    return await Promise.race([op, timeout]);
  } catch (err) {
    onError(err);
    return fallback;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * RPM and TPM admission of the model proxy (docs/model-proxy.md, "Rate limits per key and agent").
 * The limits of a workspace are read once and cached (dropped when a change is announced); a call
 * in no limited scope costs one map lookup. A limited call costs one round trip to the shared
 * counter store (all its counters at once) and, when it has a tpm, one more when its tokens are added.
 */
export function createAdmission(deps: {
  db: Db;
  store: CounterStore;
  clock: Clock;
  /** The workspace's limits by `limitKey`, announced on the limits channel. */
  cache: ChangeCache<Map<string, Limits>>;
  storeTimeoutMs: number;
  log: (err: unknown, msg: string) => void;
}) {
  const onStoreError = (err: unknown) => deps.log(err, 'rate-limit store failed; the model call passes uncounted');
  const op = <T>(value: T | Promise<T>, fallback: T) => within(value, fallback, deps.storeTimeoutMs, onStoreError);

  /** The workspace's limits: cached, else one query. */
  const limitsOf = async (workspaceUuid: string) =>
    (await deps.cache.read(workspaceUuid, () => limitsRepo.workspaceLimits(deps.db.kysely, workspaceUuid))) ??
    new Map<string, Limits>();

  /** The call's limited scopes, the agent first. */
  async function scopesOf(call: CallScopes): Promise<Array<{ scope: LimitScope; id: string; limits: Limits }>> {
    if (call.agentUuid === null && call.platformKeyUuid === null) return [];
    const all = await limitsOf(call.workspaceUuid);
    if (all.size === 0) return [];
    const found: Array<{ scope: LimitScope; id: string; limits: Limits }> = [];
    for (const [scope, id] of [
      ['agent', call.agentUuid],
      ['platform_key', call.platformKeyUuid],
    ] as const) {
      const limits = id === null ? undefined : all.get(limitKey(scope, id));
      if (id !== null && limits) found.push({ scope, id, limits });
    }
    return found;
  }

  /**
   * Counts the call's request in each limited scope and checks tokens, all at once; a refusal takes
   * back every request it counted (a refused call counts nothing).
   */
  async function admit(call: CallScopes, opts: { preAdmitted?: boolean } = {}): Promise<Admission | RateRefusal> {
    const scopes = await scopesOf(call);
    if (scopes.length === 0) return ADMITTED_FREELY;
    // A runtime's run was admitted (and its request counted) before its task was handed out.
    if (opts.preAdmitted) return { headers: {}, settle: settler(scopes) };
    const { window } = minuteOf(deps.clock.now());
    const counts: ScopeCounts[] = await Promise.all(
      scopes.map(async (s) => {
        const names = counterScopes(s.scope, s.id);
        const [requests, tokens] = await Promise.all([
          s.limits.rpm === null ? 0 : op(deps.store.hit(names.requests, window), 0),
          s.limits.tpm === null ? 0 : op(deps.store.read(names.tokens, window), 0),
        ]);
        return { ...s, requests, tokens };
      }),
    );
    const now = deps.clock.now();
    const refusal = refusingScope(counts);
    if (refusal) {
      for (const s of counts) {
        // Taken back in the window it was counted in; a count of 0 was never counted (store down).
        if (s.limits.rpm !== null && s.requests > 0)
          void op(deps.store.add(counterScopes(s.scope, s.id).requests, window, -1), 0);
      }
      const shown = counts.map((s) => (s.limits.rpm === null ? s : { ...s, requests: Math.max(0, s.requests - 1) }));
      const headers = rateLimitHeaders(shown, now);
      headers['retry-after'] = String(secondsLeft(now));
      headers['x-taskhook-rate-limit-scope'] = refusal.at.scope;
      return {
        scope: refusal.at.scope,
        on: refusal.on,
        message: refusalMessage(refusal.at, refusal.on, now),
        headers,
      };
    }
    return { headers: rateLimitHeaders(counts, now), settle: settler(counts) };
  }

  /** Adds a call's tokens, once known, to each of its scopes with a tpm, in the window current then. */
  function settler(scopes: Array<{ scope: LimitScope; id: string; limits: Limits }>) {
    const withTokens = scopes.filter((s) => s.limits.tpm !== null);
    return async (tokens: number) => {
      if (tokens <= 0 || withTokens.length === 0) return;
      const at = minuteOf(deps.clock.now()).window;
      await Promise.all(withTokens.map((s) => op(deps.store.add(counterScopes(s.scope, s.id).tokens, at, tokens), 0)));
    };
  }

  /**
   * Before an `openai` agent's queued tasks are handed to its runtime: how many of `n` runs its
   * limits admit now, each counted as one request (one atomic add, the runs it cannot admit taken
   * back at once). `release(k)` takes back `k` admitted runs that found no task to claim.
   */
  async function admitRuns(
    workspaceUuid: string,
    agentUuid: string,
    n: number,
  ): Promise<{ admitted: number; release: (k: number) => void }> {
    const none = { admitted: n, release: () => undefined };
    const [s] = await scopesOf({ workspaceUuid, agentUuid, platformKeyUuid: null });
    if (!s || n <= 0) return none;
    const { window } = minuteOf(deps.clock.now());
    const names = counterScopes('agent', agentUuid);
    if (s.limits.tpm !== null && (await op(deps.store.read(names.tokens, window), 0)) >= s.limits.tpm)
      return { admitted: 0, release: () => undefined };
    if (s.limits.rpm === null) return none;
    const count = await op(deps.store.add(names.requests, window, n), 0);
    if (count === 0) return none; // the store failed: let the runs through uncounted
    const admitted = Math.max(0, Math.min(n, s.limits.rpm - (count - n)));
    const release = (k: number) => {
      if (k > 0) void op(deps.store.add(names.requests, window, -k), 0);
    };
    release(n - admitted);
    return { admitted, release };
  }

  /** A scope's counts in the current window (0 without traffic), for the limits endpoints. */
  async function current(scope: LimitScope, id: string) {
    const now = deps.clock.now();
    const { window, start, end } = minuteOf(now);
    const names = counterScopes(scope, id);
    const [requests, tokens] = await Promise.all([
      op(deps.store.read(names.requests, window), 0),
      op(deps.store.read(names.tokens, window), 0),
    ]);
    return { start, end, requests, tokens };
  }

  return { admit, admitRuns, current };
}

export type AdmissionControl = ReturnType<typeof createAdmission>;

/** Whether admit answered a refusal. */
export const isRefusal = (r: Admission | RateRefusal): r is RateRefusal => 'message' in r;
