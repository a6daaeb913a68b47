import { type Kysely, sql } from 'kysely';
import type { Database } from './database.js';
import { assertOutsideTransaction, type Executor, runHooks, scoped } from './transactions.js';

interface Pending {
  fn: (trx: Executor) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

const MAX_BATCH = 512;

/**
 * Group commit for SQLite: writes queued in the same turn of the event loop share one
 * transaction. Each write runs in its own savepoint, so a write that throws leaves no partial
 * rows and does not disturb its neighbours. Promises settle after COMMIT and, when `sync` is
 * given, after a WAL sync that started after that COMMIT: the sync runs off the event loop, and
 * the next batch commits while the previous one's sync is still in flight. Each write's
 * after-commit hooks run just before its promise settles; a write rolled back drops its hooks.
 */
export function createGroupCommitter(kysely: Kysely<Database>, opts: { sync?: () => Promise<void> } = {}) {
  let queue: Pending[] = [];
  let running: Promise<void> | null = null;
  const syncing = new Set<Promise<void>>();

  async function runBatch(batch: Pending[]): Promise<void> {
    type Outcome = { ok: true; value: unknown; hooks: Array<() => void> } | { ok: false; error: unknown };
    const outcomes: Outcome[] = [];
    try {
      await kysely.transaction().execute(async (trx) => {
        for (const item of batch) {
          if (batch.length === 1) {
            outcomes.push({ ok: true, ...(await scoped(trx, item.fn)) });
            continue;
          }
          await sql`savepoint w`.execute(trx);
          try {
            const done = await scoped(trx, item.fn);
            await sql`release w`.execute(trx);
            outcomes.push({ ok: true, ...done });
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
        if (outcome?.ok) {
          runHooks(outcome.hooks);
          item.resolve(outcome.value);
        } else item.reject(outcome?.error);
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
    run<T>(fn: (trx: Executor) => Promise<T>): Promise<T> {
      // A transaction started inside another would wait for the batch that waits for it.
      try {
        assertOutsideTransaction();
      } catch (err) {
        return Promise.reject(err);
      }
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
