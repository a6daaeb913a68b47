import type { Db } from '../../../db/connect.js';
import type { Lifecycle } from '../lifecycle/lifecycle.js';
import type { NewTask } from '../lifecycle/transition-fns.js';

/** Most tasks one batch inserts (one statement: 100 rows stay far below either database's parameter limit). */
export const MAX_INSERT_BATCH = 100;

/**
 * Inserts the tasks submitted in the same turn of the event loop together: one transaction and
 * one multi-row INSERT for all of them, so under load a submit costs a share of one commit
 * instead of a commit of its own (on PostgreSQL: three round trips for the batch, not three per
 * task). Each caller's promise settles once its task is committed. If the batch fails as a whole,
 * each task is tried again in a transaction of its own, so one bad row fails only its own submit.
 */
export function createInsertBatcher(deps: { db: Db; lifecycle: Pick<Lifecycle, 'createMany'> }) {
  let pending: Array<{ task: NewTask; resolve: () => void; reject: (err: unknown) => void }> = [];

  const write = (tasks: NewTask[]) => deps.db.transaction((trx) => deps.lifecycle.createMany(trx, tasks));

  async function flush(batch: typeof pending) {
    try {
      await write(batch.map((b) => b.task));
      for (const b of batch) b.resolve();
    } catch (err) {
      if (batch.length === 1) return batch[0]?.reject(err);
      await Promise.all(batch.map((b) => write([b.task]).then(b.resolve, b.reject)));
    }
  }

  return {
    /** Resolves once the task is committed (durable), with the others of its turn. */
    insert(task: NewTask): Promise<void> {
      return new Promise<void>((resolve, reject) => {
        pending.push({ task, resolve, reject });
        if (pending.length > 1) return;
        setImmediate(() => {
          const all = pending;
          pending = [];
          for (let i = 0; i < all.length; i += MAX_INSERT_BATCH) void flush(all.slice(i, i + MAX_INSERT_BATCH));
        });
      });
    },
  };
}
