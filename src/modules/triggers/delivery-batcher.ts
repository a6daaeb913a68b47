import type { Db, Executor } from '../../db/connect.js';
import type { NewTask } from '../tasks/lifecycle/transition-fns.js';
import { planDeliveryBatch } from './delivery-batch-fns.js';
import type { DeliveryRow } from './trigger-deliveries-repo.js';
import type { TriggersRepo } from './triggers-repo.js';
import type { WebhookAccepted } from './triggers-schemas.js';

/** Most deliveries one batch writes (one statement per table: far below either database's parameter limit). */
export const MAX_DELIVERY_BATCH = 100;

/** An accepted delivery to record, with the task it creates. */
export interface AcceptedDelivery {
  record: DeliveryRow;
  task: NewTask;
  nowMs: number;
}

/** `first` when the delivery repeated an accepted one: its 202 is answered again, nothing was created. */
export type DeliveryWritten = { created: true } | { created: false; first: WebhookAccepted };

/**
 * Writes the deliveries received in the same turn of the event loop together, like the submit
 * batcher: one transaction for the dedup check, the expired ids' release, and one multi-row
 * INSERT each for the delivery records and the tasks. Each caller's promise settles once its
 * delivery is committed. A delivery whose id is still held (or repeats one earlier in the batch)
 * goes through `alone` after the batch commits; if the batch fails as a whole, every delivery
 * does, so each gets exactly the answer the single path gives.
 */
export function createDeliveryBatcher(deps: {
  db: Db;
  repo: Pick<TriggersRepo, 'findDedupHolders' | 'releaseDedupKeys' | 'insertDeliveries'>;
  insertTasks: (trx: Executor, tasks: NewTask[]) => Promise<void>;
  windowMs: number;
  /** Today's path for one delivery, in a transaction of its own. */
  alone: (delivery: AcceptedDelivery) => Promise<DeliveryWritten>;
}) {
  interface Waiting extends AcceptedDelivery {
    triggerUuid: string;
    dedupKey: string | null;
    resolve: (written: DeliveryWritten) => void;
    reject: (err: unknown) => void;
  }
  let pending: Waiting[] = [];

  const writeTogether = (batch: Waiting[]) =>
    deps.db.transaction(async (trx) => {
      const keyed = batch.flatMap((w) =>
        w.dedupKey === null ? [] : [{ triggerUuid: w.triggerUuid, key: w.dedupKey }],
      );
      const plan = planDeliveryBatch(batch, await deps.repo.findDedupHolders(trx, keyed), deps.windowMs);
      await deps.repo.releaseDedupKeys(trx, plan.release);
      if (plan.together.length > 0) {
        await deps.repo.insertDeliveries(
          trx,
          plan.together.map((w) => w.record),
        );
        await deps.insertTasks(
          trx,
          plan.together.map((w) => w.task),
        );
      }
      return plan;
    });

  async function flush(batch: Waiting[]) {
    let alone = batch;
    if (batch.length > 1) {
      try {
        const plan = await writeTogether(batch);
        for (const w of plan.together) w.resolve({ created: true });
        alone = plan.alone;
      } catch {
        // Each alone: one bad delivery fails only its own receive.
      }
    }
    await Promise.all(alone.map((w) => deps.alone(w).then(w.resolve, w.reject)));
  }

  return {
    /** Resolves once the delivery is committed (durable), with the others of its turn. */
    write(delivery: AcceptedDelivery): Promise<DeliveryWritten> {
      return new Promise<DeliveryWritten>((resolve, reject) => {
        const { triggerUuid, dedupKey } = delivery.record;
        pending.push({ ...delivery, triggerUuid, dedupKey, resolve, reject });
        if (pending.length > 1) return;
        setImmediate(() => {
          const all = pending;
          pending = [];
          for (let i = 0; i < all.length; i += MAX_DELIVERY_BATCH) void flush(all.slice(i, i + MAX_DELIVERY_BATCH));
        });
      });
    },
  };
}
