import type { Selectable } from 'kysely';
import type { Executor } from '../../db/connect.js';
import type { TriggerDeliveriesTable } from '../../db/database.js';
import { withDbErrors } from '../../db/errors.js';
import { fromDbJson, toDbJson } from '../../db/json.js';
import type { DedupHolder } from './delivery-batch-fns.js';

/** One logged webhook delivery: accepted (with its task), a duplicate, or refused and why. */
export interface DeliveryRow {
  uuid: string;
  triggerUuid: string;
  deliveryId: string;
  dedupKey: string | null;
  receivedAt: string;
  statusCode: number;
  taskUuid: string | null;
  error: string | null;
  response: unknown;
}

function toDelivery(r: Selectable<TriggerDeliveriesTable>): DeliveryRow {
  return {
    uuid: r.uuid,
    triggerUuid: r.trigger_uuid,
    deliveryId: r.delivery_id,
    dedupKey: r.dedup_key,
    receivedAt: r.received_at,
    statusCode: r.status_code,
    taskUuid: r.task_uuid,
    error: r.error,
    response: r.response === null ? null : fromDbJson(r.response),
  };
}

function deliveryColumns(d: DeliveryRow) {
  return {
    uuid: d.uuid,
    trigger_uuid: d.triggerUuid,
    delivery_id: d.deliveryId,
    dedup_key: d.dedupKey,
    received_at: d.receivedAt,
    status_code: d.statusCode,
    task_uuid: d.taskUuid,
    error: d.error,
    response: d.response === null ? null : toDbJson(d.response),
  };
}

/**
 * The delivery log of the triggers (`trigger_deliveries`): writing deliveries, the 24 h hold of
 * their dedup ids, counting refusals and paging. Part of `triggersRepo`, which spreads it in.
 */
export const deliveriesRepo = {
  insertDelivery(ex: Executor, d: DeliveryRow) {
    return withDbErrors(ex.insertInto('trigger_deliveries').values(deliveryColumns(d)).execute());
  },

  /** Several deliveries in one statement (a batch of one turn's receives). */
  insertDeliveries(ex: Executor, rows: DeliveryRow[]) {
    return withDbErrors(ex.insertInto('trigger_deliveries').values(rows.map(deliveryColumns)).execute());
  },

  /** The accepted deliveries that still hold any of these ids (each pair: trigger, id). */
  async findDedupHolders(ex: Executor, pairs: Array<{ triggerUuid: string; key: string }>): Promise<DedupHolder[]> {
    if (pairs.length === 0) return [];
    const rows = await withDbErrors(
      ex
        .selectFrom('trigger_deliveries')
        .select(['uuid', 'trigger_uuid', 'dedup_key', 'received_at'])
        .where('trigger_uuid', 'in', [...new Set(pairs.map((p) => p.triggerUuid))])
        .where('dedup_key', 'in', [...new Set(pairs.map((p) => p.key))])
        .execute(),
    );
    return rows.map((r) => ({
      uuid: r.uuid,
      triggerUuid: r.trigger_uuid,
      dedupKey: r.dedup_key as string,
      receivedAt: r.received_at,
    }));
  },

  /** Lets these accepted deliveries' ids be used again (their 24 h are over). */
  async releaseDedupKeys(ex: Executor, uuids: string[]) {
    if (uuids.length === 0) return;
    await withDbErrors(
      ex.updateTable('trigger_deliveries').set({ dedup_key: null }).where('uuid', 'in', uuids).execute(),
    );
  },

  /**
   * How many deliveries of the trigger refused for their secret or signature (401) were logged
   * since `since`, counting no further than `cap`.
   */
  async countRefusedSince(ex: Executor, triggerUuid: string, since: string, cap: number): Promise<number> {
    const rows = await withDbErrors(
      ex
        .selectFrom('trigger_deliveries')
        .select('uuid')
        .where('trigger_uuid', '=', triggerUuid)
        .where('status_code', '=', 401)
        .where('received_at', '>=', since)
        .limit(cap)
        .execute(),
    );
    return rows.length;
  },

  /** The accepted delivery that still holds this id for the trigger, if any. */
  async findByDedupKey(ex: Executor, triggerUuid: string, key: string): Promise<DeliveryRow | undefined> {
    const row = await withDbErrors(
      ex
        .selectFrom('trigger_deliveries')
        .selectAll()
        .where('trigger_uuid', '=', triggerUuid)
        .where('dedup_key', '=', key)
        .executeTakeFirst(),
    );
    return row && toDelivery(row);
  },

  /** Lets an accepted delivery's id be used again (its 24 h are over). */
  releaseDedupKey(ex: Executor, uuid: string) {
    return withDbErrors(
      ex.updateTable('trigger_deliveries').set({ dedup_key: null }).where('uuid', '=', uuid).execute(),
    );
  },

  async listDeliveries(ex: Executor, triggerUuid: string, offset: number, limit: number) {
    const base = ex.selectFrom('trigger_deliveries').where('trigger_uuid', '=', triggerUuid);
    const [rows, count] = await Promise.all([
      withDbErrors(
        base.selectAll().orderBy('received_at', 'desc').orderBy('uuid', 'desc').offset(offset).limit(limit).execute(),
      ),
      withDbErrors(base.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()),
    ]);
    return { deliveries: rows.map(toDelivery), total: Number(count.n) };
  },
};
