/**
 * The events of the process, by name. Each room that announces something adds its names here by
 * declaration merging, next to the code that emits them (`declare module '…/lib/event-hub.js'`),
 * so this file imports no room and every listener is typed by the event's name.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled in by declaration merging in each room.
export interface HubEvents {}

export type HubEventName = keyof HubEvents;
export type HubListener<K extends HubEventName> = (event: HubEvents[K]) => Promise<void> | void;

/**
 * One typed hub for task and resource changes: the one way a room hears of another's changes.
 * Listeners run one after the other, in the order they subscribed, and `emit` resolves once all
 * have: an event emitted inside a transaction is heard inside it, with its executor, and a
 * listener that throws makes `emit` throw (so the change rolls back). Work that must wait for the
 * commit is scheduled by the listener with `afterCommit`.
 */
export interface EventHub {
  /** Subscribes `listener` to `name` for the life of the process. */
  on<K extends HubEventName>(name: K, listener: HubListener<K>): void;
  /**
   * Tells every listener of `name`, in order, awaiting each.
   * @throws whatever a listener throws; the listeners after it are not called.
   */
  emit<K extends HubEventName>(name: K, event: HubEvents[K]): Promise<void>;
}

export function createEventHub(): EventHub {
  const listeners = new Map<HubEventName, Array<HubListener<never>>>();
  return {
    on(name, listener) {
      const list = listeners.get(name) ?? [];
      list.push(listener as HubListener<never>);
      listeners.set(name, list);
    },
    async emit(name, event) {
      const list = listeners.get(name);
      if (!list) return;
      for (const listener of list) await (listener as HubListener<typeof name>)(event);
    },
  };
}
