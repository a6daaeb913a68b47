import type { Selectable } from 'kysely';
import { sql } from 'kysely';
import type { Executor } from '../../db/connect.js';
import type { CallbacksTable } from '../../db/database.js';
import { withDbErrors } from '../../db/errors.js';
import { fromDbJson, toDbJson } from '../../db/json.js';
import { lockRows } from '../../db/transactions.js';

export interface Attempt {
  at: string;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
}

export type CallbackStatus = 'pending' | 'delivered' | 'failed';

export interface CallbackRow {
  uuid: string;
  taskUuid: string;
  workspaceUuid: string;
  url: string;
  eventType: string;
  payload: string;
  status: CallbackStatus;
  attempts: Attempt[];
  nextAttemptAt: string | null;
  leaseUntil: string | null;
  createdAt: string;
  updatedAt: string;
  /** A2A push deliveries only (null for callbacks): the config, its A2A id, its extra headers sealed. */
  push?: { configUuid: string; configId: string; secretHeaders: string; endedAt: string | null } | null;
}

function toRow(r: Selectable<CallbacksTable>): CallbackRow {
  return {
    uuid: r.uuid,
    taskUuid: r.task_uuid,
    workspaceUuid: r.workspace_uuid,
    url: r.url,
    eventType: r.event_type,
    payload: r.payload,
    status: r.status as CallbackStatus,
    attempts: fromDbJson(r.attempts),
    nextAttemptAt: r.next_attempt_at,
    leaseUntil: r.lease_until,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    push:
      r.push_config_uuid === null
        ? null
        : {
            configUuid: r.push_config_uuid,
            configId: r.push_config_id ?? '',
            secretHeaders: r.secret_headers ?? '',
            endedAt: r.push_ended_at,
          },
  };
}

