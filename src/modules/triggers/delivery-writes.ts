import type { Db, Executor } from '../../db/connect.js';
import { UniqueViolationError } from '../../db/errors.js';
import { AppError } from '../../http/errors.js';
import { newId } from '../../lib/ids.js';
import { iso } from '../../lib/time.js';
import type { TaskSubmitter } from '../tasks/submit/task-submitter.js';
import type { AcceptedDelivery, DeliveryWritten } from './delivery-batcher.js';
import type { SignatureMark } from './replay-fns.js';
import type { DeliveryRow } from './trigger-deliveries-repo.js';
import type { TriggersRepo } from './triggers-repo.js';
import type { WebhookAccepted } from './triggers-schemas.js';

export const DEDUP_WINDOW_MS = 24 * 60 * 60 * 1000;

/**
 * The one-delivery writes of accepted deliveries, each in a transaction of its own: `alone`, the
 * delivery-id path the batcher falls back on, and `signed`, which also remembers the signature
 * of a signed scheme's delivery so a copy of it (whatever its delivery-id headers say) answers the
 * first 202 and creates nothing (replay-fns.ts).
 */
export function createDeliveryWrites(deps: { db: Db; repo: TriggersRepo; tasks: Pick<TaskSubmitter, 'insert'> }) {
  const { db, repo } = deps;

  /** Logs a copy: the first delivery's id and task, status 202, and no dedup key of its own. */
  const logCopy = (ex: Executor, record: DeliveryRow, first: WebhookAccepted) =>
    repo.insertDelivery(ex, {
      ...record,
      uuid: newId(),
      deliveryId: first.delivery_id,
      dedupKey: null,
      taskUuid: first.task_id,
      response: null,
    });

  /** Inserts the record and its task, first releasing a delivery id held for more than 24 h. */
  async function insert(trx: Executor, { record, task, nowMs }: AcceptedDelivery) {
    const sent = record.dedupKey;
    if (sent) {
      const earlier = await repo.findByDedupKey(trx, record.triggerUuid, sent);
      if (earlier && Date.parse(earlier.receivedAt) <= nowMs - DEDUP_WINDOW_MS) {
        await repo.releaseDedupKey(trx, earlier.uuid);
      }
    }
    await repo.insertDelivery(trx, record);
    await deps.tasks.insert(trx, task);
  }

  /** After a unique violation: the delivery that holds the id (or the signature), answered again. */
  async function answerCopy(record: DeliveryRow, mark: SignatureMark | null): Promise<DeliveryWritten> {
    let first: WebhookAccepted | undefined;
    if (mark) first = (await repo.findSignature(db.kysely, record.triggerUuid, mark.signature))?.response;
    if (!first && record.dedupKey) {
      first = (await repo.findByDedupKey(db.kysely, record.triggerUuid, record.dedupKey))?.response as
        | WebhookAccepted
        | undefined;
    }
    if (!first) throw new AppError('CONFLICT', 'The same delivery is being processed; retry');
    const answered = first;
    await db.transaction((trx) => logCopy(trx, record, answered));
    return { created: false, first: answered };
  }

  return {
    /** A delivery on its own: a repeat of an accepted delivery id logs the repeat and answers the first 202. */
    async alone(delivery: AcceptedDelivery): Promise<DeliveryWritten> {
      try {
        await db.transaction((trx) => insert(trx, delivery));
        return { created: true };
      } catch (err) {
        if (!(delivery.record.dedupKey && err instanceof UniqueViolationError)) throw err;
        return answerCopy(delivery.record, null);
      }
    },

    /**
     * A signed delivery: a remembered signature (within its window) makes it a copy of the
     * delivery that first carried it; else the signature is remembered with the record and task,
     * in one transaction. Concurrent copies meet at the signature's key: one commits, the others
     * answer its 202.
     */
    async signed(delivery: AcceptedDelivery, mark: SignatureMark, workspaceUuid: string): Promise<DeliveryWritten> {
      const { record, nowMs } = delivery;
      try {
        const copyOf = await db.transaction(async (trx) => {
          const held = await repo.findSignature(trx, record.triggerUuid, mark.signature);
          if (held && Date.parse(held.expiresAt) > nowMs) {
            await logCopy(trx, record, held.response);
            return held.response;
          }
          if (held) await repo.forgetSignature(trx, record.triggerUuid, mark.signature);
          await repo.rememberSignature(trx, {
            triggerUuid: record.triggerUuid,
            signature: mark.signature,
            workspaceUuid,
            expiresAt: iso(mark.expiresAtMs),
            response: record.response as WebhookAccepted,
          });
          await insert(trx, delivery);
          return null;
        });
        return copyOf ? { created: false, first: copyOf } : { created: true };
      } catch (err) {
        if (!(err instanceof UniqueViolationError)) throw err;
        return answerCopy(record, mark);
      }
    },
  };
}
