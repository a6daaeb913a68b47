import type { Db } from '../../db/connect.js';
import { newId } from '../../lib/ids.js';
import { type Clock, iso } from '../../lib/time.js';
import type { DeliveryRow } from './trigger-deliveries-repo.js';
import type { TriggerRow, TriggersRepo } from './triggers-repo.js';

const HOUR_MS = 60 * 60 * 1000;
/** Deliveries refused for their secret or signature that the log keeps per trigger per hour. */
export const MAX_LOGGED_REFUSALS_PER_HOUR = 100;

/**
 * The delivery log's writer for deliveries that created no task. Refusals for a bad secret or
 * signature (401) are kept at most MAX_LOGGED_REFUSALS_PER_HOUR per trigger per hour; the rest
 * are only counted (`onUnloggedRefusal`).
 */
export function createDeliveryLog(deps: { db: Db; repo: TriggersRepo; clock: Clock; onUnloggedRefusal?: () => void }) {
  const { db, repo } = deps;
  const now = () => iso(deps.clock.now());
  /** Logs a delivery that created no task: a refusal, or Slack's URL verification (200, no error). */
  return async function logWithoutTask(
    trigger: TriggerRow,
    deliveryId: string,
    statusCode: number,
    error: string | null,
  ) {
    const receivedAt = now();
    const row: DeliveryRow = {
      uuid: newId(),
      triggerUuid: trigger.uuid,
      deliveryId,
      dedupKey: null,
      receivedAt,
      statusCode,
      taskUuid: null,
      error,
      response: null,
    };
    if (statusCode !== 401) {
      await db.transaction((trx) => repo.insertDelivery(trx, row));
      return;
    }
    // A stranger who knows the address must not grow the log without bound.
    const since = iso(deps.clock.now() - HOUR_MS);
    const cap = MAX_LOGGED_REFUSALS_PER_HOUR;
    const full = async (ex: Parameters<TriggersRepo['countRefusedSince']>[0]) =>
      (await repo.countRefusedSince(ex, trigger.uuid, since, cap)) >= cap;
    // Once the hour's log is full, refusals cost one indexed read and no write or lock.
    let logged = !(await full(db.kysely));
    if (logged) {
      logged = await db.transaction(async (trx) => {
        await repo.lockTrigger(trx, trigger.uuid);
        if (await full(trx)) return false;
        await repo.insertDelivery(trx, row);
        return true;
      });
    }
    if (!logged) deps.onUnloggedRefusal?.();
  };
}
