import { type Static, Type } from '@sinclair/typebox';
import { StrictObject } from '../../http/common-schemas.js';

/** How long to wait before the next attempt: `min(max_seconds, initial_seconds × factor^(n − 1))` after attempt n. */
export interface Backoff {
  initial_seconds: number;
  factor: number;
  max_seconds: number;
}

/** An agent's retry policy, fixed on each task when it is created. */
export interface RetryPolicy {
  max_attempts: number;
  backoff: Backoff;
}

export const DEFAULT_BACKOFF: Backoff = { initial_seconds: 0, factor: 2, max_seconds: 3600 };
export const DEFAULT_RETRY: RetryPolicy = { max_attempts: 3, backoff: DEFAULT_BACKOFF };

/** The `retry` of POST /agent and PATCH /agent/:id: every member optional, an omitted one takes its default. */
export const RetryInput = StrictObject(
  {
    max_attempts: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 100, description: 'Attempts in all; 1 never retries. Default 3.' }),
    ),
    backoff: Type.Optional(
      StrictObject({
        initial_seconds: Type.Optional(
          Type.Number({ minimum: 0, maximum: 86400, description: 'Wait after the first attempt; default 0.' }),
        ),
        factor: Type.Optional(
          Type.Number({
            minimum: 1,
            maximum: 10,
            description: 'Each further wait is this many times longer; default 2.',
          }),
        ),
        max_seconds: Type.Optional(
          Type.Number({ minimum: 0, maximum: 86400, description: 'No wait is longer; default 3600.' }),
        ),
      }),
    ),
  },
  {
    description:
      'How tasks of this agent are retried after a lease expiry or a retryable failure; fixed on each task when it is created. PATCH replaces it whole (members left out go back to their defaults).',
  },
);
export type RetryInputValue = Static<typeof RetryInput>;

export const RetryOutput = Type.Object({
  max_attempts: Type.Integer(),
  backoff: Type.Object({ initial_seconds: Type.Number(), factor: Type.Number(), max_seconds: Type.Number() }),
});

/** The whole policy an input asks for: omitted members take their defaults. */
export function retryPolicyOf(input: RetryInputValue | undefined | null): RetryPolicy {
  return {
    max_attempts: input?.max_attempts ?? DEFAULT_RETRY.max_attempts,
    backoff: {
      initial_seconds: input?.backoff?.initial_seconds ?? DEFAULT_BACKOFF.initial_seconds,
      factor: input?.backoff?.factor ?? DEFAULT_BACKOFF.factor,
      max_seconds: input?.backoff?.max_seconds ?? DEFAULT_BACKOFF.max_seconds,
    },
  };
}

/** Whether a backoff is the default one (stored as null, so tasks of most agents carry nothing). */
export function isDefaultBackoff(b: Backoff): boolean {
  return (
    b.initial_seconds === DEFAULT_BACKOFF.initial_seconds &&
    b.factor === DEFAULT_BACKOFF.factor &&
    b.max_seconds === DEFAULT_BACKOFF.max_seconds
  );
}

/** Seconds to wait after attempt `n` (≥ 1) ended retryably. */
export function backoffSeconds(b: Backoff, n: number): number {
  return Math.min(b.max_seconds, b.initial_seconds * b.factor ** (n - 1));
}
