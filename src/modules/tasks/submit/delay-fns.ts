import { AppError, invalid } from '../../../http/errors.js';

/** The furthest ahead a task may be delayed: 30 days, in seconds. */
export const MAX_DELAY_SECONDS = 2_592_000;

// RFC 3339 date-time: `Z` or a numeric offset, optional fraction of a second.
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * The instant (epoch ms) from which a task submitted at `nowMs` with these fields may be handed
 * out: the later of now and `run_at` (cut to whole milliseconds), or now + `delay_seconds`, or now.
 * @returns the instant, or the refusal (INVALID_REQUEST naming `run_at`, as every error of the pair does
 * but `delay_seconds`' own type and range, which the schema names).
 */
export function availableFrom(
  input: { run_at?: string | undefined; delay_seconds?: number | undefined },
  nowMs: number,
): number | AppError {
  if (input.run_at !== undefined && input.delay_seconds !== undefined)
    return invalid('run_at', 'cannot be given together with delay_seconds');
  if (input.delay_seconds !== undefined) return nowMs + input.delay_seconds * 1000;
  if (input.run_at === undefined) return nowMs;
  const at = RFC3339.test(input.run_at) ? Date.parse(input.run_at) : Number.NaN;
  if (Number.isNaN(at)) return invalid('run_at', 'must be an RFC 3339 date-time with Z or a numeric offset');
  if (at - nowMs > MAX_DELAY_SECONDS * 1000) return invalid('run_at', 'must be at most 30 days ahead');
  // An instant in the past means now.
  return Math.max(nowMs, Math.floor(at));
}

/** `availableFrom`, throwing its refusal. */
export function requireAvailableFrom(
  input: { run_at?: string | undefined; delay_seconds?: number | undefined },
  nowMs: number,
): number {
  const at = availableFrom(input, nowMs);
  if (at instanceof AppError) throw at;
  return at;
}
