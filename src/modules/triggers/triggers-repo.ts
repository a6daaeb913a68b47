import type { Selectable } from 'kysely';
import { changeChannel } from '../../db/change-cache.js';
import type { Executor } from '../../db/connect.js';
import type { TriggerDeliveriesTable, TriggersTable } from '../../db/database.js';
import { withDbErrors } from '../../db/errors.js';
import { fromDbJson, toDbJson } from '../../db/json.js';
import { prepareQuery } from '../../db/prepared.js';
import { lockRows } from '../../db/transactions.js';
import type { DedupHolder } from './delivery-batch-fns.js';
import type { VerificationType } from './signature-schemes-fns.js';

export interface TriggerRow {
  uuid: string;
  agentUuid: string;
  workspaceUuid: string;
  name: string;
  messageTemplate: string;
  /** Template of the concurrency key of the tasks it creates; null: none. */
  concurrencyKey: string | null;
  enabled: boolean;
  secretSealed: string;
  previousSecretSealed: string | null;
  previousSecretExpiresAt: string | null;
  /** How deliveries prove knowledge of the secret (docs/api.md, "Signature schemes"). */
  verification: VerificationType;
  /** For the timestamped schemes (standard_webhooks, stripe, slack); null for the others. */
  toleranceSeconds: number | null;
  /** The owner supplied the secret: never shown, never rotated, replaced by PATCH. */
  secretSupplied: boolean;
  createdAt: string;
  updatedAt: string;
}

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

function toTrigger(r: Selectable<TriggersTable>): TriggerRow {
  return {
    uuid: r.uuid,
    agentUuid: r.agent_uuid,
    workspaceUuid: r.workspace_uuid,
    name: r.name,
    messageTemplate: r.message_template,
    concurrencyKey: r.concurrency_key,
    enabled: Boolean(r.enabled),
    secretSealed: r.secret_sealed,
    previousSecretSealed: r.previous_secret_sealed,
    previousSecretExpiresAt: r.previous_secret_expires_at,
    verification: r.verification_type as VerificationType,
    toleranceSeconds: r.tolerance_seconds,
    secretSupplied: Boolean(r.secret_supplied),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
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

/**
 * Every change to an existing trigger (patch, enable/disable, secret rotation, delete, its agent's
 * deletion), by trigger uuid, announced in the transaction that writes it: the trigger caches of
 * every instance drop it (see `changeChannel`). A creation needs none: only found triggers are cached.
 */
export const triggerChanges = changeChannel('taskhook_triggers');

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

// Looked up on every delivery, before anything else (built once, see prepareQuery).
// A webhook address answers only while its agent and its workspace are live (a deleted workspace's
// rows stay until the background purge).
const triggerByUuid = prepareQuery(1, (ex, uuid: string) =>
  ex
    .selectFrom('triggers as t')
    .innerJoin('agents as a', 'a.uuid', 't.agent_uuid')
    .innerJoin('workspaces as w', 'w.uuid', 't.workspace_uuid')
    .selectAll('t')
    .where('t.uuid', '=', uuid)
    .where('a.deleted_at', 'is', null)
    .where('w.deleted_at', 'is', null),
);

/** The only code that touches the trigger tables. */
export const triggersRepo = {
  insert(ex: Executor, t: TriggerRow) {
    return withDbErrors(
      ex
        .insertInto('triggers')
        .values({
          uuid: t.uuid,
          agent_uuid: t.agentUuid,
          workspace_uuid: t.workspaceUuid,
          name: t.name,
          message_template: t.messageTemplate,
          concurrency_key: t.concurrencyKey,
          enabled: t.enabled ? 1 : 0,
          secret_sealed: t.secretSealed,
          previous_secret_sealed: t.previousSecretSealed,
          previous_secret_expires_at: t.previousSecretExpiresAt,
          verification_type: t.verification,
          tolerance_seconds: t.toleranceSeconds,
          secret_supplied: t.secretSupplied ? 1 : 0,
          created_at: t.createdAt,
          updated_at: t.updatedAt,
        })
        .execute(),
    );
  },

  async update(ex: Executor, t: TriggerRow) {
    await triggerChanges.announce(ex, t.uuid);
    return withDbErrors(
      ex
        .updateTable('triggers')
        .set({
          name: t.name,
          message_template: t.messageTemplate,
          concurrency_key: t.concurrencyKey,
          enabled: t.enabled ? 1 : 0,
          secret_sealed: t.secretSealed,
          previous_secret_sealed: t.previousSecretSealed,
          previous_secret_expires_at: t.previousSecretExpiresAt,
          tolerance_seconds: t.toleranceSeconds,
          secret_supplied: t.secretSupplied ? 1 : 0,
          updated_at: t.updatedAt,
        })
        .where('uuid', '=', t.uuid)
        .execute(),
    );
  },

  async findByUuid(ex: Executor, uuid: string): Promise<TriggerRow | undefined> {
    const [row] = await withDbErrors(triggerByUuid(ex, uuid));
    return row && toTrigger(row);
  },

  /** The trigger when it belongs to this agent of this user. */
  async findOwned(
    ex: Executor,
    workspaceUuid: string,
    agentUuid: string,
    uuid: string,
  ): Promise<TriggerRow | undefined> {
    const row = await withDbErrors(
      ex
        .selectFrom('triggers')
        .selectAll()
        .where('uuid', '=', uuid)
        .where('agent_uuid', '=', agentUuid)
        .where('workspace_uuid', '=', workspaceUuid)
        .executeTakeFirst(),
    );
    return row && toTrigger(row);
  },

  async list(ex: Executor, agentUuid: string, offset: number, limit: number) {
    const base = ex.selectFrom('triggers').where('agent_uuid', '=', agentUuid);
    const [rows, count] = await Promise.all([
      withDbErrors(
        base.selectAll().orderBy('created_at', 'desc').orderBy('uuid', 'desc').offset(offset).limit(limit).execute(),
      ),
      withDbErrors(base.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()),
    ]);
    return { triggers: rows.map(toTrigger), total: Number(count.n) };
  },

  async count(ex: Executor, agentUuid: string): Promise<number> {
    const row = await withDbErrors(
      ex
        .selectFrom('triggers')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('agent_uuid', '=', agentUuid)
        .executeTakeFirstOrThrow(),
    );
    return Number(row.n);
  },

  async remove(ex: Executor, uuid: string) {
    await triggerChanges.announce(ex, uuid);
    await withDbErrors(ex.deleteFrom('trigger_deliveries').where('trigger_uuid', '=', uuid).execute());
    await withDbErrors(ex.deleteFrom('triggers').where('uuid', '=', uuid).execute());
  },

  /** Deletes the agent's triggers; answers their uuids. */
  async removeAllOfAgent(ex: Executor, agentUuid: string): Promise<string[]> {
    const rows = await withDbErrors(
      ex.selectFrom('triggers').select('uuid').where('agent_uuid', '=', agentUuid).execute(),
    );
    for (const { uuid } of rows) await this.remove(ex, uuid);
    return rows.map((r) => r.uuid);
  },

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

  /** Takes the trigger's row lock (PostgreSQL) for `trx`: refusals of one trigger are logged one at a time. */
  async lockTrigger(trx: Executor, uuid: string) {
    await withDbErrors(lockRows(trx, trx.selectFrom('triggers').select('uuid').where('uuid', '=', uuid)).execute());
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

export type TriggersRepo = typeof triggersRepo;
