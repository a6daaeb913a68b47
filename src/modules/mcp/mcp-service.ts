import type { Db, Executor } from '../../db/connect.js';
import { AppError } from '../../http/errors.js';
import { forbiddenMessage } from '../../http/permissions.js';
import { newId } from '../../lib/ids.js';
import type { Notifier } from '../../lib/notifier.js';
import { type Principal, type Role, roleAtLeast } from '../../lib/principal.js';
import type { Clock } from '../../lib/time.js';
import { agentsRepo } from '../agents/agents-repo.js';
import type { TaskSubmitter } from '../tasks/submit/task-submitter.js';
import type { TaskRecord } from '../tasks/tasks-record.js';
import type { TaskRef, TasksService } from '../tasks/tasks-service.js';
import { taskView } from '../tasks/tasks-view.js';
import { mcpToolCallSpan, type ServiceSpan } from '../telemetry/service-spans-fns.js';
import { deriveSpanId, deriveTraceId, parseTraceparent } from '../telemetry/trace-context-fns.js';
import { agentToolArgs, idempotencyKeyOf, platformToolArgs, ToolArgumentError } from './mcp-args-fns.js';
import { type CallParams, callParams, cursorOffset, invalidParams, type McpCall, McpRpcError } from './mcp-call.js';
import {
  argumentsHash,
  inputRequests,
  principalIdOf,
  REQUEST_STATE_TTL_MS,
  responseFor,
  signRequestState,
  verifyRequestState,
} from './mcp-input-fns.js';
import { modernTasks } from './mcp-modern-fns.js';
import type { McpRepo } from './mcp-repo.js';
import { createTaskRefs } from './mcp-task-refs.js';
import { createLegacyTasks } from './mcp-tasks-2025.js';
import { canAsk, createModernTasks, modernTask } from './mcp-tasks-2026.js';
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
import { waitForTask } from './mcp-wait.js';

/** The MCP methods over the tasks service: every change is the tasks service's (submit, message, cancel). */
export function createMcpService(deps: {
  db: Db;
  repo: McpRepo;
  tasks: Pick<TasksService, 'message' | 'cancel' | 'requireTask'>;
  submitter: Pick<TaskSubmitter, 'submit'>;
  notifier: Pick<Notifier, 'subscribe' | 'fallbackPollMs'>;
  maxWaitSeconds: number;
  /** Signs and checks the requestState of a question (25.5). */
  stateKey: Buffer;
  clock: Clock;
  traceSpans?: ((workspaceUuid: string, spans: ServiceSpan[]) => void) | undefined;
}) {
  const { db, repo, tasks } = deps;
  const waitDeps = { db, repo, tasks, notifier: deps.notifier };
  const { refOf } = createTaskRefs({ db, tasks });

  async function toolList(workspaceUuid: string) {
    const { agents } = await agentsRepo.listOwned(db.kysely, workspaceUuid, 0, 100_000);
    return agentTools(agents);
  }

  function requireRole(principal: Principal, role: Role) {
    if (!roleAtLeast(principal.role, role)) throw new AppError('FORBIDDEN', forbiddenMessage(role));
  }

  /**
   * Waits (on the stream) and answers the CallToolResult of the task then; under 2026-07-28, a
   * question the client can answer comes back as an InputRequiredResult bound to `bind`.
   */
  async function waitAndAnswer(call: McpCall, ref: TaskRef, waitSeconds: number, params: CallParams) {
    if (waitSeconds <= 0) return stateResult(taskState(taskView(await tasks.requireTask(ref))), { waiting: false });
    const channel = call.stream();
    const task = await waitForTask(waitDeps, ref, channel, {
      maxMs: waitSeconds * 1000,
      progressToken: params._meta?.progressToken,
      ask: call.elicitation,
      taskMode: false,
    });
    if (task.status === 'awaiting_input' && canAsk(call)) return inputRequired(call, task, params);
    return stateResult(taskState(taskView(task)), { waiting: true, waited: waitSeconds });
  }

  /** The task's question as an InputRequiredResult, its requestState bound to this call. */
  function inputRequired(call: McpCall, task: TaskRecord, params: CallParams) {
    const requestState = signRequestState(deps.stateKey, {
      workspaceUuid: call.principal.workspaceUuid,
      principalId: principalIdOf(call.principal),
      tool: params.name,
      argumentsHash: argumentsHash(params.arguments),
      taskUuid: task.uuid,
      position: task.messages.length,
      expiresAtMs: deps.clock.now() + REQUEST_STATE_TTL_MS,
    });
    return { resultType: 'input_required', inputRequests: inputRequests(task), requestState };
  }

  /**
   * The retry of a call that was answered input_required: nothing is submitted or sent again; the
   * answer to the current question (if any) goes to the task, then the retry waits on it.
   * @throws McpRpcError -32602 when the state fails verification or names another call.
   */
  async function retry(call: McpCall, params: CallParams) {
    const { principal } = call;
    const state = verifyRequestState(deps.stateKey, params.requestState, deps.clock.now());
    if (
      !state ||
      state.workspaceUuid !== principal.workspaceUuid ||
      state.principalId !== principalIdOf(principal) ||
      state.tool !== params.name ||
      state.argumentsHash !== argumentsHash(params.arguments)
    ) {
      throw invalidParams('Invalid requestState');
    }
    const ref = await refOf(principal.workspaceUuid, state.taskUuid);
    const task = await tasks.requireTask(ref);
    if (task.status === 'awaiting_input' && task.messages.length === state.position) {
      const response = responseFor(params.inputResponses, state.position);
      if (response === 'refused' || !canAsk(call)) return stateResult(taskState(taskView(task)), { waiting: true });
      if (typeof response !== 'object') return inputRequired(call, task, params);
      await tasks.message(ref, response.answer);
    }
    return waitAndAnswer(call, ref, deps.maxWaitSeconds, params);
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
        : call.modern && modernTasks(call.modern)
          ? await tasks.requireTask(ref).then((task) => ({ ...modernTask(call, task), resultType: 'task' }))
          : await waitAndAnswer(call, ref, deps.maxWaitSeconds, params);
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
    return waitAndAnswer(call, ref, args.waitSeconds, params);
  }

  return {
    ...createLegacyTasks(waitDeps),
    modernTasks: createModernTasks(waitDeps),

    /** What `notifications/tools/list_changed` watches: each active agent's tool name, uuid, name and description. */
    async toolsFingerprint(principal: Principal) {
      const list = await toolList(principal.workspaceUuid);
      return JSON.stringify(list.map((t) => [t.name, t.agent.uuid, t.agent.name, t.agent.description]));
    },

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
        if (call.modern && params.requestState !== undefined) return await retry(call, params);
        if (platform) return await callPlatform(call, params.name as PlatformTool, params);
        requireRole(call.principal, 'member');
        return await callAgent(call, { name: params.name, agentUuid: agentUuid as string }, params);
      } catch (err) {
        if (err instanceof ToolArgumentError) return toolError('INVALID_REQUEST', err.message);
        if (err instanceof AppError && err.status !== 429) return toolError(err.code, err.message);
        throw err;
      }
    },
  };
}

export type McpService = ReturnType<typeof createMcpService>;
