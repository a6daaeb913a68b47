import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import type { Executor } from '../../db/connect.js';
import { iso } from '../../lib/time.js';
import type { Runtime } from '../../runtime.js';
import { taskQueries } from '../tasks/task-queries.js';
import { createHousekeepingRepo } from './housekeeping-repo.js';

const DAY_MS = 86_400_000;
/** Rows per statement: small enough that one batch holds SQLite's writer for a few milliseconds. */
export const HOUSEKEEPING_BATCH = 200;
/** Batches per table per round, so one round cannot run for long; the next round goes on. */
const MAX_BATCHES = 50;
/** Key of the PostgreSQL advisory lock that lets one instance at a time do housekeeping. */
export const HOUSEKEEPING_LOCK_KEY = 0x7461736b; // "task"

export interface HousekeepingResult {
  tasks: number;
  triggerDeliveries: number;
  idempotencyKeys: number;
  /** A2A messageIds past their 24 hours of duplicate detection. */
  a2aMessageIds: number;
  /** False when another instance held the lock (PostgreSQL), so this round did nothing. */
  ran: boolean;
}

/**
 * Deletes what is past its time, in small batches in the background: finished tasks (with their
 * events and callback deliveries) and trigger deliveries older than TASKHOOK_RETENTION_DAYS, and
 * idempotency keys and A2A messageIds past their 24 hours. On PostgreSQL each batch takes an advisory lock, so
 * instances take turns instead of deleting the same rows together.
 */
export function createHousekeepingModule(deps: { config: Config; runtime: Runtime }) {
  const { db, clock, logger } = deps.runtime;
  const repo = createHousekeepingRepo();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  /** One batch in its own transaction; null when another instance holds the lock. */
  function batch(work: (ex: Executor) => Promise<number>): Promise<number | null> {
    return db.transaction(async (ex) => {
      if (db.dialect === 'postgres' && !(await repo.tryLock(ex, HOUSEKEEPING_LOCK_KEY))) return null;
      return work(ex);
    });
  }

  /** Repeats a batch until it deletes less than a full batch (or the round's cap). */
  async function drain(work: (ex: Executor) => Promise<number>): Promise<number | null> {
    let total = 0;
    for (let i = 0; i < MAX_BATCHES && !stopped; i++) {
      const n = await batch(work);
      if (n === null) return null;
      total += n;
      if (n < HOUSEKEEPING_BATCH) break;
    }
    return total;
  }

  /** One round over every kind of old row. Tests call it directly. */
  async function runOnce(): Promise<HousekeepingResult> {
    const now = clock.now();
    const before = iso(now - deps.config.retentionDays * DAY_MS);
    const tasks = await drain((ex) => taskQueries.deleteFinished(ex, before, HOUSEKEEPING_BATCH));
    const triggerDeliveries = await drain((ex) => repo.deleteTriggerDeliveries(ex, before, HOUSEKEEPING_BATCH));
    const idempotencyKeys = await drain((ex) => repo.deleteExpiredIdempotencyKeys(ex, iso(now), HOUSEKEEPING_BATCH));
    const a2aMessageIds = await drain((ex) => repo.deleteExpiredA2aMessageIds(ex, iso(now), HOUSEKEEPING_BATCH));
    const ran = tasks !== null && triggerDeliveries !== null && idempotencyKeys !== null && a2aMessageIds !== null;
    return {
      tasks: tasks ?? 0,
      triggerDeliveries: triggerDeliveries ?? 0,
      idempotencyKeys: idempotencyKeys ?? 0,
      a2aMessageIds: a2aMessageIds ?? 0,
      ran,
    };
  }

  function schedule() {
    if (stopped) return;
    timer = setTimeout(() => {
      runOnce()
        .then((r) => {
          if (r.tasks + r.triggerDeliveries + r.idempotencyKeys + r.a2aMessageIds > 0)
            logger.info(r, 'housekeeping deleted old rows');
        })
        .catch((err) => logger.warn({ err }, 'housekeeping failed; trying again next round'))
        .finally(schedule);
    }, deps.config.housekeepingIntervalMs);
    timer.unref();
  }

  async function routes(app: FastifyInstance) {
    app.addHook('onReady', async () => schedule());
    app.addHook('onClose', async () => {
      stopped = true;
      clearTimeout(timer);
    });
  }

  return { runOnce, routes };
}
