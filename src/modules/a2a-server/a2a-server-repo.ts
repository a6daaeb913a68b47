import { sql } from 'kysely';
import type { Executor } from '../../db/connect.js';
import { withDbErrors as guard } from '../../db/errors.js';
import type { TaskStatus } from '../tasks/tasks-fns.js';
import { type TaskRecord, toRecord } from '../tasks/tasks-repo.js';

/** What the A2A view of tasks needs: their contextIds and the messageIds of their A2A messages. */
export interface A2aTaskExtras {
  contexts: Map<string, string>;
  messageIds: Map<string, Map<number, string>>;
}

/** The only code that touches the A2A server's tables (and reads tasks with their contextId). */
export const a2aServerRepo = {
  insertContext(trx: Executor, row: { taskUuid: string; agentUuid: string; contextId: string }) {
    return guard(
      trx
        .insertInto('a2a_task_contexts')
        .values({ task_uuid: row.taskUuid, agent_uuid: row.agentUuid, context_id: row.contextId })
        .execute(),
    );
  },

  /** Records the sender's messageId of the conversation message at `position`. */
  insertHistoryId(trx: Executor, taskUuid: string, position: number, messageId: string) {
    return guard(
      trx.insertInto('a2a_history_ids').values({ task_uuid: taskUuid, position, message_id: messageId }).execute(),
    );
  },

  async extras(ex: Executor, taskUuids: string[]): Promise<A2aTaskExtras> {
    const contexts = new Map<string, string>();
    const messageIds = new Map<string, Map<number, string>>();
    if (taskUuids.length === 0) return { contexts, messageIds };
    const [ctxRows, idRows] = await Promise.all([
      guard(
        ex
          .selectFrom('a2a_task_contexts')
          .select(['task_uuid', 'context_id'])
          .where('task_uuid', 'in', taskUuids)
          .execute(),
      ),
      guard(
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
    return guard(
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
    await guard(
      trx
        .deleteFrom('a2a_message_ids')
        .where('agent_uuid', '=', row.agentUuid)
        .where('message_id', '=', row.messageId)
        .where('expires_at', '<=', row.now)
        .execute(),
    );
    await guard(
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

  /**
   * The agent's tasks newest first, optionally of one status, one A2A context, and changed after
   * `changedAfter` (an ISO timestamp; every change of a task moves its `updated_at`). `page` null:
   * every task that matches.
   */
  async listTasks(
    ex: Executor,
    filter: {
      agentUuid: string;
      userUuid: string;
      status?: TaskStatus | undefined;
      contextId?: string | undefined;
      changedAfter?: string | undefined;
    },
    page: { offset: number; limit: number } | null,
  ): Promise<{ tasks: TaskRecord[]; total: number }> {
    const { contextId, status, changedAfter } = filter;
    const base = ex
      .selectFrom('tasks')
      .leftJoin('a2a_task_contexts as c', 'c.task_uuid', 'tasks.uuid')
      .where('tasks.agent_uuid', '=', filter.agentUuid)
      .where('tasks.user_uuid', '=', filter.userUuid)
      .$if(status !== undefined, (qb) => qb.where('tasks.status', '=', status as string))
      .$if(changedAfter !== undefined, (qb) => qb.where('tasks.updated_at', '>', changedAfter as string))
      .$if(contextId !== undefined, (qb) =>
        qb.where((eb) =>
          eb.or([
            eb('c.context_id', '=', contextId as string),
            eb.and([eb('c.task_uuid', 'is', null), eb('tasks.uuid', '=', contextId as string)]),
          ]),
        ),
      );
    const [rows, count] = await Promise.all([
      guard(
        base
          .selectAll('tasks')
          .orderBy('tasks.created_at', 'desc')
          .orderBy('tasks.uuid', 'desc')
          .$if(page !== null, (qb) => qb.offset(page?.offset ?? 0).limit(page?.limit ?? 0))
          .execute(),
      ),
      guard(base.select(sql<number | string>`count(*)`.as('n')).executeTakeFirstOrThrow()),
    ]);
    return { tasks: rows.map(toRecord), total: Number(count.n) };
  },
};

export type A2aServerRepo = typeof a2aServerRepo;
