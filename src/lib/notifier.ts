import type { Db } from '../db/connect.js';
import type { Log } from './log.js';

/**
 * The channels wake-ups travel on, by name. Each room that publishes one adds it here by
 * declaration merging, next to the code that publishes it (`declare module '…/lib/notifier.js'`),
 * so this file names no room: the tasks room's `work` and `task`, MCP's `mcp-cancel`.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled in by declaration merging in each room.
export interface NotifierChannels {}

export type Channel = keyof NotifierChannels & string;
type Listener = () => void;

/**
 * Wake-ups, each a key (`channel` and an id) without a payload: "look again at this". In-process
 * listeners are called at once; with PostgreSQL, LISTEN/NOTIFY carries the key to the other
 * instances. A key can be lost (a dropped connection), so waiters also re-check on a timer
 * (`fallbackPollMs`): correctness never depends on a notification arriving.
 */
export interface Notifier {
  publish(channel: Channel, id: string): void;
  subscribe(channel: Channel, id: string, listener: Listener): () => void;
  /** How often waiters should re-check on their own, in ms (Infinity: notifications are reliable). */
  readonly fallbackPollMs: number;
  close(): Promise<void>;
}

const PG_CHANNEL = 'taskhook_events';

/**
 * The notifier of one instance. `db` is the instance's database handle: on PostgreSQL the
 * wake-ups travel over its one LISTEN connection, shared with every other channel it hears.
 */
export function createNotifier(opts: { db?: Pick<Db, 'listen' | 'notify'> | undefined; log: Log }): Notifier {
  const listeners = new Map<string, Set<Listener>>();
  const emit = (key: string) => {
    for (const listener of listeners.get(key) ?? []) listener();
  };
  const { listen, notify } = opts.db ?? {};
  const subscription = listen?.([PG_CHANNEL], {
    onMessage: (payload) => {
      if (payload) emit(payload);
    },
    // While it is down, waiters fall back to polling.
    onState: () => undefined,
    onError: (err) => opts.log.warn({ err }, 'LISTEN connection lost; reconnecting'),
  });

  return {
    fallbackPollMs: listen ? 1000 : Number.POSITIVE_INFINITY,
    publish(channel, id) {
      const key = `${channel}:${id}`;
      emit(key);
      notify?.(PG_CHANNEL, key);
    },
    subscribe(channel, id, listener) {
      const key = `${channel}:${id}`;
      let set = listeners.get(key);
      if (!set) {
        set = new Set();
        listeners.set(key, set);
      }
      set.add(listener);
      return () => {
        set.delete(listener);
        if (set.size === 0) listeners.delete(key);
      };
    },
    async close() {
      for (const set of listeners.values()) for (const listener of set) listener();
      await subscription?.close();
    },
  };
}
