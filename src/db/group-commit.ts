import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from './database.js';

interface Pending {
  fn: (trx: Transaction<Database>) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

const MAX_BATCH = 512;

/**
 * Group commit for SQLite: writes queued in the same turn of the event loop share one
 * transaction. Each write runs in its own savepoint, so a write that throws leaves no partial
 * rows and does not disturb its neighbours. Promises settle after COMMIT and, when `sync` is
 * given, after a WAL sync that started after that COMMIT: the sync runs off the event loop, and
 * the next batch commits while the previous one's sync is still in flight.
 */
export function createGroupCommitter(kysely: Kysely<Database>, opts: { sync?: () => Promise<void> } = {}) {
  let queue: Pending[] = [];
  let running: Promise<void> | null = null;
  const syncing = new Set<Promise<void>>();

  async function runBatch(batch: Pending[]): Promise<void> {
    const outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
    try {
      await kysely.transaction().execute(async (trx) => {
        for (const item of batch) {
          if (batch.length === 1) {
            outcomes.push({ ok: true, value: await item.fn(trx) });
            continue;
          }
          await sql`savepoint w`.execute(trx);
          try {
            const value = await item.fn(trx);
            await sql`release w`.execute(trx);
            outcomes.push({ ok: true, value });
          } catch (error) {
            await sql`rollback to w`.execute(trx);
            await sql`release w`.execute(trx);
            outcomes.push({ ok: false, error });
          }
        }
      });
    } catch (error) {
      for (const item of batch) item.reject(error);
      return;
    }
    const settle = () =>
      batch.forEach((item, i) => {
        const outcome = outcomes[i];
        if (outcome?.ok) item.resolve(outcome.value);
        else item.reject(outcome?.error);
      });
    if (!opts.sync) return settle();
    const synced: Promise<void> = opts
      .sync()
      .then(settle, (err) => {
        for (const item of batch) item.reject(err);
      })
      .finally(() => syncing.delete(synced));
    syncing.add(synced);
  }

  async function loop(): Promise<void> {
    // Let every request that arrived in this turn enqueue before the batch closes.
    await new Promise<void>((resolve) => setImmediate(resolve));
    while (queue.length > 0) {
      const batch = queue.slice(0, MAX_BATCH);
      queue = queue.slice(batch.length);
      await runBatch(batch);
    }
    running = null;
  }

  return {
    run<T>(fn: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        queue.push({ fn, resolve: resolve as (v: unknown) => void, reject });
        running ??= loop();
      });
    },
    /** Resolves once every queued write has been committed or rejected. */
    async drain(): Promise<void> {
      while (running) await running;
      await Promise.all(syncing);
    },
  };
}
