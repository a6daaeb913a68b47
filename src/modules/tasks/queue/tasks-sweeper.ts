import type { Db } from '../../../db/connect.js';
import { AppError } from '../../../http/errors.js';
import type { Log } from '../../../lib/log.js';
import { createLoop } from '../../../lib/loop.js';
import { type Clock, iso } from '../../../lib/time.js';
import type { Lifecycle } from '../lifecycle/lifecycle.js';
import type { TaskRecord } from '../tasks-record.js';
import type { QueueRepo } from './queue-repo.js';

const BATCH = 200;

/**
 * Finds running tasks whose lease ran out or whose timeout passed and applies the transition
 * function's sweep rules to each. Each task is re-read under
 * a lock and re-checked, so several instances can sweep at once.
 */
export function createSweeper(deps: {
  db: Db;
  queue: Pick<QueueRepo, 'expiredLeases' | 'timedOut'>;
  lifecycle: Pick<Lifecycle, 'apply'>;
  clock: Clock;
  intervalMs: number;
  log: Log;
}) {
  const { db, queue, lifecycle } = deps;

  /** Re-reads the task under a lock and applies the sweeper's rules to it; null when nothing changed. */
  function settle(uuid: string, nowMs: number): Promise<TaskRecord | null> {
    return db.transaction(async (trx) => {
      try {
        const applied = await lifecycle.apply(trx, { taskUuid: uuid }, { op: 'sweep' }, nowMs);
        return applied.changed ? applied.task : null;
      } catch (err) {
        // Gone meanwhile (deleted by retention), or refused: nothing to sweep.
        if (err instanceof AppError) return null;
        throw err;
      }
    });
  }

  /** One pass; returns the tasks it changed. */
  async function sweep(): Promise<TaskRecord[]> {
    const nowMs = deps.clock.now();
    const now = iso(nowMs);
    const uuids = new Set([
      ...(await queue.expiredLeases(db.kysely, now, BATCH)),
      ...(await queue.timedOut(db.kysely, now, BATCH)),
    ]);
    const settled = await Promise.all([...uuids].map((uuid) => settle(uuid, nowMs)));
    return settled.filter((t): t is TaskRecord => t !== null);
  }

  const loop = createLoop({ name: 'sweep', intervalMs: deps.intervalMs, run: sweep, log: deps.log });

  return { sweep, start: loop.start, stop: loop.stop };
}
