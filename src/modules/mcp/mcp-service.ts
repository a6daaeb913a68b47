import type { Db, Executor } from '../../db/connect.js';
import { AppError } from '../../http/errors.js';
import { forbiddenMessage } from '../../http/permissions.js';
import { newId } from '../../lib/ids.js';
import type { Notifier } from '../../lib/notifier.js';
import { type Principal, type Role, roleAtLeast } from '../../lib/principal.js';
import type { Clock } from '../../lib/time.js';
import { agentsRepo } from '../agents/agents-repo.js';
import type { TaskSubmitter } from '../tasks/submit/task-submitter.js';
import { taskQueries } from '../tasks/task-queries.js';
import type { TaskRecord } from '../tasks/tasks-record.js';
import type { TaskRef, TasksService } from '../tasks/tasks-service.js';
import { taskView } from '../tasks/tasks-view.js';
import { mcpToolCallSpan, type ServiceSpan } from '../telemetry/service-spans-fns.js';
import { deriveSpanId, deriveTraceId, parseTraceparent } from '../telemetry/trace-context-fns.js';
import { agentToolArgs, idempotencyKeyOf, platformToolArgs, ToolArgumentError } from './mcp-args-fns.js';
import { type CallParams, callParams, cursorOffset, invalidParams, type McpCall, McpRpcError } from './mcp-call.js';
import type { McpRepo } from './mcp-repo.js';
import {
  agentToolDefinition,
  agentTools,
  mcpTask,
  PLATFORM_TOOLS,
  type PlatformTool,
  platformToolDefinitions,
  stateResult,
  TOOLS_PAGE,
  taskState,
  toolError,
} from './mcp-tools-fns.js';
import { parseElicitationId, waitForTask } from './mcp-wait.js';

const TASKS_PAGE = 50;
const RELATED = 'io.modelcontextprotocol/related-task';

