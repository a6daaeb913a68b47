import type { Db } from '../../db/connect.js';
import { type Clock, iso } from '../../lib/time.js';
import type { idempotencyRepo } from './idempotency-repo.js';
import { MAX_ATTEMPTS } from './tasks-fns.js';
import type { TaskRecord, TasksRepo } from './tasks-repo.js';
import type { TaskWriter } from './tasks-writer.js';

const BATCH = 200;

interface Log {
  warn(obj: object, msg: string): void;
}

/**
 * Puts tasks whose lease ran out back in the queue (attempt + 1; LEASE_EXPIRED after the last
 * attempt), fails tasks past their timeout (TIMEOUT), and drops expired idempotency keys.
 * Each task is re-read under a lock and re-checked, so several instances can sweep at once.
 */
export function createSweeper(deps: {
  db: Db;
  repo: TasksRepo;
  idempotency: typeof idempotencyRepo;
  writer: TaskWriter;
  clock: Clock;
  intervalMs: number;
  log: Log;
}) {
  const { db, repo, writer } = deps;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | null = null;
  let stopped = true;
  let lastKeySweep = 0;

  async function settle(uuid: string, nowMs: number): Promise<TaskRecord | null> {
    const now = iso(nowMs);
    const result = await db.transaction(async (trx) => {
      const task = await repo.findByUuid(trx, uuid, writer.lock);
      if (task?.status !== 'running') return null;
      if (task.leaseExpiresAt && task.leaseExpiresAt < now) {
        const changes = { ready: task.attempt < MAX_ATTEMPTS, leaseExpiresAt: null, leaseId: null };
        if (task.attempt < MAX_ATTEMPTS) {
          const applied = await writer.apply(
            trx,
            task,
            'lease_expired',
            { ...changes, attempt: task.attempt + 1, estimatedStart: now },
            { now },
          );
          return { after: applied.task, before: task };
        }
        const error = {
          code: 'LEASE_EXPIRED',
          message: `No heartbeat within the lease, ${MAX_ATTEMPTS} attempts made`,
        };
        const applied = await writer.apply(trx, task, 'fail', { ...changes, error, failedAt: now }, { now });
        return { after: applied.task, before: task };
      }
      if (task.timeoutAt && task.timeoutAt < now) {
        const error = { code: 'TIMEOUT', message: `Task ran longer than its timeout of ${task.timeoutSeconds} s` };
        const changes = { ready: false, leaseExpiresAt: null, error, failedAt: now };
        const applied = await writer.apply(trx, task, 'timeout', changes, { now });
        return { after: applied.task, before: task };
      }
      return null;
    });
    if (!result) return null;
    writer.announce(result.after, result.before);
    return result.after;
  }

  /** One pass; returns the tasks it changed. Tests call it directly with a manual clock. */
  async function sweep(): Promise<TaskRecord[]> {
    const nowMs = deps.clock.now();
    const now = iso(nowMs);
    const uuids = new Set([
      ...(await repo.expiredLeases(db.kysely, now, BATCH)),
      ...(await repo.timedOut(db.kysely, now, BATCH)),
    ]);
    const settled = await Promise.all([...uuids].map((uuid) => settle(uuid, nowMs)));
    if (nowMs - lastKeySweep > 60_000) {
      lastKeySweep = nowMs;
      await db.transaction((trx) => deps.idempotency.deleteExpired(trx, now));
    }
    return settled.filter((t): t is TaskRecord => t !== null);
  }

  function schedule() {
    if (stopped) return;
    timer = setTimeout(() => {
      running = sweep()
        .catch((err) => deps.log.warn({ err }, 'sweep failed'))
        .finally(() => {
          running = null;
          schedule();
        });
    }, deps.intervalMs);
    timer.unref();
  }

  return {
    sweep,
    start() {
      stopped = false;
      schedule();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
