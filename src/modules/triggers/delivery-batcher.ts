import type { Db, Executor } from '../../db/connect.js';
import { createTurnBatcher } from '../../lib/turn-batcher.js';
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

const CREATED: DeliveryWritten = { created: true };

/**
 * Writes the deliveries received in the same turn of the event loop together (a turn batcher,
 * like the submits'): one transaction for the dedup check, the expired ids' release, and one
 * multi-row INSERT each for the delivery records and the tasks. Each caller's promise settles
 * once its delivery is committed. A delivery whose id is still held (or repeats one earlier in
 * the batch) goes through `alone` after the batch commits; if the batch fails as a whole, every
 * delivery does, so each gets exactly the answer the single path gives.
 */
export function createDeliveryBatcher(deps: {
  db: Db;
  repo: Pick<TriggersRepo, 'findDedupHolders' | 'releaseDedupKeys' | 'insertDeliveries'>;
  insertTasks: (trx: Executor, tasks: NewTask[]) => Promise<void>;
  windowMs: number;
  /** Today's path for one delivery, in a transaction of its own. */
  alone: (delivery: AcceptedDelivery) => Promise<DeliveryWritten>;
}) {
  const together = (batch: AcceptedDelivery[]) =>
    deps.db.transaction(async (trx) => {
      const members = batch.map((delivery) => ({
        triggerUuid: delivery.record.triggerUuid,
        dedupKey: delivery.record.dedupKey,
        nowMs: delivery.nowMs,
        delivery,
      }));
      const keyed = members.flatMap((m) =>
        m.dedupKey === null ? [] : [{ triggerUuid: m.triggerUuid, key: m.dedupKey }],
      );
      const plan = planDeliveryBatch(members, await deps.repo.findDedupHolders(trx, keyed), deps.windowMs);
      await deps.repo.releaseDedupKeys(trx, plan.release);
      if (plan.together.length > 0) {
        await deps.repo.insertDeliveries(
          trx,
          plan.together.map((m) => m.delivery.record),
        );
        await deps.insertTasks(
          trx,
          plan.together.map((m) => m.delivery.task),
        );
      }
      return { answer: CREATED, left: plan.alone.map((m) => m.delivery) };
    });

  return {
    /** Resolves once the delivery is committed (durable), with the others of its turn. */
    write: createTurnBatcher<AcceptedDelivery, DeliveryWritten>({
      max: MAX_DELIVERY_BATCH,
      together,
      alone: deps.alone,
    }),
  };
}
