/** A source of the current time; tests pass their own to move time without sleeping. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** ISO 8601 UTC with milliseconds, the only timestamp format the API and storage use. */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** Repeating timers; tests pass their own to fire them without waiting. */
export interface Timers {
  /** Calls `fn` every `ms` until the returned function is called. */
  every(ms: number, fn: () => void): () => void;
}

export const systemTimers: Timers = {
  every(ms, fn) {
    const timer = setInterval(fn, ms);
    timer.unref();
    return () => clearInterval(timer);
  },
};
