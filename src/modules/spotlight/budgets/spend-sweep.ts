import type { Executor } from '../../../db/connect.js';
import { budgetsRepo } from './budgets-repo.js';

/** Batches of task ids looked at per call, at most: each call's work stays bounded. */
const MAX_STEPS = 10;

/** Which of these task uuids still exist: the tasks room answers it. */
export type ExistingTasks = (ex: Executor, taskUuids: readonly string[]) => Promise<Set<string>>;

/**
 * Housekeeping of the spend totals (a `deleteExpired…(ex, before, batch)`): the month and day
 * windows that started before `before`, then the totals of tasks that no longer exist, which
 * only the tasks room can tell. Task totals are walked in id order from a cursor kept here, a few
 * batches per call, so one call does bounded work and a full pass looks at every total once.
 */
export function createSpendSweep(existing: ExistingTasks) {
  let cursor = '';
  return async function deleteExpiredSpend(ex: Executor, before: string, batch: number): Promise<number> {
    let deleted = await budgetsRepo.deleteExpiredWindows(ex, before, batch);
    for (let step = 0; step < MAX_STEPS && deleted < batch; step++) {
      const ids = await budgetsRepo.taskIdsAfter(ex, cursor, batch);
      const live = await existing(ex, ids);
      deleted += await budgetsRepo.deleteTaskSpend(
        ex,
        ids.filter((id) => !live.has(id)),
      );
      // A short batch is the end of the pass: the next call starts again from the first id.
      cursor = ids.length < batch ? '' : (ids[ids.length - 1] as string);
      if (cursor === '') break;
    }
    return deleted;
  };
}
