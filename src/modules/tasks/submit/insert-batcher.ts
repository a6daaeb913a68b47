import type { Db } from '../../../db/connect.js';
import { createTurnBatcher } from '../../../lib/turn-batcher.js';
import type { Lifecycle } from '../lifecycle/lifecycle.js';
import type { NewTask } from '../lifecycle/transition-fns.js';

/** Most tasks one batch inserts (one statement: 100 rows stay far below either database's parameter limit). */
export const MAX_INSERT_BATCH = 100;

/**
 * Inserts the tasks submitted in the same turn of the event loop together (a turn batcher): one
 * transaction and one multi-row INSERT for all of them, so under load a submit costs a share of
 * one commit instead of a commit of its own (on PostgreSQL: three round trips for the batch, not
 * three per task). Each caller's promise settles once its task is committed. If the batch fails
 * as a whole, each task is tried again in a transaction of its own, so one bad row fails only its
 * own submit.
 */
export function createInsertBatcher(deps: { db: Db; lifecycle: Pick<Lifecycle, 'createMany'> }) {
  const write = (tasks: NewTask[]) => deps.db.transaction((trx) => deps.lifecycle.createMany(trx, tasks));
  const none: readonly NewTask[] = [];
  return {
    /** Resolves once the task is committed (durable), with the others of its turn. */
    insert: createTurnBatcher<NewTask, void>({
      max: MAX_INSERT_BATCH,
      together: async (tasks) => {
        await write(tasks);
        return { answer: undefined, left: none };
      },
      alone: (task) => write([task]),
    }),
  };
}
