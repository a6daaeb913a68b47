import type { Db } from '../../db/connect.js';
import { roleAtLeast } from '../../lib/principal.js';
import { FINAL_STATUSES } from '../tasks/tasks-fns.js';
import type { TaskRecord } from '../tasks/tasks-record.js';
import type { TasksService } from '../tasks/tasks-service.js';
import { taskView } from '../tasks/tasks-view.js';
import { invalidParams, type McpCall } from './mcp-call.js';
import { inputRequests, responseFor } from './mcp-input-fns.js';
import { declaresElicitation } from './mcp-session-fns.js';
import { createTaskRefs } from './mcp-task-refs.js';
import { stateResult, taskState } from './mcp-tools-fns.js';

/** A modern client that declared form elicitation, with a credential that may answer. */
export const canAsk = (call: McpCall) =>
  call.modern !== undefined &&
  declaresElicitation(call.modern.capabilities) &&
  roleAtLeast(call.principal.role, 'member');

/** The extension's Task of a taskhook task (SEP-2663), with its status-specific fields. */
export function modernTask(call: McpCall, task: TaskRecord) {
  const view = taskView(task);
  const common = {
    taskId: task.uuid,
    createdAt: view.created_at,
    lastUpdatedAt: task.updatedAt,
    ttlMs: null,
    pollIntervalMs: 1000,
  };
  switch (view.status) {
    case 'queued':
    case 'running': {
      const step = view.progress?.current_step;
      return { ...common, status: 'working', ...(step ? { statusMessage: step } : {}) };
    }
    case 'awaiting_input':
      return {
        ...common,
        status: 'input_required',
        statusMessage: view.input_request?.message ?? '',
        inputRequests: canAsk(call) ? inputRequests(task) : {},
      };
    case 'completed':
    case 'failed': {
      // An agent's failure is a tool execution error: the call completes with isError (never `failed`).
      const result = { resultType: 'complete', ...stateResult(taskState(view), { waiting: true }) };
      return { ...common, status: 'completed', ...(view.error ? { statusMessage: view.error.message } : {}), result };
    }
    default:
      return { ...common, status: 'cancelled' };
  }
}

/** tasks/get, tasks/update and tasks/cancel of the `io.modelcontextprotocol/tasks` extension. */
export function createModernTasks(deps: { db: Db; tasks: Pick<TasksService, 'message' | 'cancel' | 'requireTask'> }) {
  const { tasks } = deps;
  const { taskOf } = createTaskRefs(deps);
  const refOf = (call: McpCall, task: TaskRecord) => ({
    workspaceUuid: call.principal.workspaceUuid,
    agentUuid: task.agentUuid,
    taskUuid: task.uuid,
  });

  return {
    async get(call: McpCall, params: unknown) {
      return modernTask(call, await taskOf(call.principal, params));
    },

    /** An accepted answer to the current question becomes a task message; anything else is ignored. */
    async update(call: McpCall, params: unknown) {
      const task = await taskOf(call.principal, params);
      const responses = (params as { inputResponses?: unknown }).inputResponses;
      if (!responses || typeof responses !== 'object' || Array.isArray(responses)) {
        throw invalidParams('inputResponses must be an object');
      }
      const response = responseFor(responses, task.messages.length);
      if (task.status === 'awaiting_input' && typeof response === 'object') {
        await tasks.message(refOf(call, task), response.answer);
      }
      return {};
    },

    /** Cancels a task that can be; a finished one is left as it is. Always an empty result. */
    async cancel(call: McpCall, params: unknown) {
      const task = await taskOf(call.principal, params);
      if (!FINAL_STATUSES.has(task.status)) await tasks.cancel(refOf(call, task));
      return {};
    },
  };
}
