import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AcquireConnection } from '../../http/connection-limits.js';
import type { AgentRow } from '../agents/agents-repo.js';
import type { TaskRecord } from '../tasks/tasks-record.js';
import { invalidParams, RPC_ERRORS, RpcError } from './a2a-errors.js';
import { parsePushConfig, parsePushConfigList, parsePushConfigRef } from './a2a-push-fns.js';
import type { A2aPushService } from './a2a-push-service.js';
import { parseListParams, parseSendParams, parseTaskIdParams, type SendParams } from './a2a-rpc-fns.js';
import { type A2aServerService, rpcErrorOf } from './a2a-server-service.js';
import { type StreamDeps, streamTask } from './a2a-stream.js';
import type { StreamResponse } from './a2a-task-fns.js';

/** What one request of either binding hands the operation layer. */
export interface OperationCall {
  request: FastifyRequest;
  reply: FastifyReply;
  agent: AgentRow;
  workspaceUuid: string;
  /** The operation, by its JSON-RPC method name. */
  method: string;
  /** Its parameters as A2A's ProtoJSON request object (JSON-RPC `params`; HTTP+JSON path, query and body). */
  params: Record<string, unknown>;
  /** One stream event as the binding writes it (`data: …\n\n`). */
  frame: (response: StreamResponse) => string;
}

/** A call answered with an event stream: the binding sends nothing more. */
export const STREAMED = Symbol('streamed');

const FINAL_STATES = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED']);

/**
 * A2A's operations, once for both bindings: each reads its parameters from the same ProtoJSON
 * object, calls the A2A service and answers its result (or STREAMED), or throws an RpcError that
 * each binding renders in its own shape. Anything else thrown (an AppError such as 429) passes on.
 */
export function a2aOperations(deps: {
  service: A2aServerService;
  push: A2aPushService;
  stream: StreamDeps;
  acquire: AcquireConnection;
  /** Aborts when the app closes: blocking sends answer at once with the task as it is. */
  closing: AbortSignal;
}) {
  const { service } = deps;

  async function run(call: OperationCall): Promise<unknown> {
    try {
      return await dispatch(call);
    } catch (err) {
      throw rpcErrorOf(err);
    }
  }

  async function dispatch(call: OperationCall): Promise<unknown> {
    const { agent, workspaceUuid, params } = call;
    const ref = (taskUuid: string) => ({ workspaceUuid, agentUuid: agent.uuid, taskUuid });
    switch (call.method) {
      case 'SendMessage':
        return sendMessage(call, parseSendParams(params));
      case 'SendStreamingMessage': {
        const p = parseSendParams(params);
        // Counted against the workspace's streams from before anything is written.
        const release = deps.acquire(workspaceUuid, 'stream');
        let sent: TaskRecord;
        try {
          sent = await service.send(agent, workspaceUuid, p);
        } catch (err) {
          release();
          throw err;
        }
        await streamTask(deps.stream, call, ref(sent.uuid), release, sent);
        return STREAMED;
      }
      case 'SubscribeToTask': {
        const { id } = parseTaskIdParams(params);
        const { state } = (await service.get(ref(id), 0)).status;
        if (FINAL_STATES.has(state)) {
          throw new RpcError(RPC_ERRORS.unsupportedOperation, `The task is finished (${state}): nothing to follow`);
        }
        await streamTask(deps.stream, call, ref(id), deps.acquire(workspaceUuid, 'stream'));
        return STREAMED;
      }
      case 'GetTask': {
        const { id, historyLength } = parseTaskIdParams(params);
        return service.get(ref(id), historyLength);
      }
      case 'CancelTask':
        return service.cancel(ref(parseTaskIdParams(params).id));
      case 'ListTasks':
        return service.list(agent, workspaceUuid, parseListParams(params));
      case 'CreateTaskPushNotificationConfig': {
        const input = parsePushConfig(params);
        if (input.taskId === '') throw invalidParams('taskId', 'taskId is required');
        return deps.push.create(ref(input.taskId), input);
      }
      case 'GetTaskPushNotificationConfig': {
        const { taskId, id } = parsePushConfigRef(params);
        return deps.push.get(ref(taskId), id);
      }
      case 'ListTaskPushNotificationConfig':
      case 'ListTaskPushNotificationConfigs':
        return deps.push.list(ref(parsePushConfigList(params).taskId));
      case 'DeleteTaskPushNotificationConfig': {
        const { taskId, id } = parsePushConfigRef(params);
        return deps.push.remove(ref(taskId), id);
      }
      case 'GetExtendedAgentCard':
        throw new RpcError(RPC_ERRORS.unsupportedOperation, 'This agent has no extended agent card');
      default:
        throw new RpcError(RPC_ERRORS.methodNotFound, `Method not found: ${call.method.slice(0, 100)}`);
    }
  }

  /** SendMessage: `{task}` at once with returnImmediately, else once the task settles (or the wait ends). */
  async function sendMessage(call: OperationCall, p: SendParams) {
    const { agent, workspaceUuid } = call;
    if (p.returnImmediately) {
      return { task: await service.a2aTask(await service.send(agent, workspaceUuid, p), p.historyLength) };
    }
    // A blocking send counts as a wait for the workspace's cap, from before anything is written.
    const release = deps.acquire(workspaceUuid, 'wait');
    try {
      const stop = AbortSignal.any([hangUp(call.reply), deps.closing]);
      const sent = await service.send(agent, workspaceUuid, p);
      const settled = await service.settle({ workspaceUuid, agentUuid: agent.uuid, taskUuid: sent.uuid }, stop);
      return { task: await service.a2aTask(settled, p.historyLength) };
    } finally {
      release();
    }
  }

  return { run };
}

export type A2aOperations = ReturnType<typeof a2aOperations>;

/** Aborts when the client closes the connection before the answer is sent. */
function hangUp(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableEnded) controller.abort();
  });
  return controller.signal;
}
