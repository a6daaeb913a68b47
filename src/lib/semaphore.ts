/**
 * A counting semaphore whose waiters give up after a while. Slots pass straight from a releasing
 * holder to the oldest waiter, so a steady stream of newcomers cannot starve the queue.
 */
export function createSemaphore(limit: number) {
  let active = 0;
  const waiting: Array<(granted: boolean) => void> = [];

  return {
    get active(): number {
      return active;
    },
    get waiting(): number {
      return waiting.length;
    },
    /** Resolves true once a slot is held (release it), or false after `maxWaitMs` without one. */
    acquire(maxWaitMs: number): Promise<boolean> {
      if (active < limit) {
        active++;
        return Promise.resolve(true);
      }
      if (maxWaitMs <= 0) return Promise.resolve(false);
      return new Promise<boolean>((resolve) => {
        const grant = (granted: boolean) => {
          clearTimeout(timer);
          resolve(granted);
        };
        const timer = setTimeout(() => {
          const at = waiting.indexOf(grant);
          if (at >= 0) waiting.splice(at, 1);
          resolve(false);
        }, maxWaitMs);
        waiting.push(grant);
      });
    },
    release(): void {
      const next = waiting.shift();
      if (next) next(true);
      else active--;
    },
  };
}

export type Semaphore = ReturnType<typeof createSemaphore>;
