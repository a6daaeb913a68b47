import pg from 'pg';

export interface Subscription {
  close(): Promise<void>;
}

export interface SubscribeHandlers {
  /** A NOTIFY on one of the channels, from any session of any instance, delivered after its commit. */
  onMessage(payload: string, channel: string): void;
  /**
   * The listening connection is up (true) or lost (false). While it is down notifications are
   * missed, so whoever caches on their strength must stop trusting the cache.
   */
  onState(listening: boolean): void;
  onError?: ((err: Error) => void) | undefined;
}

/** One instance's LISTEN connection, shared by every channel it hears. */
export interface PgListener {
  /** Hears `channels` until the subscription is closed; the connection opens with the first one. */
  listen(channels: readonly string[], handlers: SubscribeHandlers): Subscription;
  /**
   * Sends `payload` on `channel` to every listening session (this one's included), over the
   * listening connection, so a wake-up never waits for a pool connection. Dropped while the
   * connection is down: a notification is a hint, never the only way a waiter learns of work.
   */
  notify(channel: string, payload: string): void;
  /** Ends the connection and every subscription. */
  close(): Promise<void>;
}

interface Sub {
  channels: ReadonlySet<string>;
  handlers: SubscribeHandlers;
}

const RETRY_MS = 1000;

/**
 * One dedicated connection (outside the pool: a pooled connection may be handed to a query at
 * any time) for every LISTEN of the instance, reconnecting after a loss. Queries on it run one at
 * a time (pg deprecates overlapping queries on one client); notifications published meanwhile go
 * out together in the next statement, each payload once.
 */
export function createPgListener(url: string): PgListener {
  const subs = new Set<Sub>();
  let closed = false;
  let client: pg.Client | null = null;
  let up = false;
  let retry: NodeJS.Timeout | null = null;
  let queue: Promise<unknown> = Promise.resolve();
  let pending = new Map<string, Set<string>>();
  let sending = false;

  /** Runs `fn` on the current client after the queries before it; skipped if the client changed. */
  function enqueue(c: pg.Client, fn: (c: pg.Client) => Promise<unknown>): Promise<void> {
    const run = queue.then(() => (client === c ? fn(c) : undefined));
    queue = run.catch(() => undefined);
    return run.then(() => undefined);
  }

  function lost(err?: Error) {
    for (const { handlers } of subs) {
      if (err) handlers.onError?.(err);
      handlers.onState(false);
    }
    up = false;
    const dead = client;
    client = null;
    dead?.removeAllListeners();
    dead?.on('error', () => undefined);
    void dead?.end().catch(() => undefined);
    schedule();
  }

  function schedule() {
    if (closed || retry || client || subs.size === 0) return;
    retry = setTimeout(connect, RETRY_MS);
    retry.unref();
  }

  async function connect() {
    retry = null;
    if (closed || subs.size === 0) return;
    // Named, so an operator (and the fault tests) can tell it in pg_stat_activity.
    const next = new pg.Client({ connectionString: url, application_name: 'taskhook-listen' });
    client = next;
    next.on('notification', (msg) => {
      for (const { channels, handlers } of subs)
        if (channels.has(msg.channel)) handlers.onMessage(msg.payload ?? '', msg.channel);
    });
    next.on('error', (err) => client === next && lost(err));
    next.on('end', () => client === next && lost());
    try {
      await next.connect();
      // Subscribers may join while the LISTENs run: loop until every channel is heard.
      const heard = new Set<string>();
      for (;;) {
        const missing = [...subs].flatMap((sub) => [...sub.channels]).filter((channel) => !heard.has(channel));
        if (missing.length === 0 || client !== next) break;
        for (const channel of new Set(missing)) {
          await next.query(`listen "${channel}"`);
          heard.add(channel);
        }
      }
      if (client !== next || closed) return;
      up = true;
      for (const { handlers } of subs) handlers.onState(true);
      flush();
    } catch (err) {
      if (client === next) lost(err as Error);
    }
  }

  function flush() {
    const c = client;
    if (!up || !c || sending || pending.size === 0) return;
    const batch = pending;
    pending = new Map();
    sending = true;
    void enqueue(c, async (c) => {
      for (const [channel, payloads] of batch) {
        await c.query('select pg_notify($1, k) from unnest($2::text[]) as k', [channel, [...payloads]]);
      }
    })
      .catch(() => undefined)
      .finally(() => {
        sending = false;
        flush();
      });
  }

  /** Adds a subscriber to a connection already up: LISTEN its new channels first. */
  function join(sub: Sub, c: pg.Client) {
    void enqueue(c, async (c) => {
      for (const channel of sub.channels) await c.query(`listen "${channel}"`);
      if (client === c && up && subs.has(sub)) sub.handlers.onState(true);
    }).catch((err) => client === c && lost(err as Error));
  }

  return {
    listen(channels, handlers) {
      const sub: Sub = { channels: new Set(channels), handlers };
      subs.add(sub);
      if (closed) return { close: async () => undefined };
      if (client && up) join(sub, client);
      else if (!client && !retry) void connect();
      return {
        async close() {
          if (!subs.delete(sub)) return;
          handlers.onState(false);
          if (subs.size === 0) await end();
        },
      };
    },
    notify(channel, payload) {
      if (!up) return;
      let payloads = pending.get(channel);
      if (!payloads) {
        payloads = new Set();
        pending.set(channel, payloads);
      }
      payloads.add(payload);
      flush();
    },
    async close() {
      closed = true;
      const left = [...subs];
      subs.clear();
      for (const { handlers } of left) handlers.onState(false);
      await end();
    },
  };

  async function end() {
    if (retry) clearTimeout(retry);
    retry = null;
    up = false;
    pending = new Map();
    const last = client;
    client = null;
    last?.removeAllListeners();
    last?.on('error', () => undefined);
    await last?.end().catch(() => undefined);
  }
}
