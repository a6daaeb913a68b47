import type { Log } from './log.js';
import { systemTimers, type Timers } from './time.js';

/** Background work repeated on a timer: the sweeper, housekeeping, the senders. */
export interface Loop {
  /** Starts the timer; with `immediate`, the first pass runs at once. */
  start(): void;
  /**
   * Runs a pass now, or after `delayMs`. A nudge while a pass runs asks for one more right after
   * it (the work the nudge announces may have come too late for the running pass).
   */
  nudge(delayMs?: number): void;
  /** Stops the timer and waits for the pass in flight. */
  stop(): Promise<void>;
}

export interface LoopOptions {
  /** Names the loop in the warning logged when a pass throws. */
  name: string;
  intervalMs: number;
  /** One pass. A throw is logged and the loop goes on at the next tick. */
  run: () => Promise<unknown>;
  log: Log;
  /** Run the first pass at start rather than one interval later. */
  immediate?: boolean;
  /** Tests pass `manualTimers()` to fire the ticks themselves. */
  timers?: Timers;
}

/**
 * One pass at a time, every `intervalMs` (a tick that finds a pass running is dropped), plus
 * passes on demand. Timers are unref'd: a loop never keeps the process alive.
 */
export function createLoop(opts: LoopOptions): Loop {
  const timers = opts.timers ?? systemTimers;
  let stopped = true;
  let cancel: (() => void) | null = null;
  let pass: Promise<void> | null = null;
  let again = false;
  const delayed = new Set<NodeJS.Timeout>();

  async function passes() {
    do {
      again = false;
      try {
        await opts.run();
      } catch (err) {
        opts.log.warn({ err }, `${opts.name} failed; trying again at the next tick`);
      }
    } while (again && !stopped);
  }

  function tick(rerun: boolean) {
    if (stopped) return;
    if (pass) {
      again ||= rerun;
      return;
    }
    pass = passes().finally(() => {
      pass = null;
    });
  }

  return {
    start() {
      if (!stopped) return;
      stopped = false;
      cancel = timers.every(opts.intervalMs, () => tick(false));
      if (opts.immediate) tick(false);
    },
    nudge(delayMs = 0) {
      if (stopped) return;
      if (delayMs <= 0) return tick(true);
      const timer = setTimeout(() => {
        delayed.delete(timer);
        tick(true);
      }, delayMs);
      timer.unref();
      delayed.add(timer);
    },
    async stop() {
      stopped = true;
      cancel?.();
      cancel = null;
      for (const timer of delayed) clearTimeout(timer);
      delayed.clear();
      await pass;
    },
  };
}
