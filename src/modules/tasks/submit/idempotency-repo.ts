import type { Executor } from '../../../db/connect.js';
import { withDbErrors } from '../../../db/errors.js';
import { fromDbJson, toDbJson } from '../../../db/json.js';

export interface IdempotencyRecord {
  workspaceUuid: string;
  key: string;
  requestHash: string;
  taskUuid: string;
  response: unknown;
  createdAt: string;
  expiresAt: string;
}

/** Idempotency keys of task submissions: unique per workspace, enforced by the primary key. */
export const idempotencyRepo = {
  /** Inserts the key; a live duplicate raises UniqueViolationError. An expired one is replaced. */
  async claim(ex: Executor, rec: IdempotencyRecord) {
    await withDbErrors(
      ex
        .deleteFrom('idempotency_keys')
        .where('workspace_uuid', '=', rec.workspaceUuid)
        .where('key', '=', rec.key)
        .where('expires_at', '<=', rec.createdAt)
        .execute(),
    );
    await withDbErrors(
      ex
        .insertInto('idempotency_keys')
        .values({
          workspace_uuid: rec.workspaceUuid,
          key: rec.key,
          request_hash: rec.requestHash,
          task_uuid: rec.taskUuid,
          response: toDbJson(rec.response),
          created_at: rec.createdAt,
          expires_at: rec.expiresAt,
        })
        .execute(),
    );
  },

  async find(ex: Executor, workspaceUuid: string, key: string) {
    const row = await withDbErrors(
      ex
        .selectFrom('idempotency_keys')
        .select(['request_hash', 'response', 'expires_at'])
        .where('workspace_uuid', '=', workspaceUuid)
        .where('key', '=', key)
        .executeTakeFirst(),
    );
    return (
      row && { requestHash: row.request_hash, response: fromDbJson<unknown>(row.response), expiresAt: row.expires_at }
    );
  },

  /** Deletes up to `limit` keys that expired before `now` (housekeeping). @returns how many went. */
  async deleteExpired(ex: Executor, now: string, limit: number): Promise<number> {
    const result = await withDbErrors(
      ex
        .deleteFrom('idempotency_keys')
        .where(({ eb, refTuple, selectFrom }) =>
          eb(
            refTuple('workspace_uuid', 'key'),
            'in',
            selectFrom('idempotency_keys')
              .select(['workspace_uuid', 'key'])
              .where('expires_at', '<', now)
              .limit(limit)
              .$asTuple('workspace_uuid', 'key'),
          ),
        )
        .executeTakeFirst(),
    );
    return Number(result.numDeletedRows);
  },
};
