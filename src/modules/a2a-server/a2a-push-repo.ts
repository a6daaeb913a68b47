import type { Selectable } from 'kysely';
import type { Executor } from '../../db/connect.js';
import type { A2aPushConfigsTable } from '../../db/database.js';
import { withDbErrors } from '../../db/errors.js';
import { lockRows } from '../../db/transactions.js';
import type { StoredPushConfig } from './a2a-push-fns.js';

function toConfig(r: Selectable<A2aPushConfigsTable>): StoredPushConfig {
  return {
    uuid: r.uuid,
    taskUuid: r.task_uuid,
    configId: r.config_id,
    position: Number(r.position),
    url: r.url,
    token: r.token,
    authScheme: r.auth_scheme,
    authCredentials: r.auth_credentials,
  };
}

/** The only code that touches `a2a_push_configs` (a task's A2A push configs, secrets sealed). */
export const a2aPushRepo = {
  /** The task's configs in the order they were first created; `lock` row-locks them (PostgreSQL). */
  async listForTask(ex: Executor, taskUuid: string, lock = false): Promise<StoredPushConfig[]> {
    const query = ex.selectFrom('a2a_push_configs').selectAll().where('task_uuid', '=', taskUuid).orderBy('position');
    const rows = await withDbErrors((lock ? lockRows(ex, query) : query).execute());
    return rows.map(toConfig);
  },

  async find(ex: Executor, taskUuid: string, configId: string): Promise<StoredPushConfig | undefined> {
    const row = await withDbErrors(
      ex
        .selectFrom('a2a_push_configs')
        .selectAll()
        .where('task_uuid', '=', taskUuid)
        .where('config_id', '=', configId)
        .executeTakeFirst(),
    );
    return row && toConfig(row);
  },

  insert(ex: Executor, row: Selectable<A2aPushConfigsTable>) {
    return withDbErrors(ex.insertInto('a2a_push_configs').values(row).execute());
  },

  /** Replaces what an existing config sends (its place in the order stays). */
  replace(
    ex: Executor,
    uuid: string,
    change: Pick<A2aPushConfigsTable, 'url' | 'token' | 'auth_scheme' | 'auth_credentials' | 'updated_at'>,
  ) {
    return withDbErrors(ex.updateTable('a2a_push_configs').set(change).where('uuid', '=', uuid).execute());
  },

  async removeByUuid(ex: Executor, uuid: string): Promise<void> {
    await withDbErrors(ex.deleteFrom('a2a_push_configs').where('uuid', '=', uuid).execute());
  },
};

export type A2aPushRepo = typeof a2aPushRepo;
