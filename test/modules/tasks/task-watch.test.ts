import { afterEach, describe, expect, it, vi } from 'vitest';
import { createPgListener } from '../../../src/db/pg-listen.js';
import { createNotifier, type Notifier } from '../../../src/lib/notifier.js';
import { watchTask, watchWork } from '../../../src/modules/tasks/events/task-watch.js';
import { POSTGRES_URL } from '../../helpers/databases.js';

const log = { warn: () => undefined };

/** An in-process notifier (SQLite's: no fallback poll) that counts its live subscriptions. */
function countingNotifier() {
  const notifier = createNotifier({ log });
  let live = 0;
  return {
    notifier: {
      publish: notifier.publish,
      fallbackPollMs: notifier.fallbackPollMs,
      subscribe: (...args: Parameters<Notifier['subscribe']>) => {
        const unsubscribe = notifier.subscribe(...args);
        live++;
        let done = false;
        return () => {
          if (!done) live--;
          done = true;
          unsubscribe();
        };
      },
    },
    live: () => live,
  };
}

/** Whether `promise` has settled once everything already queued has run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

describe('the task watch', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('wakes a wait in progress when its task changes, and only for its own task', async () => {
    const { notifier } = countingNotifier();
    const watch = watchTask(notifier, 'task-1');
    const waiting = watch.wait();
    notifier.publish('task', 'task-2');
    notifier.publish('work', 'task-1');
    expect(await settled(waiting)).toBe(false);
    notifier.publish('task', 'task-1');
    expect(await waiting).toEqual({ heard: new Set(['task']), closed: false });
    watch.close();
  });

  it('keeps a change announced between a read and the wait: the next wait returns at once', async () => {
    const { notifier } = countingNotifier();
    const watch = watchTask(notifier, 'task-1');
    // The reader is reading (the watch was made before the read); the change lands now.
    notifier.publish('task', 'task-1');
    expect(await watch.wait()).toEqual({ heard: new Set(['task']), closed: false });
    // Handed over: the next wait waits for the next change.
    const next = watch.wait();
    expect(await settled(next)).toBe(false);
    notifier.publish('task', 'task-1');
    expect((await next).heard.has('task')).toBe(true);
    watch.close();
  });

  it('keeps a change announced while the reader reads after a wake-up', async () => {
    const { notifier } = countingNotifier();
    const watch = watchTask(notifier, 'task-1');
    const first = watch.wait();
    notifier.publish('task', 'task-1');
    await first;
    // The reader reads again; a second change lands before it waits.
    notifier.publish('task', 'task-1');
    expect(await settled(watch.wait())).toBe(true);
    watch.close();
  });

  it('close() ends a wait in progress, unsubscribes, and later waits answer closed at once', async () => {
    const counted = countingNotifier();
    const watch = watchTask(counted.notifier, 'task-1');
    expect(counted.live()).toBe(1);
    const waiting = watch.wait();
    watch.close();
    expect(await waiting).toEqual({ heard: new Set(), closed: true });
    expect(counted.live()).toBe(0);
    expect(watch.closed).toBe(true);
    watch.close();
    expect(await watch.wait()).toEqual({ heard: new Set(), closed: true });
    counted.notifier.publish('task', 'task-1');
    expect(counted.live()).toBe(0);
  });

  it('an aborted signal closes the watch and releases its wait and subscription', async () => {
    const counted = countingNotifier();
    const controller = new AbortController();
    const watch = watchWork(counted.notifier, 'agent-1', { signal: controller.signal });
    const waiting = watch.wait();
    controller.abort();
    expect((await waiting).closed).toBe(true);
    expect(counted.live()).toBe(0);

    const gone = watchTask(counted.notifier, 'task-1', { signal: AbortSignal.abort() });
    expect(gone.closed).toBe(true);
    expect(counted.live()).toBe(0);
    expect((await gone.wait()).closed).toBe(true);
  });

  it('returns after maxMs, or at the fallback poll, with nothing heard', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { notifier } = countingNotifier();
    const watch = watchTask(notifier, 'task-1');
    const bounded = watch.wait(500);
    await vi.advanceTimersByTimeAsync(499);
    expect(await settled(bounded)).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await bounded).toEqual({ heard: new Set(), closed: false });
    watch.close();

    const polling = watchTask({ ...notifier, fallbackPollMs: 1000 }, 'task-1');
    const polled = polling.wait(60_000);
    await vi.advanceTimersByTimeAsync(1000);
    expect(await polled).toEqual({ heard: new Set(), closed: false });
    polling.close();
  });

  it('allows one wait at a time', async () => {
    const { notifier } = countingNotifier();
    const watch = watchTask(notifier, 'task-1');
    const first = watch.wait();
    await expect(watch.wait()).rejects.toThrow(/one wait at a time/);
    watch.close();
    await first;
  });
});

describe.runIf(POSTGRES_URL)('the task watch across instances (PostgreSQL)', () => {
  it("hears another instance's change, also one that lands between a read and the wait", async () => {
    const [la, lb] = [createPgListener(POSTGRES_URL as string), createPgListener(POSTGRES_URL as string)];
    const a = createNotifier({ db: la, log });
    const b = createNotifier({ db: lb, log });
    const task = `task-${process.pid}-${Date.now()}`;
    try {
      // Both listening: a probe published by a reaches b.
      const probe = `probe-${task}`;
      let probed = false;
      const stopProbe = b.subscribe('task', probe, () => {
        probed = true;
      });
      for (let i = 0; i < 500 && !probed; i++) {
        a.publish('task', probe);
        await new Promise((r) => setTimeout(r, 10));
      }
      stopProbe();
      expect(probed).toBe(true);

      // Without the fallback poll, only the announcement can end the wait (nothing passes by luck).
      const watch = watchTask({ ...b, fallbackPollMs: Number.POSITIVE_INFINITY }, task);
      const waiting = watch.wait();
      a.publish('task', task);
      expect((await waiting).heard.has('task')).toBe(true);

      // The reader reads; meanwhile a's change reaches b (seen by another listener of b's).
      const arrived = new Promise<void>((resolve) => {
        const stop = b.subscribe('task', task, () => {
          stop();
          resolve();
        });
      });
      a.publish('task', task);
      await arrived;
      expect(await watch.wait()).toEqual({ heard: new Set(['task']), closed: false });
      watch.close();
    } finally {
      await Promise.all([a.close(), b.close()]);
      await Promise.all([la.close(), lb.close()]);
    }
  });
});
