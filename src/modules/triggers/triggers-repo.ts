import type { Selectable } from 'kysely';
import { changeChannel } from '../../db/change-cache.js';
import type { Executor } from '../../db/connect.js';
import type { TriggersTable } from '../../db/database.js';
import { withDbErrors } from '../../db/errors.js';
import { prepareQuery } from '../../db/prepared.js';
import { lockRows } from '../../db/transactions.js';
import type { VerificationType } from './signature-schemes-fns.js';
import { deliveriesRepo } from './trigger-deliveries-repo.js';
import { signaturesRepo } from './trigger-signatures-repo.js';

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

/**
 * Every change to an existing trigger (patch, enable/disable, secret rotation, delete, its agent's
 * deletion), by trigger uuid, announced in the transaction that writes it: the trigger caches of
 * every instance drop it (see `changeChannel`). A creation needs none: only found triggers are cached.
 */
export const triggerChanges = changeChannel('taskhook_triggers');

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
    await withDbErrors(ex.deleteFrom('trigger_signatures').where('trigger_uuid', '=', uuid).execute());
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

  /** Takes the trigger's row lock (PostgreSQL) for `trx`: refusals of one trigger are logged one at a time. */
  async lockTrigger(trx: Executor, uuid: string) {
    await withDbErrors(lockRows(trx, trx.selectFrom('triggers').select('uuid').where('uuid', '=', uuid)).execute());
  },

  /** The delivery log (see trigger-deliveries-repo.ts). */
  ...deliveriesRepo,
  ...signaturesRepo,
};

/** The trigger tables' queries, for narrow `Pick`s in services and tests. */
export type TriggersRepo = typeof triggersRepo;
