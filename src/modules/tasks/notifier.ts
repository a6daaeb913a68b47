import pg from 'pg';

export type Channel = 'work' | 'task';
type Listener = () => void;

interface Log {
  warn(obj: object, msg: string): void;
}

/**
 * Wake-ups after a commit: `work` (an agent has claimable work) and `task` (a task changed).
 * In-process listeners are called at once; with PostgreSQL, LISTEN/NOTIFY carries the hint to
 * the other instances. A hint can be lost (a dropped connection), so waiters also re-check on
 * a timer: correctness never depends on a notification arriving.
 */
export interface Notifier {
  publish(channel: Channel, id: string): void;
  subscribe(channel: Channel, id: string, listener: Listener): () => void;
  /** How often waiters should re-check on their own, in ms (Infinity: notifications are reliable). */
  readonly fallbackPollMs: number;
  close(): Promise<void>;
}

const PG_CHANNEL = 'taskhook_events';

export function createNotifier(opts: { databaseUrl?: string | undefined; log: Log }): Notifier {
  const listeners = new Map<string, Set<Listener>>();
  const emit = (key: string) => {
    for (const listener of listeners.get(key) ?? []) listener();
  };

  let client: pg.Client | null = null;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;
  // One query at a time on the LISTEN client (pg deprecates overlapping queries on one client);
  // what is published meanwhile goes out together in the next one, each key once.
  let pending = new Set<string>();
  let sending = false;

  function flush() {
    const c = client;
    if (sending || pending.size === 0 || !c) return;
    const keys = [...pending];
    pending = new Set();
    sending = true;
    c.query('select pg_notify($1, k) from unnest($2::text[]) as k', [PG_CHANNEL, keys])
      .catch(() => undefined)
      .finally(() => {
        sending = false;
        flush();
      });
  }

  async function connect(url: string) {
    // Named, so an operator (and the fault tests) can tell it in pg_stat_activity.
    const c = new pg.Client({ connectionString: url, application_name: 'taskhook-listen' });
    c.on('notification', (msg) => {
      if (msg.payload) emit(msg.payload);
    });
    c.on('error', (err) => {
      opts.log.warn({ err }, 'LISTEN connection lost; reconnecting');
      c.end().catch(() => undefined);
      if (client === c) client = null;
      schedule(url);
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${PG_CHANNEL}`);
      if (closed) await c.end();
      else client = c;
    } catch (err) {
      opts.log.warn({ err }, 'could not LISTEN for notifications; relying on polling');
      c.end().catch(() => undefined);
      schedule(url);
    }
  }

  function schedule(url: string) {
    if (closed) return;
    clearTimeout(retry);
    retry = setTimeout(() => void connect(url), 1000);
    retry.unref();
  }

  if (opts.databaseUrl) void connect(opts.databaseUrl);

  return {
    fallbackPollMs: opts.databaseUrl ? 1000 : Number.POSITIVE_INFINITY,
    publish(channel, id) {
      const key = `${channel}:${id}`;
      emit(key);
      if (!client) return;
      pending.add(key);
      flush();
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
      closed = true;
      clearTimeout(retry);
      for (const set of listeners.values()) for (const listener of set) listener();
      await client?.end().catch(() => undefined);
      client = null;
    },
  };
}

/**
 * Resolves when `channel:id` is published, `ms` pass (capped by the fallback poll) or `signal`
 * aborts, whichever comes first.
 */
export function waitFor(
  notifier: Notifier,
  channel: Channel,
  id: string,
  ms: number,
  signal?: AbortSignal,
): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, Math.max(0, Math.min(ms, notifier.fallbackPollMs)));
    const unsubscribe = notifier.subscribe(channel, id, done);
    signal?.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      unsubscribe();
      signal?.removeEventListener('abort', done);
      resolve();
    }
  });
}