/** The only code that touches the callbacks outbox. */
export const callbacksRepo = {
  insert(ex: Executor, c: CallbackRow) {
    return withDbErrors(
      ex
        .insertInto('callbacks')
        .values({
          uuid: c.uuid,
          task_uuid: c.taskUuid,
          workspace_uuid: c.workspaceUuid,
          url: c.url,
          event_type: c.eventType,
          payload: c.payload,
          status: c.status,
          attempts: toDbJson(c.attempts),
          next_attempt_at: c.nextAttemptAt,
          lease_until: c.leaseUntil,
          created_at: c.createdAt,
          updated_at: c.updatedAt,
          push_config_uuid: c.push?.configUuid ?? null,
          push_config_id: c.push?.configId ?? null,
          secret_headers: c.push?.secretHeaders ?? null,
        })
        .execute(),
    );
  },

  async listForTask(ex: Executor, taskUuid: string): Promise<CallbackRow[]> {
    const rows = await withDbErrors(
      ex
        .selectFrom('callbacks')
        .selectAll()
        .where('task_uuid', '=', taskUuid)
        .orderBy('created_at')
        .orderBy('uuid')
        .execute(),
    );
    return rows.map(toRow);
  },

  async find(ex: Executor, taskUuid: string, uuid: string): Promise<CallbackRow | undefined> {
    const query = ex.selectFrom('callbacks').selectAll().where('uuid', '=', uuid).where('task_uuid', '=', taskUuid);
    const row = await withDbErrors(query.executeTakeFirst());
    return row && toRow(row);
  },

  /** `find`, row-locked for the transaction `trx`. */
  async lock(trx: Executor, taskUuid: string, uuid: string): Promise<CallbackRow | undefined> {
    const query = trx.selectFrom('callbacks').selectAll().where('uuid', '=', uuid).where('task_uuid', '=', taskUuid);
    const row = await withDbErrors(lockRows(trx, query).executeTakeFirst());
    return row && toRow(row);
  },

  /**
   * Takes up to `limit` due deliveries for this sender until `leaseUntil`: pending, due, and not
   * leased by another sender (PostgreSQL skips rows another instance is claiming right now).
   */
  async claimDue(ex: Executor, now: string, leaseUntil: string, limit: number): Promise<CallbackRow[]> {
    const rows = await callbacksRepo.lockDue(ex, now, limit, []);
    await callbacksRepo.lease(
      ex,
      rows.map((r) => r.uuid),
      leaseUntil,
    );
    return rows.map((r) => ({ ...r, leaseUntil }));
  },

  /**
   * Locks up to `limit` due deliveries, oldest first, leaving out those of `skipUsers` (PostgreSQL
   * skips rows another sender holds). Lease the ones to send with `lease` in the same transaction.
   */
  async lockDue(ex: Executor, now: string, limit: number, skipUsers: readonly string[]): Promise<CallbackRow[]> {
    let due = ex
      .selectFrom('callbacks')
      .selectAll()
      .where(sql<boolean>`status = 'pending'`)
      .where('next_attempt_at', '<=', now)
      .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
      // A push delivery waits until the first attempt of its config's previous notification ended.
      .where((eb) =>
        eb.or([
          eb('callbacks.push_config_uuid', 'is', null),
          eb.not(
            eb.exists(
              eb
                .selectFrom('callbacks as prev')
                .select(sql<number>`1`.as('one'))
                .whereRef('prev.push_config_uuid', '=', 'callbacks.push_config_uuid')
                .whereRef('prev.uuid', '<', 'callbacks.uuid')
                .where('prev.first_attempt_at', 'is', null)
                .where(sql<boolean>`prev.status = 'pending'`),
            ),
          ),
        ]),
      );
    if (skipUsers.length > 0) due = due.where('workspace_uuid', 'not in', skipUsers);
    const rows = await withDbErrors(
      lockRows(ex, due.orderBy('next_attempt_at').limit(limit), { skipLocked: true }).execute(),
    );
    return rows.map(toRow);
  },

  /** Leases the deliveries to this sender until `leaseUntil`. */
  async lease(ex: Executor, uuids: readonly string[], leaseUntil: string): Promise<void> {
    if (uuids.length === 0) return;
    await withDbErrors(
      ex.updateTable('callbacks').set({ lease_until: leaseUntil }).where('uuid', 'in', uuids).execute(),
    );
  },

  /** Stores an attempt's outcome and releases the lease. */
  recordAttempt(
    ex: Executor,
    uuid: string,
    change: { attempts: Attempt[]; status: CallbackStatus; nextAttemptAt: string | null; now: string },
  ) {
    return withDbErrors(
      ex
        .updateTable('callbacks')
        .set({
          attempts: toDbJson(change.attempts),
          status: change.status,
          next_attempt_at: change.nextAttemptAt,
          lease_until: null,
          updated_at: change.now,
          first_attempt_at: sql<string>`coalesce(first_attempt_at, ${change.now})`,
        })
        .where('uuid', '=', uuid)
        .execute(),
    );
  },

  /**
   * The push config is gone (deleted, or its receiver answered 410): its deliveries are marked,
   * those not sent yet end `failed` (an attempt in flight is recorded, then ended the same way).
   */
  async endPushConfig(ex: Executor, configUuid: string, now: string): Promise<void> {
    await withDbErrors(
      ex
        .updateTable('callbacks')
        .set({ push_ended_at: now })
        .where('push_config_uuid', '=', configUuid)
        .where('push_ended_at', 'is', null)
        .execute(),
    );
    await callbacksRepo.failEnded(ex, configUuid, now);
  },

  /** Ends `failed` the pending deliveries of an ended push config. */
  async failEnded(ex: Executor, configUuid: string, now: string): Promise<void> {
    await withDbErrors(
      ex
        .updateTable('callbacks')
        .set({ status: 'failed', next_attempt_at: null, updated_at: now })
        .where('push_config_uuid', '=', configUuid)
        .where('push_ended_at', 'is not', null)
        .where(sql<boolean>`status = 'pending'`)
        .execute(),
    );
  },

  /** Drops the deliveries of a workspace being deleted that have not been sent yet. */
  dropPendingOfWorkspace(ex: Executor, workspaceUuid: string) {
    return withDbErrors(
      ex
        .deleteFrom('callbacks')
        .where('workspace_uuid', '=', workspaceUuid)
        .where(sql<boolean>`status = 'pending'`)
        .execute(),
    );
  },

  /** Makes the delivery due now (a manual retry), whatever its status, unless an attempt is in flight. */
  rearm(ex: Executor, uuid: string, now: string) {
    return withDbErrors(
      ex
        .updateTable('callbacks')
        .set({ status: 'pending', next_attempt_at: now, updated_at: now })
        .where('uuid', '=', uuid)
        .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
        .execute(),
    );
  },
};

export type CallbacksRepo = typeof callbacksRepo;
