import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AcquireConnection } from '../../http/connection-limits.js';
import { errorResponses } from '../../http/error-schemas.js';
import { AppError } from '../../http/errors.js';
import { principalOf } from '../../http/guard.js';
import { A2A_METHOD_ROLES, forbiddenMessage } from '../../http/permissions.js';
import { jsonTooDeep } from '../../lib/json-depth.js';
import { roleAtLeast } from '../../lib/principal.js';
import type { AgentRow } from '../agents/agents-repo.js';
import type { TaskRecord } from '../tasks/tasks-record.js';
import {
  checkVersion,
  errorResponse,
  PUSH_CONFIG_METHODS,
  parseListParams,
  parseRequest,
  parseSendParams,
  parseTaskIdParams,
  RPC_ERRORS,
  RpcError,
  type RpcId,
  type RpcRequest,
  resultResponse,
  type SendParams,
  TOO_DEEP,
} from './a2a-rpc-fns.js';
import {
  A2aParams,
  AgentCardSchema,
  CARD_DESCRIPTION,
  RPC_DESCRIPTION,
  RpcResponseSchema,
} from './a2a-server-schemas.js';
import { type A2aServerService, rpcErrorOf } from './a2a-server-service.js';
import { type StreamDeps, streamTask } from './a2a-stream.js';

