import type { Db } from '../../db/connect.js';
import { AppError } from '../../http/errors.js';
import type { Principal } from '../../lib/principal.js';
import { taskQueries } from '../tasks/task-queries.js';
import type { TaskRecord } from '../tasks/tasks-record.js';
import type { TaskRef, TasksService } from '../tasks/tasks-service.js';
import { invalidParams } from './mcp-call.js';

/** Finding the task an MCP request names, only in the request's workspace. */
export function createTaskRefs(deps: { db: Db; tasks: Pick<TasksService, 'requireTask'> }) {
  const { db, tasks } = deps;

  /** The task `task_id` names in the workspace. @throws AppError NOT_FOUND. */
  async function refOf(workspaceUuid: string, taskUuid: string): Promise<TaskRef> {
    const found = /^[0-9a-f-]{36}$/.test(taskUuid)
      ? await taskQueries.ownedBy(db.kysely, workspaceUuid, taskUuid)
      : null;
    if (!found) throw new AppError('NOT_FOUND', 'Task not found');
    return { workspaceUuid, agentUuid: found.agent_uuid, taskUuid };
  }

  /** The task `params.taskId` names. @throws McpRpcError -32602 when missing, unknown or another workspace's. */
  async function taskOf(principal: Principal, params: unknown): Promise<TaskRecord> {
    const taskId = (params as { taskId?: unknown } | undefined)?.taskId;
    if (typeof taskId !== 'string') throw invalidParams('taskId is required');
    try {
      return await tasks.requireTask(await refOf(principal.workspaceUuid, taskId));
    } catch (err) {
      if (err instanceof AppError && err.code === 'NOT_FOUND') throw invalidParams('Unknown taskId');
      throw err;
    }
  }

  return { refOf, taskOf };
}
