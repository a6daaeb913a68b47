import type { Db } from '../../db/connect.js';
import { AppError } from '../../http/errors.js';
import { forbiddenMessage } from '../../http/permissions.js';
import type { Notifier } from '../../lib/notifier.js';
import { type Principal, roleAtLeast } from '../../lib/principal.js';
import { taskQueries } from '../tasks/task-queries.js';
import type { TasksService } from '../tasks/tasks-service.js';
import { taskView } from '../tasks/tasks-view.js';
import { cursorOffset, invalidParams, type McpCall, McpRpcError } from './mcp-call.js';
import type { McpRepo } from './mcp-repo.js';
import { createTaskRefs } from './mcp-task-refs.js';
import { mcpTask, stateResult, taskState } from './mcp-tools-fns.js';
import { parseElicitationId, waitForTask } from './mcp-wait.js';

const TASKS_PAGE = 50;
const RELATED = 'io.modelcontextprotocol/related-task';

/** The 2025 MCP Tasks methods (task-augmented calls), and the answers to 2025 elicitations. */
export function createLegacyTasks(deps: {
  db: Db;
  repo: McpRepo;
  tasks: Pick<TasksService, 'message' | 'cancel' | 'requireTask'>;
  notifier: Pick<Notifier, 'subscribe' | 'fallbackPollMs'>;
}) {
  const { db, repo, tasks } = deps;
  const { taskOf } = createTaskRefs(deps);

  return {
    async tasksGet(principal: Principal, params: unknown) {
      const task = await taskOf(principal, params);
      return mcpTask(taskView(task), task.updatedAt);
    },

    /** tasks/result: waits without a time limit of its own, asking while the task awaits input. */
    async tasksResult(call: McpCall, params: unknown) {
      const task = await taskOf(call.principal, params);
      const ref = { workspaceUuid: call.principal.workspaceUuid, agentUuid: task.agentUuid, taskUuid: task.uuid };
      const channel = call.stream();
      const settled = await waitForTask(deps, ref, channel, {
        maxMs: Number.POSITIVE_INFINITY,
        ask: call.elicitation,
        taskMode: true,
      });
      if (channel.signal.aborted) return null;
      return {
        ...stateResult(taskState(taskView(settled)), { waiting: true }),
        _meta: { [RELATED]: { taskId: settled.uuid } },
      };
    },

    async tasksCancel(principal: Principal, params: unknown) {
      if (!roleAtLeast(principal.role, 'member'))
        throw new McpRpcError(-32600, `FORBIDDEN: ${forbiddenMessage('member')}`);
      const task = await taskOf(principal, params);
      if (task.status === 'completed' || task.status === 'failed') {
        throw invalidParams(`Task ${task.uuid} is ${task.status} and cannot be cancelled`);
      }
      const ref = { workspaceUuid: principal.workspaceUuid, agentUuid: task.agentUuid, taskUuid: task.uuid };
      if (task.status !== 'cancelled') await tasks.cancel(ref);
      const after = await tasks.requireTask(ref);
      return mcpTask(taskView(after), after.updatedAt);
    },

    async tasksList(principal: Principal, params: unknown) {
      const offset = cursorOffset((params as { cursor?: unknown } | undefined)?.cursor, 'k');
      const rows = await repo.listTasks(db.kysely, principal.workspaceUuid, offset, TASKS_PAGE + 1);
      const list = [];
      for (const row of rows.slice(0, TASKS_PAGE)) {
        const ref = { workspaceUuid: principal.workspaceUuid, agentUuid: row.agent_uuid, taskUuid: row.task_uuid };
        const task = await tasks.requireTask(ref).catch(() => null);
        if (task) list.push(mcpTask(taskView(task), task.updatedAt));
      }
      return { tasks: list, ...(rows.length > TASKS_PAGE ? { nextCursor: `k${offset + TASKS_PAGE}` } : {}) };
    },

    /**
     * A client's answer to a question (a JSON-RPC response in any POST): accept → a task message;
     * decline, cancel, no usable answer, an error → the question is recorded as declined. Answers
     * for another workspace's task, a question no longer current, or from a viewer change nothing.
     */
    async answer(principal: Principal, response: { id?: unknown; result?: unknown; error?: unknown }) {
      const named = parseElicitationId(response.id);
      if (!named || !roleAtLeast(principal.role, 'member')) return;
      const found = await taskQueries.ownedBy(db.kysely, principal.workspaceUuid, named.taskUuid);
      if (!found) return;
      const ref = { workspaceUuid: principal.workspaceUuid, agentUuid: found.agent_uuid, taskUuid: named.taskUuid };
      const task = await tasks.requireTask(ref);
      if (task.status !== 'awaiting_input' || task.messages.length !== named.position) return;
      const result = response.result as { action?: unknown; content?: { answer?: unknown } } | undefined;
      const answer = result?.action === 'accept' ? result.content?.answer : undefined;
      if (typeof answer === 'string' && answer.length > 0 && answer.length <= 100_000) {
        await tasks.message(ref, answer).catch((err) => {
          if (!(err instanceof AppError)) throw err;
        });
        return;
      }
      await repo.decline(db.kysely, named.taskUuid, named.position);
    },
  };
}