/** The MCP methods over the tasks service: every change is the tasks service's (submit, message, cancel). */
export function createMcpService(deps: {
  db: Db;
  repo: McpRepo;
  tasks: Pick<TasksService, 'message' | 'cancel' | 'requireTask'>;
  submitter: Pick<TaskSubmitter, 'submit'>;
  notifier: Pick<Notifier, 'subscribe' | 'fallbackPollMs'>;
  maxWaitSeconds: number;
  clock: Clock;
  traceSpans?: ((workspaceUuid: string, spans: ServiceSpan[]) => void) | undefined;
}) {
  const { db, repo, tasks } = deps;
  const waitDeps = { db, repo, tasks, notifier: deps.notifier };

  async function toolList(workspaceUuid: string) {
    const { agents } = await agentsRepo.listOwned(db.kysely, workspaceUuid, 0, 100_000);
    return agentTools(agents);
  }

  /** The task `task_id` names in the workspace. @throws AppError NOT_FOUND. */
  async function refOf(workspaceUuid: string, taskUuid: string): Promise<TaskRef> {
    const found = /^[0-9a-f-]{36}$/.test(taskUuid)
      ? await taskQueries.ownedBy(db.kysely, workspaceUuid, taskUuid)
      : null;
    if (!found) throw new AppError('NOT_FOUND', 'Task not found');
    return { workspaceUuid, agentUuid: found.agent_uuid, taskUuid };
  }

  function requireRole(principal: Principal, role: Role) {
    if (!roleAtLeast(principal.role, role)) throw new AppError('FORBIDDEN', forbiddenMessage(role));
  }

  /** Waits (on the stream) and answers the CallToolResult of the task then. */
  async function waitAndAnswer(call: McpCall, ref: TaskRef, waitSeconds: number, progressToken?: string | number) {
    if (waitSeconds <= 0) return stateResult(taskState(taskView(await tasks.requireTask(ref))), { waiting: false });
    const channel = call.stream();
    const task = await waitForTask(waitDeps, ref, channel, {
      maxMs: waitSeconds * 1000,
      progressToken,
      ask: call.elicitation,
      taskMode: false,
    });
    return stateResult(taskState(taskView(task)), { waiting: true, waited: waitSeconds });
  }

  async function callAgent(call: McpCall, tool: { name: string; agentUuid: string }, params: CallParams) {
    const input = agentToolArgs(params.arguments);
    const key = idempotencyKeyOf(params._meta);
    const workspaceUuid = call.principal.workspaceUuid;
    const meta = params._meta?.traceparent;
    const sender = parseTraceparent(typeof meta === 'string' ? meta : undefined) ?? parseTraceparent(call.traceparent);
    const spanSeed = newId();
    const span = {
      traceId: sender?.traceId ?? deriveTraceId('mcp', spanSeed),
      spanId: deriveSpanId('mcp', spanSeed),
    };
    const record = (trx: Executor, createdAt: string, taskUuid: string) =>
      repo.insertTask(trx, { taskUuid, workspaceUuid, agentUuid: tool.agentUuid, createdAt });
    const { response, replayed } = await deps.submitter.submit(
      workspaceUuid,
      tool.agentUuid,
      input,
      key,
      span,
      (trx, task) => record(trx, task.createdAt, task.uuid),
    );
    if (replayed) await record(db.kysely, response.created_at, response.task_id);
    const ref = { workspaceUuid, agentUuid: tool.agentUuid, taskUuid: response.task_id };
    const answer =
      params.task !== undefined
        ? await tasks.requireTask(ref).then((task) => ({ task: mcpTask(taskView(task), task.updatedAt) }))
        : await waitAndAnswer(call, ref, deps.maxWaitSeconds, params._meta?.progressToken);
    if (!replayed) {
      deps.traceSpans?.(workspaceUuid, [
        mcpToolCallSpan({
          ...span,
          parentSpanId: sender?.spanId ?? null,
          toolName: tool.name,
          requestId: call.requestId,
          protocolVersion: call.protocolVersion,
          taskUuid: response.task_id,
          receivedAtMs: call.receivedAtMs,
          answeredAtMs: deps.clock.now(),
        }),
      ]);
    }
    return answer;
  }

  async function callPlatform(call: McpCall, tool: PlatformTool, params: CallParams) {
    if (tool !== 'get_task') requireRole(call.principal, 'member');
    const args = platformToolArgs(tool, params.arguments, deps.maxWaitSeconds);
    const ref = await refOf(call.principal.workspaceUuid, args.taskId);
    if (tool === 'cancel_task') {
      await tasks.cancel(ref);
      return stateResult(taskState(taskView(await tasks.requireTask(ref))), { waiting: false });
    }
    if (tool === 'reply_to_task') await tasks.message(ref, args.message as string);
    return waitAndAnswer(call, ref, args.waitSeconds, params._meta?.progressToken);
  }

  return {
    async toolsList(principal: Principal, cursor: unknown) {
      const offset = cursorOffset(cursor, 't');
      const all = [
        ...platformToolDefinitions(deps.maxWaitSeconds),
        ...(await toolList(principal.workspaceUuid)).map((t) => agentToolDefinition(t.name, t.agent)),
      ];
      const page = all.slice(offset, offset + TOOLS_PAGE);
      const next = offset + page.length;
      return { tools: page, ...(next < all.length ? { nextCursor: `t${next}` } : {}) };
    },

    /** tools/call: a CallToolResult (tool errors included), or CreateTaskResult in task mode. */
    async toolsCall(call: McpCall, rawParams: unknown): Promise<object> {
      const params = callParams(rawParams);
      const platform = (PLATFORM_TOOLS as readonly string[]).includes(params.name);
      let agentUuid: string | undefined;
      if (!platform) {
        agentUuid = (await toolList(call.principal.workspaceUuid)).find((t) => t.name === params.name)?.agent.uuid;
        if (!agentUuid) throw invalidParams(`Unknown tool: ${params.name.slice(0, 100)}`);
      } else if (params.task !== undefined) {
        throw new McpRpcError(-32601, `The tool ${params.name} cannot run as a task`);
      }
      try {
        if (platform) return await callPlatform(call, params.name as PlatformTool, params);
        requireRole(call.principal, 'member');
        return await callAgent(call, { name: params.name, agentUuid: agentUuid as string }, params);
      } catch (err) {
        if (err instanceof ToolArgumentError) return toolError('INVALID_REQUEST', err.message);
        if (err instanceof AppError && err.status !== 429) return toolError(err.code, err.message);
        throw err;
      }
    },

    async tasksGet(principal: Principal, params: unknown) {
      const task = await taskOf(principal, params);
      return mcpTask(taskView(task), task.updatedAt);
    },

    /** tasks/result: waits without a time limit of its own, asking while the task awaits input. */
    async tasksResult(call: McpCall, params: unknown) {
      const task = await taskOf(call.principal, params);
      const ref = { workspaceUuid: call.principal.workspaceUuid, agentUuid: task.agentUuid, taskUuid: task.uuid };
      const channel = call.stream();
      const settled = await waitForTask(waitDeps, ref, channel, {
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
}

export type McpService = ReturnType<typeof createMcpService>;
