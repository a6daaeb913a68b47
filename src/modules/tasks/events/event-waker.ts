/**
 * What a reader following a task's event log waits on between reads: a wake-up (the notifier
 * announced a change, or the stream is ending), or the fallback poll for changes another instance
 * made whose announcement was lost. `arm()` before each read: a wake-up that arrives during the
 * read makes the next `wait()` return at once, so no change is missed between read and wait.
 * Used by the task event stream and the A2A streams.
 */
export function createEventWaker(fallbackPollMs: number) {
  let signalled = false;
  let resolveWait: (() => void) | null = null;
  return {
    wake(): void {
      signalled = true;
      resolveWait?.();
    },
    arm(): void {
      signalled = false;
    },
    async wait(): Promise<void> {
      if (signalled) return;
      await new Promise<void>((resolve) => {
        // Without cross-instance notifications (fallbackPollMs infinite) only a wake-up comes.
        const poll = Number.isFinite(fallbackPollMs) ? setTimeout(resolve, fallbackPollMs) : undefined;
        resolveWait = () => {
          clearTimeout(poll);
          resolve();
        };
      });
      resolveWait = null;
    },
  };
}
