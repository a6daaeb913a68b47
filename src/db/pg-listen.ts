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

const RETRY_MS = 1000;

/**
 * LISTENs on channels with one dedicated connection (outside the pool: a pooled connection may be
 * handed to a query at any time), reconnecting after a loss.
 */
export function listenPostgres(url: string, channels: readonly string[], handlers: SubscribeHandlers): Subscription {
  let closed = false;
  let client: pg.Client | null = null;
  let retry: NodeJS.Timeout | null = null;

  function lost(err?: Error) {
    if (err) handlers.onError?.(err);
    handlers.onState(false);
    const dead = client;
    client = null;
    dead?.removeAllListeners();
    dead?.on('error', () => undefined);
    void dead?.end().catch(() => undefined);
    if (!closed && !retry) retry = setTimeout(connect, RETRY_MS);
  }

  async function connect() {
    retry = null;
    if (closed) return;
    // Named, so an operator (and the fault tests) can tell it in pg_stat_activity.
    const next = new pg.Client({ connectionString: url, application_name: 'taskhook-listen' });
    client = next;
    next.on('notification', (msg) => {
      if (channels.includes(msg.channel)) handlers.onMessage(msg.payload ?? '', msg.channel);
    });
    next.on('error', (err) => client === next && lost(err));
    next.on('end', () => client === next && lost());
    try {
      await next.connect();
      for (const channel of channels) await next.query(`listen "${channel}"`);
      if (client === next && !closed) handlers.onState(true);
    } catch (err) {
      if (client === next) lost(err as Error);
    }
  }

  void connect();
  return {
    async close() {
      closed = true;
      if (retry) clearTimeout(retry);
      const last = client;
      client = null;
      handlers.onState(false);
      await last?.end().catch(() => undefined);
    },
  };
}
