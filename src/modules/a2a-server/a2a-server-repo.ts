import type { Executor } from '../../db/connect.js';
import { withDbErrors } from '../../db/errors.js';
import { taskQueries } from '../tasks/task-queries.js';

/** What the A2A view of tasks needs: their contextIds and the messageIds of their A2A messages. */
export interface A2aTaskExtras {
  contexts: Map<string, string>;
  messageIds: Map<string, Map<number, string>>;
}

/** The only code that touches the A2A server's tables (tasks with their contextId: the tasks room). */
export const a2aServerRepo = {
  insertContext(trx: Executor, row: { taskUuid: string; agentUuid: string; contextId: string }) {
    return withDbErrors(
      trx
        .insertInto('a2a_task_contexts')
        .values({ task_uuid: row.taskUuid, agent_uuid: row.agentUuid, context_id: row.contextId })
        .execute(),
    );
  },

  /** Records the sender's messageId of the conversation message at `position`. */
  insertHistoryId(trx: Executor, taskUuid: string, position: number, messageId: string) {
    return withDbErrors(
      trx.insertInto('a2a_history_ids').values({ task_uuid: taskUuid, position, message_id: messageId }).execute(),
    );
  },

  async extras(ex: Executor, taskUuids: string[]): Promise<A2aTaskExtras> {
    const contexts = new Map<string, string>();
    const messageIds = new Map<string, Map<number, string>>();
    if (taskUuids.length === 0) return { contexts, messageIds };
    const [ctxRows, idRows] = await Promise.all([
      withDbErrors(
        ex
          .selectFrom('a2a_task_contexts')
          .select(['task_uuid', 'context_id'])
          .where('task_uuid', 'in', taskUuids)
          .execute(),
      ),
      withDbErrors(
        ex
          .selectFrom('a2a_history_ids')
          .select(['task_uuid', 'position', 'message_id'])
          .where('task_uuid', 'in', taskUuids)
          .execute(),
      ),
    ]);
    for (const r of ctxRows) contexts.set(r.task_uuid, r.context_id);
    for (const r of idRows) {
      const ids = messageIds.get(r.task_uuid) ?? new Map<number, string>();
      ids.set(Number(r.position), r.message_id);
      messageIds.set(r.task_uuid, ids);
    }
    return { contexts, messageIds };
  },

  /** The task a messageId of this agent went to, with when that record expires. */
  findMessageId(ex: Executor, agentUuid: string, messageId: string) {
    return withDbErrors(
      ex
        .selectFrom('a2a_message_ids')
        .select(['task_uuid', 'expires_at'])
        .where('agent_uuid', '=', agentUuid)
        .where('message_id', '=', messageId)
        .executeTakeFirst(),
    );
  },

  /**
   * Records that `messageId` went to `taskUuid` until `expiresAt`, replacing an expired record.
   * @throws UniqueViolationError when a live record exists (a concurrent duplicate).
   */
  async claimMessageId(
    trx: Executor,
    row: { agentUuid: string; messageId: string; taskUuid: string; now: string; expiresAt: string },
  ) {
    await withDbErrors(
      trx
        .deleteFrom('a2a_message_ids')
        .where('agent_uuid', '=', row.agentUuid)
        .where('message_id', '=', row.messageId)
        .where('expires_at', '<=', row.now)
        .execute(),
    );
    await withDbErrors(
      trx
        .insertInto('a2a_message_ids')
        .values({
          agent_uuid: row.agentUuid,
          message_id: row.messageId,
          task_uuid: row.taskUuid,
          expires_at: row.expiresAt,
        })
        .execute(),
    );
  },

  /** The agent's tasks newest first, optionally of one status, one A2A context and changed after a time (asked of the tasks room). */
  listTasks: taskQueries.listInContext,
};

export type A2aServerRepo = typeof a2aServerRepo;
