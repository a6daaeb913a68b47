import type { Executor } from '../../db/connect.js';
import { withDbErrors } from '../../db/errors.js';

/** The only code that touches the MCP server's tables. */
export const mcpRepo = {
  /** Remembers a task made through `/mcp` (for `tasks/list`). */
  insertTask(ex: Executor, row: { taskUuid: string; workspaceUuid: string; agentUuid: string; createdAt: string }) {
    return withDbErrors(
      ex
        .insertInto('mcp_tasks')
        .values({
          task_uuid: row.taskUuid,
          workspace_uuid: row.workspaceUuid,
          agent_uuid: row.agentUuid,
          created_at: row.createdAt,
        })
        .onConflict((oc) => oc.column('task_uuid').doNothing())
        .execute(),
    );
  },

  /** The workspace's MCP tasks, newest first, `limit` from `offset`. */
  listTasks(ex: Executor, workspaceUuid: string, offset: number, limit: number) {
    return withDbErrors(
      ex
        .selectFrom('mcp_tasks')
        .select(['task_uuid', 'agent_uuid'])
        .where('workspace_uuid', '=', workspaceUuid)
        .orderBy('created_at', 'desc')
        .orderBy('task_uuid', 'desc')
        .offset(offset)
        .limit(limit)
        .execute(),
    );
  },

  /** Records that the client declined the question asked when the task had `position` messages. */
  decline(ex: Executor, taskUuid: string, position: number) {
    return withDbErrors(
      ex
        .insertInto('mcp_declined_questions')
        .values({ task_uuid: taskUuid, position })
        .onConflict((oc) => oc.columns(['task_uuid', 'position']).doNothing())
        .execute(),
    );
  },

  async declined(ex: Executor, taskUuid: string, position: number): Promise<boolean> {
    const row = await withDbErrors(
      ex
        .selectFrom('mcp_declined_questions')
        .select('position')
        .where('task_uuid', '=', taskUuid)
        .where('position', '=', position)
        .executeTakeFirst(),
    );
    return row !== undefined;
  },
};

export type McpRepo = typeof mcpRepo;
