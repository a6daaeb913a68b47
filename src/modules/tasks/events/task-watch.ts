import type { Channel, Notifier } from '../../../lib/notifier.js';

/**
 * What a task watch hears, by name: the notifier's per-task channels. `task`: the task changed
 * in a way a reader sees (a new event in its log, announced after the change commits). A new
 * per-task announcement (e.g. streamed output) is a new channel declared by its publisher
 * (`NotifierChannels`) and named here.
 */
export type TaskTopic = Extract<Channel, 'task'>;

/** Why a `wait` returned. */
export interface Wake<T extends string> {
  /**
   * What was announced since the previous `wait` returned (or since the watch was made). Empty:
   * the time given ran out, or the notifier's fallback poll came round (an announcement from
   * another instance can be lost); read again all the same.
   */
  heard: ReadonlySet<T>;
  /** The watch is closed (`close()`, or its AbortSignal aborted): stop reading. */
  closed: boolean;
}

/**
 * A subscription to announcements about one thing (a task, an agent's queue), for a reader that
 * reads what is announced and waits between its reads. Made before the first read and kept until
 * the reader is done, it never misses an announcement: one that arrives while the reader reads
 * makes the next `wait` return at once. One `wait` at a time.
 *
 * ```ts
 * const watch = watchTask(notifier, taskUuid, { signal });
 * try {
 *   for (;;) {
 *     const task = await read();
 *     if (done(task)) return task;
 *     if ((await watch.wait(deadline - performance.now())).closed) return task;
 *   }
 * } finally {
 *   watch.close();
 * }
 * ```
 */
export interface Watch<T extends string> {
  /**
   * Resolves when it is time to read again: at once if something was announced since the
   * previous `wait` returned (or since the watch was made) or the watch is closed; otherwise at
   * the next announcement, after `maxMs` (default: no limit), at the notifier's fallback poll
   * (`Notifier.fallbackPollMs`, whichever comes first), or when the watch closes.
   * @throws Error when another `wait` of this watch is in progress.
   */
  wait(maxMs?: number): Promise<Wake<T>>;
  /** Unsubscribes, and ends a `wait` in progress (it answers `closed`). Calling it again does nothing. */
  close(): void;
  readonly closed: boolean;
}

export type TaskWatch = Watch<TaskTopic>;

type WatchNotifier = Pick<Notifier, 'subscribe' | 'fallbackPollMs'>;

/**
 * Watches one task: the event stream, the A2A and MCP waits and streams all wait on it between
 * their reads of the task or its events. Subscribes at once: make it before the first read.
 * @param opts.signal closes the watch when it aborts (the client went away, the app closes).
 */
export function watchTask(notifier: WatchNotifier, taskUuid: string, opts: { signal?: AbortSignal } = {}): TaskWatch {
  return watchKeys(notifier, taskUuid, ['task'], opts.signal);
}

/**
 * Watches an agent's queue (`work`: a task became claimable, or a held one was freed): a
 * long-polling claim waits on it between its claims. Subscribes at once: make it before the
 * first claim.
 */
export function watchWork(
  notifier: WatchNotifier,
  agentUuid: string,
  opts: { signal?: AbortSignal } = {},
): Watch<Extract<Channel, 'work'>> {
  return watchKeys(notifier, agentUuid, ['work'], opts.signal);
}

/**
 * Watches an agent's tasks (`tasks`: a task of the agent was created or changed visibly) and the
 * agent itself (`agent-deleted`): the agent-wide event stream waits on it between its reads.
 * Subscribes at once: make it before the first read.
 */
export function watchAgentTasks(
  notifier: WatchNotifier,
  agentUuid: string,
  opts: { signal?: AbortSignal } = {},
): Watch<Extract<Channel, 'tasks' | 'agent-deleted'>> {
  return watchKeys(notifier, agentUuid, ['tasks', 'agent-deleted'], opts.signal);
}

function watchKeys<T extends Channel>(
  notifier: WatchNotifier,
  id: string,
  channels: readonly T[],
  signal: AbortSignal | undefined,
): Watch<T> {
  let heard = new Set<T>();
  let closed = false;
  // Ends the wait in progress, if any.
  let release: (() => void) | null = null;
  const unsubscribes = channels.map((channel) =>
    notifier.subscribe(channel, id, () => {
      heard.add(channel);
      release?.();
    }),
  );

  function close(): void {
    if (closed) return;
    closed = true;
    for (const unsubscribe of unsubscribes) unsubscribe();
    signal?.removeEventListener('abort', close);
    release?.();
  }
  signal?.addEventListener('abort', close, { once: true });
  if (signal?.aborted) close();

  // The announcements are handed over as the wait returns, so one that arrives during the read
  // that follows is kept for the next wait.
  function take(): Wake<T> {
    const wake = { heard, closed };
    heard = new Set();
    return wake;
  }

  return {
    get closed() {
      return closed;
    },
    close,
    async wait(maxMs = Number.POSITIVE_INFINITY): Promise<Wake<T>> {
      if (release) throw new Error('watch: one wait at a time');
      if (closed || heard.size > 0) return take();
      const ms = Math.max(0, Math.min(maxMs, notifier.fallbackPollMs));
      await new Promise<void>((resolve) => {
        // No timer when nothing bounds the wait (no limit, and no fallback poll on SQLite).
        const timer = Number.isFinite(ms) ? setTimeout(done, ms) : undefined;
        release = done;
        function done() {
          clearTimeout(timer);
          release = null;
          resolve();
        }
      });
      return take();
    },
  };
}
