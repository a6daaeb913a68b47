/** The longest a retryable push run waits before its next attempt, whatever the remote asked. */
const MAX_RETRY_DELAY_MS = 60_000;

/**
 * When a task whose attempt `attempt` (1-based) failed retryably may be handed out again:
 * 1 s × 2^(attempt − 1), or the failed answer's Retry-After when longer; at most 60 s.
 */
export function retryDelayMs(attempt: number, retryAfterMs: number | null): number {
  return Math.min(MAX_RETRY_DELAY_MS, Math.max(1000 * 2 ** (attempt - 1), retryAfterMs ?? 0));
}

/**
 * Seconds to wait before attempt `failedAttempts + 1` of a scheduled delivery (a callback), with
 * ±20% jitter so deliveries that failed together do not retry together; null when the schedule is
 * exhausted.
 */
export function scheduledDelaySeconds(schedule: number[], failedAttempts: number, random = Math.random): number | null {
  const base = schedule[failedAttempts - 1];
  if (base === undefined) return null;
  return base * (0.8 + 0.4 * random());
}
