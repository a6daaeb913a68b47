/** The scopes RPM/TPM limits apply to. */
export type LimitScope = 'agent' | 'platform_key';

/** A scope's limits; null is no limit. */
export interface Limits {
  rpm: number | null;
  tpm: number | null;
}

export const MAX_RPM = 1_000_000;
export const MAX_TPM = 1_000_000_000;
const MINUTE_MS = 60_000;

/** The fixed UTC minute `now` falls in: its number (as the request rate limit counts windows), start and end. */
export function minuteOf(now: number) {
  const window = Math.floor(now / MINUTE_MS);
  const start = window * MINUTE_MS;
  return { window, start, end: start + MINUTE_MS };
}

/** Whole seconds from `now` until the window ends, 1–60. */
export const secondsLeft = (now: number) => Math.min(60, Math.max(1, Math.ceil((minuteOf(now).end - now) / 1000)));

/** The counter names of a scope in the shared rate-limit store (never a workspace's own request scope). */
export const counterScopes = (scope: LimitScope, id: string) => ({
  requests: `spotlight:${scope}:${id}:rpm`,
  tokens: `spotlight:${scope}:${id}:tpm`,
});

/** One scope of a call with its limits and the counts seen at admission. */
export interface ScopeCounts {
  scope: LimitScope;
  id: string;
  limits: Limits;
  /** Requests in the window, this call included when it was admitted (0 without an rpm). */
  requests: number;
  /** Tokens in the window at admission (0 without a tpm). */
  tokens: number;
}

/** What refuses a call: the first scope (agent first) whose window holds rpm requests, or tpm or more tokens. */
export function refusingScope(scopes: ScopeCounts[]): { at: ScopeCounts; on: 'requests' | 'tokens' } | null {
  for (const at of scopes) {
    if (at.limits.rpm !== null && at.requests > at.limits.rpm) return { at, on: 'requests' };
    if (at.limits.tpm !== null && at.tokens >= at.limits.tpm) return { at, on: 'tokens' };
  }
  return null;
}

/**
 * OpenAI's `x-ratelimit-*` headers (docs/model-proxy.md): each family from the limited scope with
 * fewer remaining (a tie: the agent, which comes first). Empty when no scope has a limit.
 */
export function rateLimitHeaders(scopes: ScopeCounts[], now: number): Record<string, string> {
  const headers: Record<string, string> = {};
  const reset = `${secondsLeft(now)}s`;
  const family = (pick: (s: ScopeCounts) => { limit: number; used: number } | null, name: 'requests' | 'tokens') => {
    let best: { limit: number; remaining: number } | null = null;
    for (const s of scopes) {
      const got = pick(s);
      if (!got) continue;
      const remaining = Math.max(0, got.limit - got.used);
      if (!best || remaining < best.remaining) best = { limit: got.limit, remaining };
    }
    if (!best) return;
    headers[`x-ratelimit-limit-${name}`] = String(best.limit);
    headers[`x-ratelimit-remaining-${name}`] = String(best.remaining);
    headers[`x-ratelimit-reset-${name}`] = reset;
  };
  family((s) => (s.limits.rpm === null ? null : { limit: s.limits.rpm, used: s.requests }), 'requests');
  family((s) => (s.limits.tpm === null ? null : { limit: s.limits.tpm, used: s.tokens }), 'tokens');
  return headers;
}

/** The refusal's message, in the words OpenAI uses for its own. */
export function refusalMessage(at: ScopeCounts, on: 'requests' | 'tokens', now: number): string {
  const limit = on === 'requests' ? (at.limits.rpm as number) : (at.limits.tpm as number);
  const used = on === 'requests' ? Math.min(at.requests - 1, limit) : at.tokens;
  const who = at.scope === 'agent' ? 'agent' : 'platform key';
  return `Rate limit reached for ${who} ${at.id} on ${on} per minute: limit ${limit}, used ${used}. Try again in ${secondsLeft(now)}s.`;
}