/** GET /a2a/:agentId/.well-known/agent-card.json and POST /a2a/:agentId (JSON-RPC). */
export function a2aServerRoutes(deps: {
  service: A2aServerService;
  stream: Omit<StreamDeps, 'open' | 'service'>;
  acquire: AcquireConnection;
}) {
  const { service } = deps;
  const open = new Set<() => void>();
  const streamDeps: StreamDeps = { ...deps.stream, service, open };
  // Blocking sends answer at once when the app closes, with the task as it is.
  const closing = new AbortController();

  return async function routes(base: FastifyInstance) {
    const app = base.withTypeProvider<TypeBoxTypeProvider>();
    app.addHook('preClose', async () => {
      closing.abort();
      for (const end of open) end();
    });
    // Encapsulated: the endpoint reads its body raw, so that every malformed request gets a
    // JSON-RPC error rather than the API's 400/415.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, body));

    app.get(
      '/a2a/:agentId/.well-known/agent-card.json',
      {
        config: { auth: 'user', feature: 'agents' },
        schema: {
          tags: ['a2a'],
          summary: 'Agent card (A2A)',
          description: CARD_DESCRIPTION,
          params: A2aParams,
          response: { 200: AgentCardSchema, ...errorResponses([400, 401, 403, 404]) },
        },
      },
      async (request) => service.card(await service.agent(principalOf(request).workspaceUuid, request.params.agentId)),
    );

    app.post(
      '/a2a/:agentId',
      {
        config: { auth: 'user', feature: 'agents' },
        schema: {
          tags: ['a2a'],
          summary: 'A2A JSON-RPC endpoint',
          description: RPC_DESCRIPTION,
          params: A2aParams,
          response: {
            200: {
              description: 'A JSON-RPC response, or an event stream for SendStreamingMessage and SubscribeToTask.',
              content: {
                'application/json': { schema: RpcResponseSchema },
                'text/event-stream': { schema: { type: 'string' } },
              },
            },
            ...errorResponses([400, 401, 403, 404, 413, 429]),
          },
        },
      },
      async (request, reply) => {
        const principal = principalOf(request);
        const workspaceUuid = principal.workspaceUuid;
        const body = typeof request.body === 'string' ? request.body : '';
        const parsed = jsonTooDeep(body)
          ? { id: null, error: TOO_DEEP }
          : parseRequest(request.headers['content-type'], body);
        // The role follows the method, and is decided before anything is looked up (an HTTP 403).
        const needed = 'error' in parsed ? undefined : A2A_METHOD_ROLES[parsed.method];
        if (needed && !roleAtLeast(principal.role, needed)) throw new AppError('FORBIDDEN', forbiddenMessage(needed));
        const agent = await service.agent(workspaceUuid, request.params.agentId);
        if ('error' in parsed) return answer(reply, errorResponse(parsed.id, parsed.error));
        const version = checkVersion(request.headers['a2a-version']);
        if (version) return answer(reply, errorResponse(parsed.id, version));
        try {
          const result = await dispatch(request, reply, agent, workspaceUuid, parsed);
          if (result !== STREAMED) return answer(reply, resultResponse(parsed.id, result));
        } catch (err) {
          const mapped = rpcErrorOf(err);
          if (mapped instanceof RpcError) return answer(reply, errorResponse(parsed.id, mapped));
          throw mapped;
        }
      },
    );
  };

  /** Runs one method. @returns its result, or STREAMED when it answered with a stream. */
  async function dispatch(
    request: FastifyRequest,
    reply: FastifyReply,
    agent: AgentRow,
    workspaceUuid: string,
    rpc: RpcRequest,
  ): Promise<unknown> {
    const ref = (taskUuid: string) => ({ workspaceUuid, agentUuid: agent.uuid, taskUuid });
    switch (rpc.method) {
      case 'SendMessage':
        return sendMessage(reply, agent, workspaceUuid, parseSendParams(rpc.params));
      case 'SendStreamingMessage': {
        const p = parseSendParams(rpc.params);
        // Counted against the workspace's streams from before anything is written.
        const release = deps.acquire(workspaceUuid, 'stream');
        let sent: TaskRecord;
        try {
          sent = await service.send(agent, workspaceUuid, p);
        } catch (err) {
          release();
          throw err;
        }
        await streamTask(streamDeps, request, reply, rpc.id, ref(sent.uuid), release, sent);
        return STREAMED;
      }
      case 'SubscribeToTask': {
        const { id } = parseTaskIdParams(rpc.params);
        const { state } = (await service.get(ref(id), 0)).status;
        if (FINAL_STATES.has(state)) {
          throw new RpcError(RPC_ERRORS.unsupportedOperation, `The task is finished (${state}): nothing to follow`);
        }
        await streamTask(streamDeps, request, reply, rpc.id, ref(id), deps.acquire(workspaceUuid, 'stream'));
        return STREAMED;
      }
      case 'GetTask': {
        const { id, historyLength } = parseTaskIdParams(rpc.params);
        return service.get(ref(id), historyLength);
      }
      case 'CancelTask':
        return service.cancel(ref(parseTaskIdParams(rpc.params).id));
      case 'ListTasks':
        return service.list(agent, workspaceUuid, parseListParams(rpc.params));
      case 'GetExtendedAgentCard':
        throw new RpcError(RPC_ERRORS.unsupportedOperation, 'This agent has no extended agent card');
      default:
        if (PUSH_CONFIG_METHODS.has(rpc.method)) {
          throw new RpcError(RPC_ERRORS.pushNotSupported, 'Push notifications are not supported');
        }
        throw new RpcError(RPC_ERRORS.methodNotFound, `Method not found: ${rpc.method.slice(0, 100)}`);
    }
  }

  /** SendMessage: `{task}` at once with returnImmediately, else once the task settles (or the wait ends). */
  async function sendMessage(reply: FastifyReply, agent: AgentRow, workspaceUuid: string, p: SendParams) {
    if (p.returnImmediately) {
      return { task: await service.a2aTask(await service.send(agent, workspaceUuid, p), p.historyLength) };
    }
    // A blocking send counts as a wait for the workspace's cap, from before anything is written.
    const release = deps.acquire(workspaceUuid, 'wait');
    try {
      const stop = AbortSignal.any([hangUp(reply), closing.signal]);
      const sent = await service.send(agent, workspaceUuid, p);
      const settled = await service.settle({ workspaceUuid, agentUuid: agent.uuid, taskUuid: sent.uuid }, stop);
      return { task: await service.a2aTask(settled, p.historyLength) };
    } finally {
      release();
    }
  }
}

const STREAMED = Symbol('streamed');
const FINAL_STATES = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED']);

/** Sends a JSON-RPC response as it is (no response schema may drop its fields). */
function answer(reply: FastifyReply, body: { jsonrpc: '2.0'; id: RpcId }) {
  return reply.code(200).header('content-type', 'application/json; charset=utf-8').send(JSON.stringify(body));
}

/** Aborts when the client closes the connection before the answer is sent. */
function hangUp(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableEnded) controller.abort();
  });
  return controller.signal;
}
